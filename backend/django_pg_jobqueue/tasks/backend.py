"""`QueueBackend`: the Django Tasks backend (`django.tasks`) that stores each task as a job.

Users name it as `django_pg_jobqueue.tasks_backend.QueueBackend` in TASKS (that module
re-exports it); see that module's docstring for the mapping to Django's model.
"""
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import connections, transaction
from django.utils import timezone

from .. import services
from ..arguments import check_concurrency_key, check_fairness_key, check_json_value
from ..db import queue_connection
from ..exceptions import (
    InvalidJobArgument,
)
from ..states import (
    MAX_QUEUE_NAME_LENGTH,
    QUEUE_NAME_RE,
)
from ..tasks_compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    task_enqueued,
)
from .options import QueueTask, options_for, remember, task_job_type
from .results import load_result


class QueueBackend(BaseTaskBackend):
    task_class = QueueTask

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    # -- validation ---------------------------------------------------------------------------
    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        max_attempts = getattr(task, "max_attempts", None)
        if max_attempts is not None and (not isinstance(max_attempts, int) or max_attempts < 1):
            raise InvalidTask("max_attempts must be a whole number of at least 1.")
        timeout = getattr(task, "timeout_seconds", None)
        if timeout is not None and (not isinstance(timeout, int) or timeout < 1):
            raise InvalidTask("timeout_seconds must be a whole number of seconds, at least 1.")
        key = getattr(task, "idempotency_key", None)
        if key is not None and (not isinstance(key, str) or not 1 <= len(key) <= 255):
            raise InvalidTask("idempotency_key must be a string of 1 to 255 characters.")
        key = getattr(task, "concurrency_key", None)
        limit = getattr(task, "concurrency_key_limit", None)
        if key is not None or limit is not None:
            try:  # enqueue()'s rules; a limit alone may go with @task_options' key
                check_concurrency_key("-" if key is None else key, limit)
            except InvalidJobArgument as exc:
                raise InvalidTask(str(exc)) from None
        try:  # enqueue()'s rules
            check_fairness_key(getattr(task, "fairness_key", None))
        except InvalidJobArgument as exc:
            raise InvalidTask(str(exc)) from None
        if not _is_queue_name(task.queue_name):
            raise InvalidTask(f"queue_name must have 1 to {MAX_QUEUE_NAME_LENGTH} characters: "
                              "ASCII letters, digits and _ . : -")
        remember(task)

    def check(self, **kwargs: Any) -> list[Any]:
        errors = []
        raw_queues = settings.TASKS[self.alias].get("QUEUES", None)
        if raw_queues is not None and (
            isinstance(raw_queues, str)
            or not all(_is_queue_name(q) for q in raw_queues)
        ):
            errors.append(checks.Error(
                f"TASKS[{self.alias!r}]['QUEUES'] must be a list of queue names of 1 to "
                f"{MAX_QUEUE_NAME_LENGTH} characters (ASCII letters, digits and _ . : -).",
                hint='For example "QUEUES": ["default", "emails"]; [] accepts any queue.',
                id="django_pg_jobqueue.E101",
            ))
        alias = getattr(settings, "JOB_DATABASE", "default")
        vendor = connections[alias].vendor if alias in settings.DATABASES else None
        if vendor is not None and vendor != "postgresql":
            errors.append(checks.Error(
                f"{type(self).__name__} stores tasks in PostgreSQL; the queue's database "
                f"(DATABASES[{alias!r}], JOB_DATABASE) is {vendor}.",
                hint=f"Point DATABASES[{alias!r}] at PostgreSQL "
                     "(ENGINE 'django.db.backends.postgresql').",
                id="django_pg_jobqueue.E102",
            ))
        if not apps.is_installed("django_pg_jobqueue"):
            errors.append(checks.Error(
                f"{type(self).__name__} needs the 'django_pg_jobqueue' app in INSTALLED_APPS.",
                hint="Add 'django_pg_jobqueue' to INSTALLED_APPS and run migrate; then run "
                     "workers with `manage.py run_job_workers`.",
                id="django_pg_jobqueue.E103",
            ))
        if self.options:
            errors.append(checks.Warning(
                f"TASKS[{self.alias!r}]['OPTIONS'] is ignored by {type(self).__name__}: "
                f"{sorted(self.options)}.",
                hint="Set retries and timeouts on the task: @task_options(max_attempts=..., "
                     "timeout_seconds=...).",
                id="django_pg_jobqueue.W101",
            ))
        return errors

    # -- producing ----------------------------------------------------------------------------
    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Store the task as a job. Inside `transaction.atomic()` it commits or rolls back
        with the caller's transaction, and `task_enqueued` is sent only once it commits."""
        self.validate_task(task)
        args, kwargs = normalize_json(list(args)), normalize_json(dict(kwargs))
        check_json_value(args, "args")  # NUL, surrogates, NaN ...: refused naming args/kwargs
        check_json_value(kwargs, "kwargs")
        run_at = task.run_after
        if run_at is not None and timezone.is_naive(run_at):  # USE_TZ = False: local time
            run_at = timezone.make_aware(run_at)
        # The task's own options as enqueued, for get_result to return the same task (the
        # job's columns hold them with the defaults filled in, and available_at moves on
        # retries).
        enqueued = {"run_after": task.run_after.isoformat() if task.run_after else None}
        if isinstance(task, QueueTask):
            enqueued.update(max_attempts=task.max_attempts, timeout_seconds=task.timeout_seconds)
            if task.concurrency_key is not None or task.concurrency_key_limit is not None:
                enqueued.update(concurrency_key=task.concurrency_key,
                                concurrency_key_limit=task.concurrency_key_limit)
            if task.fairness_key is not None:
                enqueued["fairness_key"] = task.fairness_key
        options = options_for(task, args, kwargs)
        payload = {"task": task.module_path, "args": args, "kwargs": kwargs,
                   "backend": self.alias, "enqueued": enqueued}
        job, created = services.enqueue_or_get(
            task_job_type(task.module_path), payload, priority=int(task.priority),
            queue=task.queue_name, run_at=run_at, max_attempts=options.max_attempts,
            timeout_seconds=options.timeout_seconds,
            idempotency_key=getattr(task, "idempotency_key", None),
            concurrency_key=options.concurrency_key,
            concurrency_key_limit=options.concurrency_key_limit,
            fairness_key=options.fairness_key,
        )
        if not created:  # an idempotent replay: the existing task's result, as it is now
            return self.get_result(str(job.id))
        result = TaskResult(
            task=task, id=str(job.id), status=TaskResultStatus.READY,
            enqueued_at=job.created_at, started_at=None, finished_at=None,
            last_attempted_at=None, args=args, kwargs=kwargs, backend=self.alias, errors=[],
            worker_ids=[],
        )
        transaction.on_commit(
            lambda: task_enqueued.send(type(self), task_result=result), robust=True,
            using=queue_connection().alias)
        return result

    # -- results ------------------------------------------------------------------------------
    def get_result(self, result_id: str) -> TaskResult:
        return load_result(result_id)


def _is_queue_name(name: object) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= MAX_QUEUE_NAME_LENGTH
            and QUEUE_NAME_RE.fullmatch(name) is not None)
