"""A job queue for Django on PostgreSQL.

    from django_pg_jobqueue import enqueue, handler
    from django_pg_jobqueue import aenqueue  # in async code: await aenqueue(...)

The operator API (the services the REST API and the admin call): cancel, retry, delete,
pause_queue, resume_queue, set_queue_limit, set_queue_fairness, set_queue_aging,
set_fairness_weights, set_rate_limit, remove_rate_limit; a rate limit
checked or consumed outside a job: rate_limit("customer:42").try_acquire(). Batches with
callbacks: enqueue_batch, cancel_batch, batch_progress. Waiting for a job's outcome: wait(job) and, in
async code, await await_result(job) (JobFailed, WaitTimeout).

Names are resolved lazily so that `import django_pg_jobqueue` works before Django's apps are
loaded. Type checkers see the real imports (the TYPE_CHECKING block), so `enqueue`'s and
`handler`'s signatures check callers' code.
"""
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import JobContext
    from .exceptions import JobFailed, PermanentError, SignalTimedOut, WaitTimeout
    from .registry import handler
    from .retries import RetryPolicy
    from .selectors import batch_progress
    from .services import (
        aenqueue,
        aenqueue_many,
        cancel,
        cancel_batch,
        delete,
        enqueue,
        enqueue_batch,
        enqueue_many,
        pause_queue,
        rate_limit,
        remove_rate_limit,
        resume_queue,
        retry,
        send_signal,
        set_fairness_weights,
        set_queue_aging,
        set_queue_fairness,
        set_queue_limit,
        set_rate_limit,
    )
    from .tasks.options import task_options
    from .waiting import await_result, wait

# The producer's and the handler's API, then the operator's (docs/reference/python-api.md).
__all__ = ["enqueue", "enqueue_many", "aenqueue", "aenqueue_many", "cancel", "retry", "delete",
           "pause_queue", "resume_queue", "set_queue_limit", "set_queue_fairness",
           "set_queue_aging", "set_fairness_weights", "set_rate_limit", "remove_rate_limit", "rate_limit",
           "enqueue_batch", "cancel_batch", "handler",
           "task_options", "PermanentError", "JobContext", "RetryPolicy", "wait",
           "await_result", "JobFailed", "WaitTimeout", "send_signal", "SignalTimedOut",
           "batch_progress"]
_SERVICES = frozenset(__all__[:18]) | {"send_signal"}  # resolved from .services


def __getattr__(name: str) -> Any:
    if name in _SERVICES:
        from . import services

        return getattr(services, name)
    if name == "handler":
        from .registry import handler

        return handler
    if name == "task_options":
        from .tasks.options import task_options

        return task_options
    if name == "batch_progress":
        from .selectors import batch_progress

        return batch_progress
    if name in ("wait", "await_result"):
        from . import waiting

        return getattr(waiting, name)
    if name in ("PermanentError", "JobFailed", "WaitTimeout", "SignalTimedOut"):
        from . import exceptions

        return getattr(exceptions, name)
    if name == "RetryPolicy":
        from .retries import RetryPolicy

        return RetryPolicy
    if name == "JobContext":
        from .context import JobContext

        return JobContext
    raise AttributeError(name)
