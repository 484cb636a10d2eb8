"""A job queue for Django on PostgreSQL.

    from django_pg_jobqueue import enqueue, handler

Names are resolved lazily so that `import django_pg_jobqueue` works before Django's apps are loaded.
"""

__all__ = ["enqueue", "enqueue_many", "handler", "task_options", "PermanentError", "JobContext"]


def __getattr__(name):
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
