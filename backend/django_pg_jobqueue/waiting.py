"""Waiting for a job's outcome: `wait()` and `await_result()`.

A producer that enqueued a job may wait for it: `wait(job, timeout=...)` returns the job's
result once it succeeded, raises `JobFailed` (with the job's last error) once it failed for
good or was cancelled, and `WaitTimeout` when the timeout passed first, changing nothing.

The worker's statements that write an outcome (sql.COMPLETE_MANY, sql.FAIL, an operator's
cancel) send one NOTIFY each on `sql.OUTCOMES_CHANNEL`, the finished ids in its payload. Each
process has at most one connection that LISTENs for them, whatever the number of waiters:
a daemon thread (`_Listener`), started on the first wait, with a psycopg connection of its own
(db.listen_connection_params: JOB_LISTEN_DATABASE_URL past a transaction pooler). Waiters
register their job's id with it and sleep on an event it sets; each then reads its job again
in one short autocommit statement, so that a waiter never holds a transaction open.

Nothing is missed: a waiter reads its job after registering (an outcome written before the
LISTEN began is seen then), the listener wakes every waiter when it (re)connects (NOTIFYs
sent while it was away are lost), and every waiter reads its job again at least every
RECHECK_SECONDS even with the LISTEN up (outcomes no NOTIFY reports: a lease expired for
good, a dependency's failure cancelling its dependants). With JOB_LISTEN_NOTIFY false, or
while the LISTEN connection is down, waiters poll every POLL_SECONDS instead.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

import psycopg
from asgiref.sync import sync_to_async

from . import conf, db, shards, sql
from .exceptions import JobFailed, JobNotFound, WaitTimeout

log = logging.getLogger("django_pg_jobqueue.waiting")

POLL_SECONDS = 0.5  # between reads while no LISTEN wakes the waiter
RECHECK_SECONDS = 5.0  # between reads with the LISTEN up: outcomes no NOTIFY reports
IDLE_SECONDS = 30.0  # the listener closes its connection after this long without waiters
APPLICATION_NAME = "jobqueue-waits"  # the listening connection's, in pg_stat_activity

__all__ = ["wait", "await_result", "POLL_SECONDS", "RECHECK_SECONDS"]


class _Listener:
    """The process's one LISTEN on the outcomes channel, shared by all its waiters.

    A waiter registers a wake-up callable under its job's id; a NOTIFY naming the id calls it
    (a `*` payload, or a reconnection, calls them all). The thread starts on the first
    registration and ends, closing its connection, once no waiter is left for IDLE_SECONDS."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set] = {}
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()

    def register(self, job_id: int, wake) -> None:
        with self._lock:
            self._waiters.setdefault(job_id, set()).add(wake)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="jobqueue-waits",
                                                daemon=True)
                self._thread.start()

    def unregister(self, job_id: int, wake) -> None:
        with self._lock:
            wakes = self._waiters.get(job_id)
            if wakes is not None:
                wakes.discard(wake)
                if not wakes:
                    del self._waiters[job_id]

    def _wake(self, payload: str | None) -> None:
        with self._lock:
            if payload is None or payload == "*":
                wakes = [w for ws in self._waiters.values() for w in ws]
            else:
                wakes = []
                for part in payload.split(","):
                    ws = self._waiters.get(int(part)) if part.isdigit() else None
                    if ws:
                        wakes.extend(ws)
        for wake in wakes:
            wake()

    def _idle(self) -> bool:
        with self._lock:
            if self._waiters:
                return False
            self._thread = None  # the next register() starts a new thread
            return True

    def _run(self) -> None:
        idle_since: float | None = None
        delay = 0.5
        while True:
            try:
                params = db.listen_connection_params(APPLICATION_NAME)
                with psycopg.connect(**params, autocommit=True) as conn:
                    conn.execute(sql.LISTEN_OUTCOMES)
                    self.connected.set()
                    delay = 0.5
                    self._wake(None)  # NOTIFYs sent before the LISTEN: every waiter reads again
                    while True:
                        for note in conn.notifies(timeout=1.0):
                            self._wake(note.payload)
                        with self._lock:
                            busy = bool(self._waiters)
                        if busy:
                            idle_since = None
                        elif idle_since is None:
                            idle_since = time.monotonic()
                        elif time.monotonic() - idle_since > IDLE_SECONDS and self._idle():
                            self.connected.clear()
                            return
            except Exception as exc:  # noqa: BLE001 - the waiters poll meanwhile
                self.connected.clear()
                self._wake(None)
                log.warning("waits: LISTEN %s failed (%s); waiters poll meanwhile",
                            sql.OUTCOMES_CHANNEL, exc)
                if self._idle():
                    return
                time.sleep(delay)
                delay = min(delay * 2, 10.0)


_listener = _Listener()


def _job_id(job: Any) -> int:
    """A Job's id, a Django task's TaskResult's (its `id`, the job's id as a string), or an id."""
    job_id = getattr(job, "pk", None)
    if job_id is None:
        job_id = getattr(job, "id", job)
    try:
        return int(job_id)
    except (TypeError, ValueError):
        raise JobNotFound(job_id) from None


def _shard_of(job_id: int) -> str | None:
    """The shard of JOB_SHARDS that holds the job, or None: JOB_DATABASE."""
    settings = conf.get()
    if not settings.SHARDS:
        return None
    alias = shards.alias_for_job_id(job_id)
    return None if alias == settings.DATABASE else alias


def _listening(job_id: int) -> bool:
    """Whether the process's LISTEN hears the job's outcome: not a shard's job (the listener
    is JOB_DATABASE's), which is read again every POLL_SECONDS instead."""
    return conf.get().LISTEN_NOTIFY and _shard_of(job_id) is None


def _read(job_id: int) -> tuple[bool, Any]:
    """(finished, result) of the job, read in one autocommit statement; raises JobFailed for a
    job that failed for good or was cancelled, JobNotFound for one that does not exist."""
    with db.on_database(_shard_of(job_id)):
        return _read_here(job_id)


def _read_here(job_id: int) -> tuple[bool, Any]:
    connection = db.queue_connection()
    if connection.in_atomic_block:
        raise RuntimeError(
            "wait() inside a transaction: the job is not visible to workers until it commits, "
            "and waiting would hold the transaction open. Wait after the commit "
            "(transaction.on_commit, or outside atomic()).")
    with connection.cursor() as cur:
        cur.execute(sql.JOB_OUTCOME, [job_id])
        row = cur.fetchone()
    if row is None:
        raise JobNotFound(job_id)
    status, result, error = row
    if status == "succeeded":
        return True, None if result is None else json.loads(result)
    if status in ("failed", "cancelled"):
        raise JobFailed(job_id, status, error or "")
    return False, None


def _pause(job_id: int, listening: bool, deadline: float | None, now: float,
           timeout: float | None) -> float:
    """How long a waiter sleeps before it reads its job again (woken sooner by a NOTIFY):
    RECHECK_SECONDS with the LISTEN up, POLL_SECONDS without, never past `deadline` (on the
    clock `now` is read from); WaitTimeout once the deadline has passed."""
    pause = (RECHECK_SECONDS if listening and _listener.connected.is_set() else POLL_SECONDS)
    if deadline is None:
        return pause
    left = deadline - now
    if left <= 0:
        raise WaitTimeout(job_id, timeout or 0.0)
    return min(pause, left)


def wait(job: Any, *, timeout: float | None = None) -> Any:
    """Wait for the job's outcome (a Job, a Django task's TaskResult, or an id): return its
    result (a task's return value) once it succeeded,
    raise JobFailed once it failed for good or was cancelled, WaitTimeout after `timeout`
    seconds (None: no limit) without changing the job. Not inside a transaction."""
    job_id = _job_id(job)
    deadline = None if timeout is None else time.monotonic() + timeout
    woken = threading.Event()
    listening = _listening(job_id)
    if listening:
        _listener.register(job_id, woken.set)
    try:
        while True:
            finished, result = _read(job_id)  # after registering: nothing is missed
            if finished:
                return result
            woken.wait(_pause(job_id, listening, deadline, time.monotonic(), timeout))
            woken.clear()
    finally:
        if listening:
            _listener.unregister(job_id, woken.set)


async def await_result(job: Any, *, timeout: float | None = None) -> Any:
    """`wait()` for async code: `await await_result(job, timeout=...)`. The coroutine sleeps on
    the event loop (no thread held while it waits); each read runs in a thread."""
    job_id = _job_id(job)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    woken = asyncio.Event()

    def wake() -> None:  # from the listener's thread
        loop.call_soon_threadsafe(woken.set)

    read = sync_to_async(_read, thread_sensitive=False)
    listening = await sync_to_async(_listening)(job_id)
    if listening:
        _listener.register(job_id, wake)
    try:
        while True:
            finished, result = await read(job_id)
            if finished:
                return result
            pause = _pause(job_id, listening, deadline, loop.time(), timeout)
            try:
                await asyncio.wait_for(woken.wait(), pause)
            except asyncio.TimeoutError:
                pass
            woken.clear()
    finally:
        if listening:
            _listener.unregister(job_id, wake)
