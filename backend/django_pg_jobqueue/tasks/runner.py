"""The worker side of Django tasks: the `django_task` handler that imports a job's task (only
as `options.load_task` allows), calls it (coroutines natively, cancelled when the job must
stop), stores its JSON return value, and sends `task_started` / `task_finished`.
"""
import traceback as tb_module
from dataclasses import dataclass
from inspect import iscoroutinefunction
from typing import Any

from django.utils import timezone

from .. import coroutines, storable
from ..context import JobContext
from ..exceptions import (
    JobCancelled,
    LeaseLost,
    PermanentError,
    Snooze,
    UnstorableResult,
)
from ..registry import handler
from ..tasks_compat import (
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)
from .options import JOB_TYPE, load_task
from .results import build_result, result_events


class TaskExited(Exception):
    """A task raised SystemExit or KeyboardInterrupt: its attempt failed (the exception
    itself is in the result's `errors`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueTaskContext(TaskContext):
    """Django's TaskContext plus `job`, the queue's JobContext for this attempt: a
    `takes_context` task can report `context.job.progress(...)`, check
    `context.job.should_stop()` (cancel, timeout, shutdown), or `context.job.snooze(60)`."""

    job: JobContext | None = None


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
    from ..models import Job  # this module loads with TASKS' backend, maybe before models

    alias = payload.get("backend")
    try:
        backend = task_backends[alias]
    except Exception as exc:
        raise PermanentError(f"no task backend {alias!r} in TASKS: {exc}") from exc
    sender = type(backend)
    job = Job.objects.get(pk=ctx.job_id)
    events = result_events(ctx.job_id)
    try:
        loaded = load_task(str(payload.get("task")))
    except (ImportError, PermanentError) as exc:
        # Not importable here (a deploy that lags, a task since removed): this attempt fails
        # with the import's own exception, kept in errors, and is retried like any error;
        # "not a Task" is final.
        result = build_result(job, events)
        task_started.send(sender, task_result=result)
        _record_failure(sender, ctx, result, exc, final=isinstance(exc, PermanentError))
        raise
    result = build_result(job, events, loaded)
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
