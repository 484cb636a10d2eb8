"""A job queue for Django on PostgreSQL.

    from django_pg_jobqueue import enqueue, handler

Names are resolved lazily so that `import django_pg_jobqueue` works before Django's apps are
loaded. Type checkers see the real imports (the TYPE_CHECKING block), so `enqueue`'s and
`handler`'s signatures check callers' code.
"""
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import JobContext
    from .exceptions import PermanentError
    from .registry import handler
    from .services import enqueue, enqueue_many
    from .tasks_backend import task_options

__all__ = ["enqueue", "enqueue_many", "handler", "task_options", "PermanentError", "JobContext"]


def __getattr__(name: str) -> Any:
    if name in ("enqueue", "enqueue_many"):
        from . import services

        return getattr(services, name)
    if name == "handler":
        from .registry import handler

        return handler
    if name == "task_options":
        from .tasks_backend import task_options

        return task_options
    if name == "PermanentError":
        from .exceptions import PermanentError

        return PermanentError
    if name == "JobContext":
        from .context import JobContext

        return JobContext
    raise AttributeError(name)
