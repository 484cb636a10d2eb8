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
- Retries, timeouts, uniqueness and concurrency keys, which Django does not define:
  `@task_options(max_attempts=5, timeout_seconds=30, concurrency_key=...)` for every enqueue of
  a task (a registry by module path, so the `@task` stays importable and runnable under any
  backend), and per enqueue `.using(max_attempts=..., timeout_seconds=..., idempotency_key=...,
  concurrency_key=...)` of `task_class` (`QueueTask`). Django 6.1 and
  the backport also pass `@task(max_attempts=5, timeout_seconds=30)` on to `QueueTask`; Django 6.0's
  `@task` refuses them, and so does every other backend's task class.
- errors: one `TaskError` per failed attempt, with the exception's class path and traceback.
  The worker resolves a job's task path without importing arbitrary modules (`_load_task`):
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
"""
import importlib
import traceback as tb_module
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from inspect import iscoroutinefunction
from typing import Any, TypeVar

from django.conf import settings
from django.core import checks
from django.db import connections, transaction
from django.utils import timezone

from . import conf, storable
from .context import JobContext
from .db import queue_connection
from .exceptions import (
    InvalidJobArgument,
    JobArgumentTypeError,
    JobCancelled,
    LeaseLost,
    PermanentError,
    Snooze,
    UnstorableResult,
)
from .registry import handler, is_task_job, registry
from .retries import InvalidRetryPolicy, RetryPolicy, as_policy
from .states import (
    MAX_ATTEMPTS_LIMIT,
    MAX_QUEUE_NAME_LENGTH,
    MAX_TIMEOUT_SECONDS,
    MAX_TYPE_LENGTH,
    QUEUE_NAME_RE,
)
from .tasks_compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from .worker import coroutines

JOB_TYPE = conf.DJANGO_TASK_TYPE
_T = TypeVar("_T")  # what @task_options decorates: a Task or a function

STATUS_MAP = {
    "queued": TaskResultStatus.READY,
    "running": TaskResultStatus.RUNNING,
    "succeeded": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
    "cancelled": TaskResultStatus.FAILED,
}

# The events a result is rebuilt from.
_RESULT_EVENT_KINDS = ("claimed", "log", "retry_scheduled", "failed", "cancelled",
                       "lease_expired")
# Failures the worker records without a Python exception of the task's own.
_SYNTHETIC_ERRORS = {
    "timeout": "builtins.TimeoutError",
    "cancelled": "django_pg_jobqueue.exceptions.JobCancelled",
    "lease_expired": "django_pg_jobqueue.exceptions.LeaseLost",
    "lease_lost": "django_pg_jobqueue.exceptions.LeaseLost",
    "shutdown": "django_pg_jobqueue.exceptions.JobCancelled",
    "unknown_type": "django_pg_jobqueue.exceptions.UnknownJobType",
}


class TaskExited(Exception):
    """A task raised SystemExit or KeyboardInterrupt: its attempt failed (the exception
    itself is in the result's `errors`)."""


@dataclass(frozen=True)
class TaskOptions:
    """The queue's own options for one task, as `@task_options(...)` gave them."""

    max_attempts: int | None = None
    timeout_seconds: int | None = None
    retry_policy: RetryPolicy | None = None  # its failed attempts' (retries.py)
    concurrency: int | None = None  # most of its jobs running at once, across all workers
    # Each job's concurrency key: a str for all of them, or a function of the task's
    # arguments (called at enqueue) returning one or None; with its limit (None: 1).
    concurrency_key: str | Callable[..., str | None] | None = None
    concurrency_key_limit: int | None = None


# module path of the task's function -> its options. Keyed by path, not by Task object: the
# decorator goes above or below @task, and `.using()` makes new Task objects of the same path.
_TASK_OPTIONS: dict[str, TaskOptions] = {}


def _check_option(argument: str, value: object, high: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise JobArgumentTypeError(argument, f"must be a whole number (int), not "
                                             f"{type(value).__name__}")
    if not 1 <= value <= high:
        raise InvalidJobArgument(argument, f"must be between 1 and {high}, not {value}")
    return value


def task_options(*, max_attempts: int | None = None, timeout_seconds: int | None = None,
                 retry_policy: RetryPolicy | dict | None = None,
                 concurrency: int | None = None,
                 concurrency_key: str | Callable[..., str | None] | None = None,
                 concurrency_key_limit: int | None = None) -> Callable[[_T], _T]:
    """The queue's options for a Django task, in a way every Tasks backend accepts.

        @task_options(max_attempts=5, timeout_seconds=30)
        @task(queue_name="emails")
        def send_welcome(user_id): ...

    Above or below `@task`. The task stays the backend's own Task (Django's under
    `ImmediateBackend` or `DummyBackend`, which ignore these); `QueueBackend` applies them to
    every enqueue of the task that does not set its own through `.using(...)` (or, on Django
    6.1 and the backport, `@task(max_attempts=..., timeout_seconds=...)`). `max_attempts`: 1 to
    `states.MAX_ATTEMPTS_LIMIT`; `timeout_seconds`: whole seconds, 1 to `states.MAX_TIMEOUT_SECONDS`.
    `retry_policy`: a `RetryPolicy` (or its JSON shape) for the task's failed attempts, as
    `@handler(retry_policy=...)` gives a handler's (docs/how-to/retries.md); the worker
    applies it when the task fails, a function policy included. `concurrency`: at most this
    many of the task's jobs run at once across all workers, as `@handler(concurrency=...)`
    (it holds in each worker process that has imported the task's module).
    `concurrency_key` and `concurrency_key_limit`: the job's concurrency key, as
    `enqueue(concurrency_key=..., concurrency_key_limit=...)` gives one (at most the limit, default
    1, of the jobs with one key run at once, across every worker; docs/how-to/concurrency-keys.md):
    a str for every job of the task, or a function called at enqueue with the task's arguments
    that returns the key (or None: no key), e.g.
    `concurrency_key=lambda customer_id, **kwargs: f"customer:{customer_id}"`.
    A bad value raises `InvalidJobArgument` naming it, at import time (a key a function returns,
    at enqueue).
    """
    try:
        policy = as_policy(retry_policy)
    except InvalidRetryPolicy as exc:
        raise InvalidJobArgument("retry_policy", str(exc).removeprefix("retry_policy ")) from None
    options = TaskOptions(max_attempts=_check_option("max_attempts", max_attempts,
                                                     MAX_ATTEMPTS_LIMIT),
                          timeout_seconds=_check_option("timeout_seconds", timeout_seconds,
                                                        MAX_TIMEOUT_SECONDS),
                          retry_policy=policy,
                          concurrency=_check_option("concurrency", concurrency, 10_000),
                          **_declared_key(concurrency_key, concurrency_key_limit))

    def decorate(obj: _T) -> _T:
        func: Any = obj.func if isinstance(obj, Task) else obj
        if not callable(func):
            raise TypeError("@task_options(...) decorates a function or a Task")
        path = f"{func.__module__}.{func.__qualname__}"
        _TASK_OPTIONS[path] = options
        registry.set_type_limit(task_job_type(path), options.concurrency)
        return obj

    return decorate


def _declared_key(key: object, limit: object) -> dict[str, Any]:
    """@task_options' concurrency key and limit, checked as enqueue() checks them (a function
    key's limit now, the key it returns at each enqueue)."""
    if key is None and limit is None:
        return {}
    from .services.enqueuing import check_concurrency_key

    if callable(key):
        _, limit = check_concurrency_key("-", limit)  # the limit's rules, whatever the key
        return {"concurrency_key": key, "concurrency_key_limit": limit}
    key, limit = check_concurrency_key(key, limit)
    return {"concurrency_key": key, "concurrency_key_limit": limit}


def task_job_type(path: str) -> str:
    """The job type of a task's jobs: its module path, as operators know it (lists, filters,
    metrics, per-type limits); `django_task` for a path longer than a type holds (100)."""
    return path if 0 < len(path) <= MAX_TYPE_LENGTH else JOB_TYPE


def retry_policy_for(payload: dict) -> RetryPolicy | None:
    """The retry policy `@task_options(retry_policy=...)` gave the task of a django_task job
    (None: the django_task type's, else the settings'). The task's module is imported by the
    time its attempt fails: running it imported it."""
    path = payload.get("task") if isinstance(payload, dict) else None
    options = _TASK_OPTIONS.get(path) if isinstance(path, str) else None
    return options.retry_policy if options is not None else None


def options_for(task: Task, args: list | None = None,
                kwargs: dict | None = None) -> TaskOptions:
    """The queue's options an enqueue of `task` with these arguments gets: the task's own
    (`.using()`, `@task(...)` where Django passes them), else `@task_options(...)`'s, else none
    (the settings' defaults apply). The concurrency key is `.using()`'s (with its limit), else
    `@task_options`' (a function's called with the arguments); a limit alone in `.using()`
    overrides the declared key's."""
    declared = _TASK_OPTIONS.get(task.module_path, TaskOptions())
    own_attempts = getattr(task, "max_attempts", None)
    own_timeout = getattr(task, "timeout_seconds", None)
    key = getattr(task, "concurrency_key", None)
    limit = getattr(task, "concurrency_key_limit", None)
    if key is None and declared.concurrency_key is not None:
        key = declared.concurrency_key
        if callable(key):
            key = key(*(args or []), **(kwargs or {}))
        if key is not None and limit is None:
            limit = declared.concurrency_key_limit
    return TaskOptions(
        max_attempts=declared.max_attempts if own_attempts is None else own_attempts,
        timeout_seconds=declared.timeout_seconds if own_timeout is None else own_timeout,
        retry_policy=declared.retry_policy, concurrency_key=key, concurrency_key_limit=limit)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueTask(Task):
    """Django's Task plus what this queue adds: retries, a timeout, an idempotency key and
    a concurrency key.

    `.using(...)` sets them per call; `@task(max_attempts=5, timeout_seconds=30)` for every enqueue
    where Django passes extra `@task` arguments to the backend's `task_class` (6.1 and the
    backport); `@task_options(...)` does it on every version and leaves other backends alone.
    """

    max_attempts: int | None = None  # None: JOB_DEFAULT_MAX_ATTEMPTS
    timeout_seconds: int | None = None  # None: JOB_DEFAULT_TIMEOUT_SECONDS
    # Enqueueing again with the same key and the same arguments returns the first result
    # instead of a new task; with other arguments it raises jobs.exceptions.IdempotencyConflict.
    idempotency_key: str | None = None
    # At most concurrency_key_limit (None: 1) of the jobs with this key run at once.
    concurrency_key: str | None = None
    concurrency_key_limit: int | None = None

    def using(self, *, priority: int | None = None, queue_name: str | None = None,
              run_after: datetime | None = None, backend: str | None = None,
              max_attempts: int | None = None, timeout_seconds: int | None = None,
              idempotency_key: str | None = None, concurrency_key: str | None = None,
              concurrency_key_limit: int | None = None) -> "QueueTask":
        """Create a new Task with modified defaults (Django's, and this queue's)."""
        task = Task.using(self, priority=priority, queue_name=queue_name,
                          run_after=run_after, backend=backend)
        changes: dict[str, Any] = {}
        if max_attempts is not None:
            changes["max_attempts"] = max_attempts
        if timeout_seconds is not None:
            changes["timeout_seconds"] = timeout_seconds
        if idempotency_key is not None:
            changes["idempotency_key"] = idempotency_key
        if concurrency_key is not None:
            changes["concurrency_key"] = concurrency_key
        if concurrency_key_limit is not None:
            changes["concurrency_key_limit"] = concurrency_key_limit
        return replace(task, **changes) if changes else task


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueTaskContext(TaskContext):
    """Django's TaskContext plus `job`, the queue's JobContext for this attempt: a
    `takes_context` task can report `context.job.progress(...)`, check
    `context.job.should_stop()` (cancel, timeout, shutdown), or `context.job.snooze(60)`."""

    job: JobContext | None = None


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
            from .services.enqueuing import check_concurrency_key

            try:  # enqueue()'s rules; a limit alone may go with @task_options' key
                check_concurrency_key("-" if key is None else key, limit)
            except InvalidJobArgument as exc:
                raise InvalidTask(str(exc)) from None
        if not _is_queue_name(task.queue_name):
            raise InvalidTask(f"queue_name must have 1 to {MAX_QUEUE_NAME_LENGTH} characters: "
                              "ASCII letters, digits and _ . : -")
        _remember(task)

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
        from django.apps import apps

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
        from . import services
        from .services.enqueuing import check_json_value

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
        from .models import Job, JobEvent

        try:
            job_id = int(result_id)
        except (TypeError, ValueError):
            raise TaskResultDoesNotExist(result_id) from None
        job = Job.objects.filter(pk=job_id).first()
        if job is None or not is_task_job(job.type, job.payload):
            raise TaskResultDoesNotExist(result_id)
        events = list(JobEvent.objects.filter(job_id=job_id, kind__in=_RESULT_EVENT_KINDS)
                      .order_by("id").values("kind", "attempt", "worker_id", "message", "data",
                                             "created_at"))
        return _build_result(job, events)


def _is_queue_name(name: object) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= MAX_QUEUE_NAME_LENGTH
            and QUEUE_NAME_RE.fullmatch(name) is not None)


# Every Task of a QueueBackend made in this process, by its module_path: Task.__post_init__
# has the backend validate it, which records it here. A task's module imported at start-up
# (by the project's own imports, an app's ready(), or JOB_EXTRA_HANDLER_MODULES) is known
# before the first job.
_known_tasks: dict[str, Task] = {}


def _remember(task: Task) -> None:
    known = _known_tasks.get(task.module_path)
    if known is None or known.func is not task.func:  # .using() copies change no function
        _known_tasks[task.module_path] = task


def _in_installed_app(module: str) -> bool:
    from django.apps import apps

    return any(module == app.name or module.startswith(app.name + ".")
               for app in apps.get_app_configs())


def _load_task(path: str) -> Task:
    """The task at `path`, found without importing arbitrary code (a job's payload names the
    path, and whoever wrote the row chose it):

    1. a Task of this backend already made in this process is used as it is: nothing is
       imported;
    2. otherwise only a path inside an installed app's package (`myapp.tasks.cleanup` with
       `myapp` in INSTALLED_APPS) has its module imported, and the name must be a Task;
    3. any other path (`os.system`, a module outside INSTALLED_APPS) is refused with
       PermanentError, and nothing is imported.

    In case 2 a module or name that is missing raises ImportError (ModuleNotFoundError ...):
    a deploy that lags, retried like any error. Something that is not a Task is final."""
    path = str(path)
    known = _known_tasks.get(path)
    if known is not None:
        return known
    module, _, name = path.rpartition(".")
    if not module or not _in_installed_app(module):
        raise PermanentError(
            f"{path!r} is not a registered task: the worker runs only tasks already loaded "
            "in this process or defined in an installed app's package (INSTALLED_APPS), and "
            "imports no other module")
    task = getattr(importlib.import_module(module), name, _MISSING)
    if task is _MISSING:
        raise ImportError(f"module {module!r} has no attribute {name!r}")
    if not isinstance(task, Task):
        raise PermanentError(f"{path!r} is not a registered task (decorate it with @task)")
    return task


_MISSING = object()


def _build_task(cls: type[Task], values: dict[str, Any]) -> Task:
    """A task of `cls` with these fields, not validated again: it is a task as it was when it
    was enqueued (validated then), and settings may have changed since."""
    task = object.__new__(cls)
    for f in fields(cls):
        object.__setattr__(task, f.name, values.get(f.name, f.default))
    return task


def _stand_in(path: str, error: BaseException) -> Task:
    """A task for a path that cannot be loaded here: its module_path is that path, and its
    function raises the error again."""
    module, _, name = path.rpartition(".")
    message = f"cannot load task {path!r}: {type(error).__name__}: {error}"

    def unloadable(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(message)

    unloadable.__module__, unloadable.__name__, unloadable.__qualname__ = module, name, name
    return _build_task(QueueTask, {"func": unloadable})


def _task_for(job: Any, task: Task | None = None) -> Task:
    """The task a job was enqueued as: the imported Task (or a stand-in, if it cannot be
    loaded) with the options it was enqueued with."""
    payload = job.payload
    path = str(payload.get("task"))
    if task is None:
        try:
            task = _load_task(path)
        except (ImportError, PermanentError) as exc:
            task = _stand_in(path, exc)
    values = {f.name: getattr(task, f.name) for f in fields(task)}
    values.update(priority=job.priority, queue_name=job.queue,
                  backend=payload.get("backend", task.backend))
    enqueued = payload.get("enqueued")
    if isinstance(enqueued, dict):  # as enqueued (jobs from before kept no record of it)
        run_after = enqueued.get("run_after")
        values["run_after"] = datetime.fromisoformat(run_after) if run_after else None
        if isinstance(task, QueueTask):
            values.update(max_attempts=enqueued.get("max_attempts"),
                          timeout_seconds=enqueued.get("timeout_seconds"),
                          idempotency_key=job.idempotency_key,
                          concurrency_key=enqueued.get("concurrency_key"),
                          concurrency_key_limit=enqueued.get("concurrency_key_limit"))
    elif isinstance(task, QueueTask):
        values.update(max_attempts=job.max_attempts, timeout_seconds=job.timeout_seconds,
                      idempotency_key=job.idempotency_key)
    return _build_task(type(task), values)


def _build_result(job: Any, events: list[dict[str, Any]], task: Task | None = None,
                  ) -> TaskResult:
    task = _task_for(job, task)
    by_attempt: dict[int, str] = {}
    first_claim_at: datetime | None = None
    task_errors: dict[int, TaskError] = {}
    errors: list[TaskError] = []
    for ev in events:
        kind, data = ev["kind"], ev["data"] or {}
        if kind == "claimed":
            by_attempt[ev["attempt"]] = ev["worker_id"] or ""
            first_claim_at = first_claim_at or ev["created_at"]
        elif kind == "log" and "task_error" in data:
            err = data["task_error"]
            task_errors[ev["attempt"]] = TaskError(
                exception_class_path=err["exception_class_path"], traceback=err["traceback"])
        elif kind in ("retry_scheduled", "failed"):
            own = task_errors.pop(ev["attempt"], None)
            errors.append(own or TaskError(
                exception_class_path=_SYNTHETIC_ERRORS.get(str(data.get("reason")),
                                                           "builtins.Exception"),
                traceback=ev["message"]))
        elif kind == "cancelled":
            errors.append(task_errors.pop(ev["attempt"], None) or TaskError(
                exception_class_path="django_pg_jobqueue.exceptions.JobCancelled",
                traceback=ev["message"] or "cancelled"))
        elif kind == "lease_expired":
            errors.append(TaskError(exception_class_path="django_pg_jobqueue.exceptions.LeaseLost",
                                    traceback=ev["message"]))
    worker_ids = [by_attempt[n] for n in sorted(by_attempt) if n <= job.attempts]
    result = TaskResult(
        task=task, id=str(job.id), status=STATUS_MAP[job.status], enqueued_at=job.created_at,
        started_at=first_claim_at, last_attempted_at=job.started_at,
        finished_at=job.finished_at, args=job.payload.get("args", []),
        kwargs=job.payload.get("kwargs", {}), backend=job.payload.get("backend", task.backend),
        errors=errors, worker_ids=worker_ids,
    )
    if job.status == "succeeded":
        object.__setattr__(result, "_return_value", job.result)
    return result


# -- the worker side --------------------------------------------------------------------------
def _call(task: Task, ctx: JobContext, args: list, kwargs: dict) -> Any:
    if not iscoroutinefunction(task.func):
        return task.func(*args, **kwargs)
    # As an async handler: on an event loop of the worker's, cancelled when the job must stop.
    return coroutines.run(task.func, ctx, *args, **kwargs)


def _finish(sender: Any, result: TaskResult, status: TaskResultStatus, **changes: Any,
            ) -> None:
    for name, value in {"status": status, **changes}.items():
        object.__setattr__(result, name, value)
    task_finished.send(sender, task_result=result)


@handler(JOB_TYPE, description="Runs a Django task (django.tasks) enqueued through QueueBackend.")
def run_django_task(ctx: JobContext, payload: dict[str, Any]) -> Any:
    from .models import Job, JobEvent

    alias = payload.get("backend")
    try:
        backend = task_backends[alias]
    except Exception as exc:
        raise PermanentError(f"no task backend {alias!r} in TASKS: {exc}") from exc
    sender = type(backend)
    job = Job.objects.get(pk=ctx.job_id)
    events = list(JobEvent.objects.filter(job_id=ctx.job_id, kind__in=_RESULT_EVENT_KINDS)
                  .order_by("id").values("kind", "attempt", "worker_id", "message", "data",
                                         "created_at"))
    try:
        loaded = _load_task(str(payload.get("task")))
    except (ImportError, PermanentError) as exc:
        # Not importable here (a deploy that lags, a task since removed): this attempt fails
        # with the import's own exception, kept in errors, and is retried like any error;
        # "not a Task" is final.
        result = _build_result(job, events)
        task_started.send(sender, task_result=result)
        _record_failure(sender, ctx, result, exc, final=isinstance(exc, PermanentError))
        raise
    result = _build_result(job, events, loaded)
    task = result.task
    task_started.send(sender, task_result=result)
    args, kwargs = list(result.args), dict(result.kwargs)
    if task.takes_context:
        args.insert(0, QueueTaskContext(task_result=result, job=ctx))
    try:
        raw = _call(task, ctx, args, kwargs)
    except (Snooze, LeaseLost):
        raise  # not a failure of the task: requeued uncharged, or no longer ours
    except Exception as exc:
        _record_failure(sender, ctx, result, exc,
                        final=isinstance(exc, (PermanentError, JobCancelled)))
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        # The task's own sys.exit() or KeyboardInterrupt (a worker's executor thread never
        # receives a real Ctrl-C: signals go to the main thread). As Django's backends do,
        # the task fails with that exception in its errors; the worker carries on, the
        # attempt failed like any other.
        _record_failure(sender, ctx, result, exc, final=False)
        raise TaskExited(f"the task raised {type(exc).__name__}: {exc}") from exc
    try:
        problem = storable.nesting_problem(raw)  # before normalize_json, which recurses
        if problem is not None:
            raise UnstorableResult(f"it is nested too deeply: it {problem}")
        value = normalize_json(raw)
        storable.encode_json(value, what="it")
    except (TypeError, ValueError) as exc:
        # Deterministic: running it again would return the same value. Fail for good.
        _record_failure(sender, ctx, result, exc, final=True)
        raise PermanentError(f"the task returned a value that is not JSON: {exc}") from exc
    object.__setattr__(result, "_return_value", value)
    _finish(sender, result, TaskResultStatus.SUCCESSFUL, finished_at=timezone.now())
    return value


def _record_failure(sender: Any, ctx: JobContext, result: TaskResult, exc: BaseException, *,
                    final: bool) -> None:
    """Keep the exception's class path and traceback (as a `log` event the result is rebuilt
    from), then send `task_finished` with the status the task has after this attempt."""
    exc_type = type(exc)
    error = TaskError(exception_class_path=f"{exc_type.__module__}.{exc_type.__qualname__}",
                      traceback="".join(tb_module.format_exception(exc))[-20000:])
    try:
        ctx.log(f"task raised {error.exception_class_path}: {exc}"[:1000],
                task_error={"exception_class_path": error.exception_class_path,
                            "traceback": error.traceback})
    except LeaseLost:
        pass
    result.errors.append(error)
    final = final or ctx.attempt >= ctx.max_attempts
    _finish(sender, result, TaskResultStatus.FAILED if final else TaskResultStatus.READY,
            finished_at=timezone.now() if final else None)
