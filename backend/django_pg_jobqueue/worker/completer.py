"""The completer: records successes in batches, each row still fenced by its lease token.

Executors hand a finished job over and go back to work; the completer writes whatever has
piled up in one statement (group commit: the busier the pool, the bigger the batch)."""
import logging
import queue
import threading
import time

from django.db import close_old_connections, connection

from ..services.lifecycle import Completion, complete_many
from .base import CONNECTION_ERRORS, Backoff, RateLimitedLog
from .held import HeldJobs

log = logging.getLogger("django_pg_jobqueue.worker")  # lifecycle lines share the worker logger


class Completer(threading.Thread):
    MAX_BATCH = 500

    def __init__(self, held: HeldJobs, on_done=None):
        super().__init__(name="completer", daemon=True)
        self.held = held
        self.inbox: queue.SimpleQueue[Completion | None] = queue.SimpleQueue()
        self.on_done = on_done  # callback([(job_id, status, run_seconds), ...]) per batch
        self.refused = 0
        self.completed = 0
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()

    def submit(self, completion: Completion) -> None:
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self.inbox.put(completion)

    def wait_idle(self, timeout: float) -> bool:
        return self._idle.wait(timeout)

    def stop(self) -> None:
        self.inbox.put(None)

    def run(self) -> None:
        errors, backoff = RateLimitedLog(log), Backoff()
        stopping = False
        batch: list[Completion] = []
        try:
            while not (stopping and not batch):
                if not batch:
                    item = self.inbox.get()
                    if item is None:
                        stopping = True
                        continue
                    batch.append(item)
                while len(batch) < self.MAX_BATCH:
                    try:
                        item = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stopping = True
                        break
                    batch.append(item)
                try:
                    close_old_connections()
                    self.flush(batch)
                    backoff.reset()
                except CONNECTION_ERRORS as exc:
                    # Keep the batch: the leases are still renewed while we hold the jobs,
                    # so the completion is retried when the database is back.
                    errors.error("completer: database unavailable: %s", exc)
                    connection.close()
                    time.sleep(backoff.next_delay())
                    continue
                except Exception:
                    log.exception("completer: unexpected error; retrying the batch")
                    time.sleep(backoff.next_delay())
                    continue
                with self._lock:
                    self._pending -= len(batch)
                    if self._pending == 0:
                        self._idle.set()
                batch = []
        finally:
            connection.close()

    def flush(self, batch: list[Completion]) -> None:
        keys = [(c.job_id, c.lease_token) for c in batch]
        self.held.mark_finishing_many(keys)
        done, refused = complete_many(batch)
        self.completed += len(done)
        self.refused += len(refused)
        self.held.discard_many(keys)
        # One line per success is DEBUG: at thousands of jobs a second, formatting and writing
        # it cost more CPU than the job (the `succeeded` event records each one anyway).
        # Failures, retries and lost leases stay at INFO and above.
        if self.on_done and done:
            self.on_done(done)
        if not log.isEnabledFor(logging.DEBUG):
            return
        by_id = {c.job_id: c for c in batch}
        for job_id, status, run_seconds in done:
            c = by_id[job_id]
            log.debug("%s job=%s type=%s attempt=%s worker=%s in %.3fs", status, job_id,
                      c.job_type, c.attempt, c.worker_id, run_seconds,
                      extra={"job_id": job_id, "job_type": c.job_type, "attempt": c.attempt,
                             "worker_id": c.worker_id, "status": status,
                             "run_seconds": float(run_seconds)})
