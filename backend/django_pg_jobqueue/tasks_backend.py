"""A Django Tasks backend (`django.tasks`) that stores each task as a job in this queue.

    TASKS = {
        "default": {
            "BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
            "QUEUES": ["default", "emails"],   # [] accepts any queue name
        }
    }

    from django.tasks import task              # Django 5.2: from django_tasks import task
    from django_pg_jobqueue import task_options

    @task_options(max_attempts=5, timeout_seconds=30)   # ignored by other backends
    @task(priority=10, queue_name="emails")
    def send_welcome(user_id): ...

    result = send_welcome.enqueue(user.id)      # inside atomic(): commits with the caller
    send_welcome.get_result(result.id).status   # READY, RUNNING, SUCCESSFUL, FAILED

Each enqueue is one job of the internal type `django_task`; its payload holds the task's
module path, args, kwargs and the backend alias. `run_job_workers` runs it through the
`django_task` handler registered below: it imports the task, calls it (coroutines natively,
cancelled when the job must stop), and stores the JSON return value as the job's result. The
result id is the job id, as a string.

Mapping to Django's model:
- status: queued -> READY, running -> RUNNING, succeeded -> SUCCESSFUL, failed and
  cancelled -> FAILED (a cancel appears in `errors` as `jobs.exceptions.JobCancelled`).
- priority -> priority (-100..100, higher first), queue_name -> queue (a queue name: letters,
  digits and _ . : -), run_after -> the job's `available_at`.
- `get_result(id)` returns the result as `enqueue` did, later fields filled in: its `task` is
  the task as enqueued (`run_after` kept, options left unset stay None), so
  `get_result(r.id) == r` until the task starts.
- Retries, timeouts, uniqueness, concurrency keys and fairness keys, which Django does not define:
  `@task_options(max_attempts=5, timeout_seconds=30, concurrency_key=...)` for every enqueue of
  a task (a registry by module path, so the `@task` stays importable and runnable under any
  backend), and per enqueue `.using(max_attempts=..., timeout_seconds=..., idempotency_key=...,
  concurrency_key=..., fairness_key=...)` of `task_class` (`QueueTask`). Django 6.1 and
  the backport also pass `@task(max_attempts=5, timeout_seconds=30)` on to `QueueTask`; Django 6.0's
  `@task` refuses them, and so does every other backend's task class.
- errors: one `TaskError` per failed attempt, with the exception's class path and traceback.
  The worker resolves a job's task path without importing arbitrary modules (`tasks.options.load_task`):
  a Task already made in the process (its module imported at start-up), else a path inside
  an installed app's package, whose module it imports; any other path (`os.system`, a module
  outside INSTALLED_APPS) fails the job for good, nothing imported. A task of an installed
  app that cannot be imported in the worker fails that attempt with its ImportError (or
  ModuleNotFoundError) and is retried like any error; `get_result` still reads it, its
  `task` then a stand-in whose function raises that ImportError.
  worker_ids: one per attempt (so `TaskResult.attempts` is the job's attempt count).
- Signals: `task_enqueued` once the enqueueing transaction commits; `task_started` and
  `task_finished` in the worker around every attempt. `task_finished` carries the status the
  task has after that attempt: SUCCESSFUL, FAILED, or READY when a retry is scheduled.

Where it lives: `tasks/options.py` (`@task_options`, `QueueTask`, which tasks may run),
`tasks/results.py` (a TaskResult from a job), `tasks/backend.py` (`QueueBackend`) and
`tasks/runner.py` (the `django_task` handler). This module is the path users write in TASKS
and re-exports them; the package's own modules import from `tasks/` directly.
"""
from .tasks.backend import QueueBackend
from .tasks.options import (
    JOB_TYPE,
    QueueTask,
    TaskOptions,
    options_for,
    retry_policy_for,
    task_job_type,
    task_options,
)
from .tasks.results import STATUS_MAP
from .tasks.runner import QueueTaskContext, TaskExited, run_django_task

__all__ = [
    "JOB_TYPE", "STATUS_MAP", "QueueBackend", "QueueTask", "QueueTaskContext", "TaskExited",
    "TaskOptions", "options_for", "retry_policy_for", "run_django_task", "task_job_type",
    "task_options",
]
