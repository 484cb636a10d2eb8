"""A job queue for Django on PostgreSQL.

    from django_pg_jobqueue import enqueue, handler

The operator API (the services the REST API and the admin call): cancel, retry, delete,
pause_queue, resume_queue, set_queue_limit.

Names are resolved lazily so that `import django_pg_jobqueue` works before Django's apps are loaded.
"""

# The producer's and the handler's API, then the operator's (docs/reference/python-api.md).
_SERVICES = ("enqueue", "enqueue_many", "cancel", "retry", "delete", "pause_queue", "resume_queue",
             "set_queue_limit")
__all__ = [*_SERVICES, "handler", "PermanentError", "JobContext"]


def __getattr__(name):
    if name in _SERVICES:
        from . import services

        return getattr(services, name)
    if name == "handler":
        from .registry import handler

        return handler
    if name == "PermanentError":
        from .exceptions import PermanentError

        return PermanentError
    if name == "JobContext":
        from .context import JobContext

        return JobContext
    raise AttributeError(name)
