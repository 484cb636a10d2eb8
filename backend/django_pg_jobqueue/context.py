"""JobContext: what a handler sees of its job and the worker running it."""
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, NoReturn

from asgiref.sync import sync_to_async

from . import storable
from .arguments import check_signal_name, check_wait_timeout, check_wake_time
from .compat import UTC
from .db import worker_connection
from .engine import Engine, default_engine
from .exceptions import JobCancelled, LeaseLost, Park, SignalTimedOut, Snooze, UnstorableResult

__all__ = ["JobContext", "Snooze"]  # Snooze lives in exceptions.py; importable here as before

_stop_events_lock = threading.Lock()
STEP_NAME_CHARS = 200  # models.JobStep.name's max_length
# The stop a worker's shutdown asks of the handlers still running past its grace period: named
# before it releases (or charges) their jobs, requested after (worker/pool.py).
SHUTDOWN = "shutdown"


class JobContext:
    def __init__(self, *, job_id: int, type: str, queue: str, attempt: int, max_attempts: int,
                 lease_token: uuid.UUID, worker_id: str, stop_event: threading.Event | None = None,
                 engine: Engine | None = None):
        self.job_id = job_id
        self.type = type
        self.queue = queue
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.lease_token = lease_token
        self.worker_id = worker_id
        # Created on first use: most jobs never wait and are never stopped, and an Event per
        # job is a measurable share of a no-op job's cost.
        self._stop_event = stop_event
        self.stop_reason: str | None = None
        # How progress and log lines reach the database: the worker's engine, like every other
        # write a worker makes (the default one when none is given).
        self.engine = engine or default_engine()
        # Read on first use (most handlers use neither): the results of the jobs this one was
        # enqueued after, and the steps its earlier attempts recorded.
        self._dependency_results: list | None = None
        self._recorded_steps: dict[str, Any] | None = None
        self._steps_run: set[str] = set()

    @property
    def _stop(self) -> threading.Event:
        if self._stop_event is None:
            with _stop_events_lock:
                if self._stop_event is None:
                    self._stop_event = threading.Event()
        return self._stop_event

    # -- signals from the worker ---------------------------------------------------------------
    def name_stop(self, reason: str) -> None:
        """The stop about to be requested, and why (the first reason given wins), before the
        handler is woken: the worker's shutdown writes the job's fate in between."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def request_stop(self, reason: str) -> None:
        self.name_stop(reason)
        self._stop.set()

    def should_stop(self) -> bool:
        """True once the job was cancelled, timed out, its lease was lost, or the worker is
        shutting down past its grace period. A well-behaved handler returns soon after."""
        event = self._stop_event
        return event is not None and event.is_set()

    def raise_if_should_stop(self) -> None:
        if self.should_stop():
            raise JobCancelled(self.stop_reason or "stop requested")

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early when asked to stop. Returns should_stop()."""
        return self._stop.wait(seconds)

    # -- writes (fenced by the lease token: raise LeaseLost when the lease is gone) --------------
    # In a worker they borrow one of the worker's pooled connections for the one statement
    # (db.worker_connection): the queue's bookkeeping, not the handler's own use of the
    # database, so a handler that only reports progress holds no connection, and the write
    # is seen at once, outside any transaction the handler has open.
    @contextmanager
    def _fenced_write(self) -> Iterator[None]:
        """One of the handler's fenced writes, on a worker's pooled connection. A write refused
        because the worker's shutdown gave this job up (it names the stop first, then releases
        or charges the job, then wakes the handler) is that stop, not a lost lease:
        JobCancelled with the stop's reason, as from ctx.raise_if_should_stop."""
        try:
            with worker_connection():
                yield
        except LeaseLost as refused:
            if self.stop_reason == SHUTDOWN:
                raise JobCancelled(self.stop_reason) from refused
            raise

    def progress(self, percent: int | None, message: str = "") -> None:
        with self._fenced_write():
            self.engine.record_progress(self.job_id, self.lease_token, worker_id=self.worker_id,
                                        percent=percent, message=message)

    def log(self, message: str, **data: Any) -> None:
        with self._fenced_write():
            self.engine.log_message(self.job_id, self.lease_token, worker_id=self.worker_id,
                                    message=message, data=data)

    # The same writes for an `async def` handler, which may not touch the database from its
    # event loop: they run on the executor thread that waits for the coroutine.
    async def aprogress(self, percent: int | None, message: str = "") -> None:
        """`progress()` for an `async def` handler: `await ctx.aprogress(50, "half way")`."""
        await sync_to_async(self.progress)(percent, message)

    async def alog(self, message: str, **data: Any) -> None:
        """`log()` for an `async def` handler: `await ctx.alog("sent", bytes=n)`."""
        await sync_to_async(self.log)(message, **data)

    def snooze(self, seconds: float) -> NoReturn:
        """Stop this attempt and run the job again in `seconds`, without spending an attempt."""
        raise Snooze(seconds)

    # -- what earlier jobs and attempts left (services/workflows.py) -----------------------------
    @property
    def dependency_results(self) -> list:
        """The results of the jobs this job was enqueued after (`after=[...]`), in the order
        `after` named them: a list, read once, on first use, in one query. None for a job that
        did not succeed (with after_failure="run") or no longer exists. Raises
        DependencyResultsTooLarge when they are, in all, over JOB_MAX_RESULT_BYTES. In an
        `async def` handler: `await ctx.adependency_results()`."""
        if self._dependency_results is None:
            with worker_connection():
                self._dependency_results = self.engine.dependency_results(self.job_id)
        return self._dependency_results

    async def adependency_results(self) -> list:
        """`dependency_results` for an `async def` handler."""
        return await sync_to_async(lambda: self.dependency_results)()

    def step(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` once per job, as its durable step `name`: its result is
        recorded, and on a later attempt of this job `step` returns the recorded result
        without calling `fn` again. The result follows a job result's rules (JSON, at most
        JOB_MAX_RESULT_BYTES, nested at most 64 deep; UnstorableResult otherwise) and comes
        back as JSON gives it (a tuple as a list). A step that raises records nothing, and the
        exception goes on as the handler's. A name is one step: a second `step` of the same
        name in one attempt raises ValueError. Raises LeaseLost (after recording) when this
        attempt no longer holds the job."""
        if not isinstance(name, str) or not name or len(name) > STEP_NAME_CHARS:
            raise ValueError(f"a step's name is a string of 1 to {STEP_NAME_CHARS} "
                             f"characters, not {name!r}"[:300])
        if name in self._steps_run:
            raise ValueError(f"step {name!r} already ran in this job: each step needs a name "
                             "of its own")
        if self._recorded_steps is None:
            with worker_connection():
                self._recorded_steps = self.engine.recorded_steps(self.job_id)
        self._steps_run.add(name)
        if name in self._recorded_steps:
            return self._recorded_steps[name]
        value = fn(*args, **kwargs)
        try:
            text = storable.encode_result(value)
        except UnstorableResult as exc:
            raise UnstorableResult(f"step {name!r}: {exc}") from None
        with self._fenced_write():
            result = self.engine.record_step(self.job_id, self.lease_token,
                                             worker_id=self.worker_id, name=name,
                                             attempt=self.attempt, result_json=text)
        self._recorded_steps[name] = result
        return result

    # -- durable waits (services/waits.py): the attempt ends, uncharged, and the job is parked ----
    def sleep_until(self, when: datetime) -> None:
        """Park the job until `when` (a timezone-aware datetime) without holding the worker's
        thread or spending an attempt: this attempt ends here (the call does not return), and
        the job runs again from the start of its handler once `when` has come, finding its
        recorded steps (`ctx.step`). Returns at once, without parking, when `when` has passed
        (on the database's clock): on the run after the sleep, the same call goes on."""
        check_wake_time(when)
        if when <= datetime.now(UTC):
            return
        with worker_connection():
            now = self.engine.database_now()
        if when <= now:
            return
        raise Park(until=when)

    def wait_for_signal(self, name: str, *, timeout: float | timedelta | None = None) -> Any:
        """The data of signal `name` sent to this job (`send_signal(job_id, name, data)`),
        at once when it was sent already (before this wait, too). Otherwise the job is parked
        until it is sent, without holding the worker's thread or spending an attempt: this
        attempt ends here, and the handler runs again from its start when the signal arrives,
        finding its recorded steps and then the signal's data here. `timeout` (seconds or a
        timedelta; None: wait for ever) counts from the job's first wait for `name`: once it
        has passed with no signal, this raises SignalTimedOut (a PermanentError: the job fails
        for good unless the handler catches it and decides). In an `async def` handler:
        `await ctx.await_for_signal(name, timeout=...)`."""
        check_signal_name(name)
        seconds = check_wait_timeout(timeout)
        with worker_connection():
            state = self.engine.signal_state(self.job_id, name)
        if state.sent:
            return state.data
        if state.timed_out:
            raise SignalTimedOut(self.job_id, name)
        raise Park(signal=name, timeout_seconds=seconds)

    async def asleep_until(self, when: datetime) -> None:
        """`sleep_until` for an `async def` handler."""
        await sync_to_async(self.sleep_until)(when)

    async def await_for_signal(self, name: str, *,
                               timeout: float | timedelta | None = None) -> Any:
        """`wait_for_signal` for an `async def` handler."""
        return await sync_to_async(self.wait_for_signal)(name, timeout=timeout)
