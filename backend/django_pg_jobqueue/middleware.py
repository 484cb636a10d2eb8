"""Hooks around handlers: JOB_MIDDLEWARE wraps every handler call, JOB_ERROR_HOOKS hear every
failed attempt.

The executor (worker/executor.py, which `testing.drain` runs too) calls `run_handler(func, ctx,
job)` and nothing else: the chain is tracing's wrapper first (tracing.middleware, a no-op
unless JOB_OTEL_ENABLED), then each JOB_MIDDLEWARE entry in order, then the handler itself,
`func(ctx, job.payload)`. A middleware is `middleware(call_next, ctx, job) -> result`: it may
run code before and after `call_next()`, replace its result, or raise. The chain is built once
per settings (conf.get()'s cache), so the hot path pays a list walk, not an import.

The error hooks are told by whoever wrote the failure, once it is written and its outcome known
(`report_failure`): the executor's one failure write (JobRunner._fail: a raised error, an
unknown type, a result that cannot be stored, a transaction left open), the renewer's for a
timeout, the reaper's for an expired lease. A success never looks them up.
"""
import logging

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from . import conf, tracing
from .exceptions import AttemptFailed

log = logging.getLogger("django_pg_jobqueue.middleware")


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
# to wrap: no middleware, tracing off; then the handler is called directly).
_loaded: tuple = (None, (), (), True)


def _reload() -> tuple:
    """The chain and the error hooks of the current settings: loaded again only when
    conf.get() returns another object (override_settings clears its cache)."""
    global _loaded
    settings = conf.get()
    chain = _load("MIDDLEWARE", settings.MIDDLEWARE)
    hooks = _load("ERROR_HOOKS", settings.ERROR_HOOKS)
    _loaded = (settings, (tracing.middleware, *chain), hooks,
               not chain and not tracing.enabled())
    return _loaded


def _current() -> tuple:
    loaded = _loaded
    if loaded[0] is not conf.get():
        loaded = _reload()
    return loaded


def run_handler(func, ctx, job):
    """Call the handler `func(ctx, job.payload)` through every middleware. Exceptions always
    propagate unchanged (the error hooks hear of them from the failure's writer)."""
    loaded = _loaded  # _current(), inlined: this is every job's path
    if loaded[0] is not conf.get():
        loaded = _reload()
    if loaded[3]:  # the default: the hot path pays nothing for the hooks it does not use
        return func(ctx, job.payload)
    middleware = loaded[1]

    def call(i: int):
        if i == len(middleware):
            return func(ctx, job.payload)
        return middleware[i](lambda: call(i + 1), ctx, job)

    return call(0)


def report_failure(job, exc: BaseException | None, outcome: str, *, reason: str = "error",
                   error: str = "") -> None:
    """Tell each error hook, `hook(job, exception, outcome)`, of a failed attempt whose
    failure was just written: `outcome` is "queued" (a retry follows) or "failed". Without
    an exception of the handler's, the hooks get an AttemptFailed(`reason`, `error`). A hook
    that raises (or hooks that cannot be loaded) is logged and ignored."""
    try:
        hooks = _current()[2]
    except Exception:  # noqa: BLE001 - the job's failure is written: nothing may undo it
        log.exception("error hooks could not be loaded for job=%s", job.id)
        return
    if not hooks:
        return
    if exc is None:
        exc = AttemptFailed(job.id, reason, error)
    for hook in hooks:
        try:
            hook(job, exc, outcome)
        except Exception:  # a broken hook never changes the job's fate
            log.exception("error hook %r failed for job=%s", hook, job.id)
