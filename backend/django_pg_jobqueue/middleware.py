"""Hooks around handlers: JOB_MIDDLEWARE wraps every handler call, JOB_ERROR_HOOKS hear every
failure a handler raises.

The executor (worker/executor.py, which `testing.drain` runs too) calls `run_handler(func, ctx,
job)` and nothing else: the chain is tracing's wrapper first (tracing.middleware, a no-op
unless JOB_OTEL_ENABLED), then each JOB_MIDDLEWARE entry in order, then the handler itself,
`func(ctx, job.payload)`. A middleware is `middleware(call_next, ctx, job) -> result`: it may
run code before and after `call_next()`, replace its result, or raise. The chain is built once
per settings (conf.get()'s cache), so the hot path pays a list walk, not an import.
"""
import logging

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from . import conf, tracing
from .context import Snooze
from .exceptions import JobCancelled, LeaseLost, PermanentError

log = logging.getLogger("django_pg_jobqueue.middleware")

# Control flow, not failures: the error hooks do not hear of them.
_NOT_FAILURES = (Snooze, JobCancelled, LeaseLost)


def _load(setting: str, paths: tuple[str, ...]) -> tuple:
    loaded = []
    for path in paths:
        try:
            func = import_string(path)
        except ImportError as exc:
            raise ImproperlyConfigured(f"JOB_{setting}: cannot import {path!r}: {exc}") from exc
        if not callable(func):
            raise ImproperlyConfigured(f"JOB_{setting}: {path!r} is not callable")
        loaded.append(func)
    return tuple(loaded)


# (the settings they were loaded from, the chain, the error hooks, whether there is nothing
# to wrap: no middleware, no hook, tracing off; then the handler is called directly).
_loaded: tuple = (None, (), (), True)


def _reload() -> tuple:
    """The chain and the error hooks of the current settings: loaded again only when
    conf.get() returns another object (override_settings clears its cache)."""
    global _loaded
    settings = conf.get()
    chain = _load("MIDDLEWARE", settings.MIDDLEWARE)
    hooks = _load("ERROR_HOOKS", settings.ERROR_HOOKS)
    _loaded = (settings, (tracing.middleware, *chain), hooks,
               not chain and not hooks and not tracing.enabled())
    return _loaded


def run_handler(func, ctx, job):
    """Call the handler `func(ctx, job.payload)` through every middleware; tell the error
    hooks when it raises. Exceptions always propagate unchanged."""
    loaded = _loaded
    if loaded[0] is not conf.get():
        loaded = _reload()
    if loaded[3]:  # the default: the hot path pays nothing for the hooks it does not use
        return func(ctx, job.payload)
    middleware, error_hooks = loaded[1], loaded[2]

    def call(i: int):
        if i == len(middleware):
            return func(ctx, job.payload)
        return middleware[i](lambda: call(i + 1), ctx, job)

    try:
        return call(0)
    except _NOT_FAILURES:
        raise
    except BaseException as exc:
        if error_hooks:
            retried = not isinstance(exc, PermanentError) and job.attempt < job.max_attempts
            _tell(error_hooks, job, exc, "queued" if retried else "failed")
        raise


def _tell(error_hooks, job, exc: BaseException, outcome: str) -> None:
    for hook in error_hooks:
        try:
            hook(job, exc, outcome)
        except Exception:  # a broken hook never changes the job's fate
            log.exception("error hook %r failed for job=%s", hook, job.id)
