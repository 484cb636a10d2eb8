"""The queue's options for Django tasks, and which tasks the worker may run.

`@task_options(...)` (a registry by module path, so the `@task` stays importable and runnable
under any backend), `QueueTask` (Django's Task plus retries, a timeout, an idempotency key and
a concurrency key), the options an enqueue gets (`options_for`), and `load_task`: the one way
a job's task path becomes a Task, without importing arbitrary modules. A catalogue: no
database, nothing above it imported (the backend, the results and the runner build on it).
"""
import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from .. import conf
from ..arguments import check_concurrency_key, check_fairness_key
from ..exceptions import (
    InvalidJobArgument,
    JobArgumentTypeError,
    PermanentError,
)
from ..registry import registry
from ..retries import InvalidRetryPolicy, RetryPolicy, as_policy
from ..states import (
    MAX_ATTEMPTS_LIMIT,
    MAX_TIMEOUT_SECONDS,
    MAX_TYPE_LENGTH,
)
from ..tasks_compat import (
    Task,
)

JOB_TYPE = conf.DJANGO_TASK_TYPE
_T = TypeVar("_T")  # what @task_options decorates: a Task or a function


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
    # Each job's fairness key (docs/how-to/fairness.md): a str, or a function of the task's
    # arguments returning one or None.
    fairness_key: str | Callable[..., str | None] | None = None


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
                 concurrency_key_limit: int | None = None,
                 fairness_key: str | Callable[..., str | None] | None = None,
                 ) -> Callable[[_T], _T]:
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
    `fairness_key`: the job's fairness key, as `enqueue(fairness_key=...)` gives one (in a
    fair queue, claims take turns by key; docs/how-to/fairness.md), a str or such a function.
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
                          fairness_key=(fairness_key if callable(fairness_key)
                                        else check_fairness_key(fairness_key)),
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
    overrides the declared key's. The fairness key likewise: `.using()`'s, else
    `@task_options`' (a function's called with the arguments, its answer checked)."""
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
    fairness_key = getattr(task, "fairness_key", None)
    if fairness_key is None and declared.fairness_key is not None:
        fairness_key = declared.fairness_key
        if callable(fairness_key):
            fairness_key = fairness_key(*(args or []), **(kwargs or {}))
    return TaskOptions(
        max_attempts=declared.max_attempts if own_attempts is None else own_attempts,
        timeout_seconds=declared.timeout_seconds if own_timeout is None else own_timeout,
        retry_policy=declared.retry_policy, concurrency_key=key, concurrency_key_limit=limit,
        fairness_key=fairness_key)


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
    # In a fair queue, claims take turns by this key (docs/how-to/fairness.md).
    fairness_key: str | None = None

    def using(self, *, priority: int | None = None, queue_name: str | None = None,
              run_after: datetime | None = None, backend: str | None = None,
              max_attempts: int | None = None, timeout_seconds: int | None = None,
              idempotency_key: str | None = None, concurrency_key: str | None = None,
              concurrency_key_limit: int | None = None,
              fairness_key: str | None = None) -> "QueueTask":
        """Create a new Task with modified defaults (Django's, and this queue's)."""
        task = Task.using(self, priority=priority, queue_name=queue_name,
                          run_after=run_after, backend=backend)
        given: dict[str, Any] = {
            "max_attempts": max_attempts, "timeout_seconds": timeout_seconds,
            "idempotency_key": idempotency_key, "concurrency_key": concurrency_key,
            "concurrency_key_limit": concurrency_key_limit, "fairness_key": fairness_key}
        changes = {name: value for name, value in given.items() if value is not None}
        return replace(task, **changes) if changes else task


# Every Task of a QueueBackend made in this process, by its module_path: Task.__post_init__
# has the backend validate it, which records it here. A task's module imported at start-up
# (by the project's own imports, an app's ready(), or JOB_EXTRA_HANDLER_MODULES) is known
# before the first job.
_known_tasks: dict[str, Task] = {}


def remember(task: Task) -> None:
    known = _known_tasks.get(task.module_path)
    if known is None or known.func is not task.func:  # .using() copies change no function
        _known_tasks[task.module_path] = task


def _in_installed_app(module: str) -> bool:
    from django.apps import apps

    return any(module == app.name or module.startswith(app.name + ".")
               for app in apps.get_app_configs())


def load_task(path: str) -> Task:
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


def declared_options(path: str) -> TaskOptions | None:
    """What `@task_options(...)` declared for the task at `path` (None: nothing)."""
    return _TASK_OPTIONS.get(path)


def known_task(path: str) -> Task | None:
    """The Task of this backend made in this process for `path`, if any."""
    return _known_tasks.get(path)


def known_task_paths() -> list[str]:
    """The module paths of every Task of this backend made in this process."""
    return list(_known_tasks)
