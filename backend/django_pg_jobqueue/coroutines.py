"""Async handlers and async Django tasks: each attempt's coroutine on an event loop the worker
owns, stopped the way a sync handler is.

**The loop: one per executor thread, for the length of one attempt.** The executor thread that
claimed the job calls `run(...)`, which runs the coroutine through asgiref's `async_to_sync`: a
new event loop on a thread of its own, while the executor thread waits and serves the
coroutine's thread-sensitive `sync_to_async` calls. Chosen over one loop per worker process
because:

- Django's async ORM methods (`await Model.objects.aget(...)`) and `sync_to_async` (thread
  sensitive by default) run their queries back on the executor thread, so an async handler's
  queries use that thread's connection, which the worker tidies after every job (hygiene.py)
  and counts in its connection budget, exactly as a sync handler's. With one loop per process,
  every job's thread-sensitive calls would go through one thread, one at a time.
- `--threads N` keeps meaning "at most N jobs at once" for sync and async handlers alike; a
  long async job holds its thread as a sync one does.
- A fresh loop for each attempt: nothing a handler leaves behind (a task still pending, a
  callback, a loop it closed) reaches the next job.
The price is a short-lived thread and loop per async attempt (measured in
docs/how-to/async.md); sync handlers pay nothing.

**Stopping.** The coroutine runs as a task. Every `STOP_POLL_SECONDS` the runner looks at
`ctx.should_stop()`: set when the job is cancelled, passes its timeout, loses its lease or the
worker shuts down past its grace period. Then the task is cancelled (`CancelledError` at its
current `await`), awaited, and `JobCancelled` raised in the executor thread, as a sync
handler's `ctx.raise_if_should_stop()` would: the executor records a cancel as the job
cancelled, and a timeout as the renewer already did (the attempt failed as timed out, retried
while attempts remain). A coroutine that swallows the cancellation keeps its thread until it
returns, as a sync handler that never looks at `ctx.should_stop()` does.
"""
import asyncio
from collections.abc import Awaitable, Callable
from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import async_to_sync

from .exceptions import JobCancelled

# How often a running coroutine's stop flag is looked at: the longest a cancel, a timeout or
# a shutdown waits before the coroutine is cancelled (it costs nothing while the task runs).
STOP_POLL_SECONDS = 0.1


def run(func: Callable[..., Awaitable[Any]], ctx, *args: Any, **kwargs: Any) -> Any:
    """Run `func(*args, **kwargs)` to its end on an event loop of its own, from a sync thread
    (the executor's), cancelling it when `ctx` is asked to stop. Returns its return value;
    raises what it raises, or `JobCancelled` when it was stopped."""
    return async_to_sync(_until_done_or_stopped)(func, ctx, args, kwargs)


async def _until_done_or_stopped(func, ctx, args, kwargs):
    running = asyncio.ensure_future(func(*args, **kwargs))
    while True:
        done, _ = await asyncio.wait({running}, timeout=STOP_POLL_SECONDS)
        if done:
            return running.result()
        if ctx.should_stop():
            running.cancel()
            try:
                await running
            except asyncio.CancelledError:
                pass
            raise JobCancelled(ctx.stop_reason or "stop requested")


def sync_handler(func: Callable[..., Any]) -> Callable[..., Any]:
    """What the executor calls for a handler: the handler itself if it is a plain function;
    for an `async def` handler, a function that runs it with `run` (its `ctx` first)."""
    if not iscoroutinefunction(func):
        return func

    def call(ctx, payload):
        return run(func, ctx, ctx, payload)

    call.__wrapped__ = func  # type: ignore[attr-defined]
    return call
