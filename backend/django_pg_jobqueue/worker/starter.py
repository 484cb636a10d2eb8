"""The starter: records that executor threads took prefetched jobs, before their handlers run.

A prefetched job is claimed under the prefetch buffer's id (`<process>-prefetch`) and keeps it
while it waits. An executor thread that takes one must have the database name it the owner
(sql.ADOPT_PREFETCHED_IF_RUNNING) before the handler starts, and wait for that: then a job
whose lease expires under a prefetch id provably never started, and the reaper gives it back
uncharged (sql.REAP) instead of charging, or failing, a job that never ran when its process
dies. A handler that kills its process was adopted first, so it is charged and cannot loop.

Group commit, as the completer does for successes: the threads that took a prefetched job
meanwhile are recorded in one statement, so the write costs a round trip of waiting per job,
not a transaction per job (one commit a job took a drain of no-op jobs from 7,700 to 2,600
jobs/s). `start_job()` blocks its caller until its batch is written.

When something that outlives the process already knows the start (its supervisor, or its
start witness: witness.py), the thread does not wait: `note_start()` only queues the record,
written with the next batch, which then only says which thread runs the job (its owner on the
dashboard, and the thread a lease expiry names)."""
from __future__ import annotations

import logging
import threading

from django.db import close_old_connections

from ..db import queue_connection, return_worker_connection, use_worker_pool
from ..engine import Engine, default_engine
from .base import CONNECTION_ERRORS

log = logging.getLogger("django_pg_jobqueue.worker")


class StartNotRecorded(Exception):
    """The start of a prefetched job could not be written (the database is away, or the
    starter stopped): its handler must not run."""


class _Batch:
    """The starts written together, and the event that wakes all their callers at once."""
    __slots__ = ("items", "noted", "done", "adopted", "error")

    def __init__(self):
        self.items: list[tuple] = []  # the starts a caller waits for
        self.noted: list[tuple] = []  # the starts nobody waits for (note_start)
        self.done = threading.Event()
        self.adopted: set[int] = set()
        self.error: BaseException | None = None


class Starter(threading.Thread):
    MAX_BATCH = 500
    IDLE_RETURN_SECONDS = 0.1  # with nothing to write this long, its connection goes back
    WAIT_SECONDS = 30.0  # a caller gives up on a batch this slow (the statement timeout's order)
    # Starts nobody waits for are gathered this long before they are written, and by then
    # most jobs of a few milliseconds have succeeded: their record is left out (`succeeded`).
    NOTE_SECONDS = 0.005

    def __init__(self, engine: Engine | None = None, succeeded=None):
        super().__init__(name="starter", daemon=True)
        self.engine = engine or default_engine()
        # Whether a noted start's job (its Held) was handed to the completer as a success, or
        # None: that statement ends the job and names its thread, so its start is not written.
        # Any other end (a failure, a snooze, a handler's LeaseLost that leaves the row
        # running) keeps it: the row must say the job started before its lease can expire.
        self.succeeded = succeeded
        self._lock = threading.Condition(threading.Lock())
        self._next = _Batch()  # the batch new starts join; written once the current one is
        self._stopping = False

    def start_job(self, job_id: int, lease_token, worker_id: str) -> bool:
        """Record `worker_id` as the owner of prefetched job `job_id`, if it still runs under
        `lease_token`, and wait until that is committed. True: the handler may run; False: the
        lease was lost while the job waited. Raises StartNotRecorded if it cannot tell."""
        with self._lock:
            if self._stopping or not self.is_alive():
                raise StartNotRecorded("the starter is not running")
            batch = self._next
            batch.items.append((job_id, lease_token, worker_id))
            if len(batch.items) == 1:  # the first a caller waits for: no gathering time
                self._lock.notify()
        if not batch.done.wait(self.WAIT_SECONDS):
            raise StartNotRecorded(f"not written within {self.WAIT_SECONDS:g}s")
        if batch.error is not None:
            raise StartNotRecorded(str(batch.error)) from batch.error
        return job_id in batch.adopted

    def note_start(self, job_id: int, lease_token, worker_id: str, held=None) -> None:
        """Queue the record that `worker_id` runs prefetched job `job_id` without waiting for
        it (the start is witnessed: see the module's docstring). A record the starter cannot
        write is given up (logged): the witness answers for the start."""
        with self._lock:
            if self._stopping:
                return
            batch = self._next
            batch.noted.append((job_id, lease_token, worker_id, held))
            if len(batch.noted) == 1 and not batch.items:
                self._lock.notify()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify()

    def run(self) -> None:
        use_worker_pool()  # a connection of the pool's while there is work (db.py)
        try:
            while True:
                with self._lock:
                    if not self._pending() and not self._stopping \
                            and not self._lock.wait(self.IDLE_RETURN_SECONDS):
                        return_worker_connection()  # idle: back to the pool until work comes
                    while not self._pending() and not self._stopping:
                        self._lock.wait()
                    if not self._next.items and not self._stopping:
                        self._lock.wait(self.NOTE_SECONDS)  # noted only: gather (a caller
                    batch = self._next                      # that must wait cuts it short)
                    if not batch.items and not batch.noted:  # stopping, nothing left
                        return
                    self._next = _Batch()
                self._write(batch)
        finally:
            with self._lock:
                self._stopping = True
                batch = self._next
            batch.error = StartNotRecorded("the starter stopped")
            batch.done.set()  # no caller may wait for a write that will not come
            return_worker_connection()
            queue_connection().close()

    def _pending(self) -> bool:
        return bool(self._next.items or self._next.noted)

    def _write(self, batch: _Batch) -> None:
        """One statement for the batch; its callers are woken, with the answer or the error."""
        items = batch.items
        if batch.noted:
            succeeded = self.succeeded
            items = items + [(job_id, token, worker_id)
                             for job_id, token, worker_id, held in batch.noted
                             if held is None or succeeded is None or not succeeded(held)]
        if not items:
            batch.done.set()
            return
        try:
            close_old_connections()
            batch.adopted = self.engine.adopt_prefetched(items)
        except BaseException as exc:  # noqa: BLE001 - each caller decides; none may hang
            if isinstance(exc, CONNECTION_ERRORS):
                queue_connection().close()
            else:
                log.exception("starter: recording %d prefetched job(s)' start failed",
                              len(items))
            batch.error = exc
        batch.done.set()
