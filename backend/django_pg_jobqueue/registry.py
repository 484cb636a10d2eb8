"""The handler registry: job type name -> handler function and its per-type defaults.

Declare handlers with the `@handler` decorator in a `handlers.py` module of any installed
app; the jobs app imports those modules at start-up, the way the admin finds `admin.py`.

    from django_pg_jobqueue import handler

    @handler("thumbnail", max_attempts=5, timeout_seconds=60, queue="media", concurrency=2,
             retry_policy=RetryPolicy(delays_seconds=[1, 5, 30], give_up_on=[ValueError]))
    def make_thumbnail(ctx, payload):
        ctx.progress(50, "resizing")
        return {"ok": True}

A handler may be an `async def`: the worker runs it on an event loop of its own and cancels it
when the job must stop (coroutines.py).

A chunk handler (`chunk_size=N`) takes up to N jobs of its type in one call,
`func(ctxs, payloads) -> list`, and answers for each job on its own (worker/executor.py's
JobRunner.run_chunk; docs/how-to/chunk-handlers.md).
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from inspect import iscoroutinefunction
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from .conf import DJANGO_TASK_TYPE
from .coroutines import sync_handler
from .retries import RetryPolicy, as_policy

# A handler: `func(ctx, payload)`, ctx a context.JobContext (not imported: the registry is a
# catalogue below the worker's context), payload the job's JSON object, returning JSON (or None).
HandlerFunc = TypeVar("HandlerFunc", bound="Callable[[Any, dict[str, Any]], object]")


@dataclass(frozen=True)
class HandlerSpec:
    name: str
    func: Callable
    max_attempts: int | None = None
    timeout_seconds: int | None = None
    queue: str = "default"
    priority: int = 0
    concurrency: int | None = None  # most jobs of this type running at once, across all workers
    description: str = ""
    payload_example: dict = field(default_factory=dict)
    retry_policy: RetryPolicy | None = None  # None: the JOB_RETRY_* settings (retries.py)
    # A chunk handler's: the most jobs of this type one call takes (None: one job a call, the
    # ordinary `func(ctx, payload)`), and how long a worker holding fewer waits for more.
    chunk_size: int | None = None
    chunk_wait_seconds: float = 0.0
    # What the executor calls, `run(ctx, payload)`: `func` itself, or for an `async def`
    # handler a function that runs it on an event loop of the worker's (coroutines.py).
    run: Callable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run", self.func if self.chunk_size else sync_handler(self.func))


# The most jobs one call of a chunk handler takes, and the longest a worker waits for them:
# a chunk's jobs are held (and renewed) together, and its successes reach the completer at once.
MAX_CHUNK_SIZE = 1000
MAX_CHUNK_WAIT_SECONDS = 60.0


def check_chunk(name: str, func: Callable, chunk_size: object, chunk_wait_seconds: object
                ) -> tuple[int | None, float]:
    """The chunk arguments of `@handler(name)`, checked once, at registration: a refusal is an
    ImproperlyConfigured naming the argument."""
    where = f"@handler({name!r})"
    if chunk_size is None:
        if chunk_wait_seconds not in (None, 0):
            raise ImproperlyConfigured(f"{where}: chunk_wait_seconds is only for a chunk "
                                       "handler: give chunk_size too")
        return None, 0.0
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or not (
            1 <= chunk_size <= MAX_CHUNK_SIZE):
        raise ImproperlyConfigured(f"{where}: chunk_size must be a whole number from 1 to "
                                   f"{MAX_CHUNK_SIZE}, not {chunk_size!r}")
    wait = 0.0 if chunk_wait_seconds is None else chunk_wait_seconds
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not (
            0 <= wait <= MAX_CHUNK_WAIT_SECONDS):  # NaN fails this too
        raise ImproperlyConfigured(f"{where}: chunk_wait_seconds must be a number of seconds "
                                   f"from 0 to {MAX_CHUNK_WAIT_SECONDS:g}, not {wait!r}")
    if iscoroutinefunction(func):
        raise ImproperlyConfigured(f"{where}: a chunk handler (chunk_size) is a plain "
                                   "function, not an `async def`")
    return chunk_size, float(wait)


def _where(func: Callable) -> str:
    """`module.qualname` of a handler function: the same function imported twice is one handler."""
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}
        # Limits of job types that are not handlers: Django tasks (their module path is their
        # type), set by @task_options(concurrency=N) when the task's module is imported.
        self._other_limits: dict[str, int] = {}

    def register(self, name: str, func: Callable[..., Any], **defaults: Any) -> HandlerSpec:
        if not name or len(name) > 100:
            raise ValueError("a job type name has 1 to 100 characters")
        if defaults.get("retry_policy") is not None:
            defaults["retry_policy"] = as_policy(defaults["retry_policy"])
        defaults["chunk_size"], defaults["chunk_wait_seconds"] = check_chunk(
            name, func, defaults.get("chunk_size"), defaults.get("chunk_wait_seconds"))
        if "description" not in defaults:
            defaults["description"] = (func.__doc__ or "").strip().split("\n")[0]
        spec = HandlerSpec(name=name, func=func, **defaults)
        existing = self._specs.get(name)
        if existing is not None and _where(existing.func) != _where(func):
            raise ImproperlyConfigured(
                f"two handlers are registered as {name!r}: {_where(existing.func)} and "
                f"{_where(func)}; give one of them another name")
        self._specs[name] = spec
        return spec

    def unregister(self, name: str) -> None:
        self._specs.pop(name, None)

    def get(self, name: str) -> HandlerSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def set_type_limit(self, name: str, concurrency: int | None) -> None:
        """Most jobs of the type `name` (a Django task's path) running at once; None: none."""
        if concurrency:
            self._other_limits[name] = concurrency
        else:
            self._other_limits.pop(name, None)

    def type_limits(self) -> dict[str, int]:
        limits = dict(self._other_limits) if self._other_limits else {}
        limits.update({s.name: s.concurrency for s in self._specs.values() if s.concurrency})
        return limits

    def all(self) -> list[HandlerSpec]:
        return sorted(self._specs.values(), key=lambda s: s.name)


registry = Registry()


def is_task_job(job_type: str, payload: object) -> bool:
    """Whether a job of this type and payload is a Django task's, run by the `django_task`
    handler (tasks_backend.py): of type `django_task` (as every task's job was before, and a
    path too long for a type still is), or of the path its payload names, which is how
    QueueBackend types a task's jobs now. A registered handler's type is never a task's."""
    if job_type == DJANGO_TASK_TYPE:
        return True
    return (job_type not in registry and isinstance(payload, dict)
            and payload.get("task") == job_type)


def handler(name: str | None = None, *, max_attempts: int | None = None,
            timeout_seconds: int | None = None, queue: str = "default", priority: int = 0,
            concurrency: int | None = None, description: str | None = None,
            payload_example: dict[str, Any] | None = None,
            retry_policy: RetryPolicy | dict[str, Any] | None = None,
            chunk_size: int | None = None, chunk_wait_seconds: float | None = None,
            ) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register the decorated function `func(ctx, payload) -> JSON result` as a job type.

    `func` may be an `async def`: it then runs on an event loop the worker owns, and is
    cancelled (at its current `await`) when the job is cancelled, times out or must stop.
    `retry_policy`: a `RetryPolicy` (or its JSON shape) for this type's failed attempts
    (docs/how-to/retries.md); a job's own, given at enqueue, wins over it.
    `chunk_size`: make it a chunk handler, `func(ctxs, payloads) -> list`, called with up to
    that many jobs of its type at once (what arrived within `chunk_wait_seconds`, 0 by
    default), answering for each (docs/how-to/chunk-handlers.md)."""
    policy = as_policy(retry_policy)  # refused here, at import, not at the first failure

    def decorate(func: HandlerFunc) -> HandlerFunc:
        defaults: dict[str, Any] = dict(max_attempts=max_attempts, timeout_seconds=timeout_seconds, queue=queue,
                        priority=priority, concurrency=concurrency,
                        payload_example=payload_example or {}, retry_policy=policy,
                        chunk_size=chunk_size, chunk_wait_seconds=chunk_wait_seconds)
        if description is not None:
            defaults["description"] = description
        registry.register(name or func.__name__, func, **defaults)
        return func

    return decorate
