"""The completer: records successes in batches, each row still fenced by its lease token.

Executors hand a finished job over and go back to work; the completer writes whatever has
piled up in one statement (group commit: the busier the pool, the bigger the batch).

One row must never block the others: when the batch statement fails for any reason but an
outage, the batch is written row by row (`write_completions`). A row the database still
refuses after WRITE_ATTEMPTS tries fails its job for good ("the handler's result could not be
stored", reason `bad_result`); if even that write is refused, the job is released to lease
expiry (no longer renewed; the reaper takes it). Through an outage the rows are kept and
retried, their leases renewed meanwhile, as before. A row another transaction holds locked
(sql.COMPLETE_MANY skips it) stays pending, renewed, and is tried again every
BUSY_RETRY_SECONDS: the rest of the batch, and the batches after it, do not wait for it."""
from __future__ import annotations

import logging
import queue
import threading
import time

from django.db import close_old_connections

from .. import storable
from ..db import queue_connection, return_worker_connection, savepointed, use_worker_pool
from ..engine import Completion, Engine, default_engine
from ..exceptions import LeaseLost
from .base import CONNECTION_ERRORS, Backoff, RateLimitedLog
from .executor import WRITE_ATTEMPTS
from .held import Held, HeldJobs

log = logging.getLogger("django_pg_jobqueue.worker")  # lifecycle lines share the worker logger


def write_completions(batch: list[Completion], held: HeldJobs, engine: Engine) -> list[tuple]:
    """Write the successes in `batch` and return the (job id, final status, run seconds) rows
    of the jobs it ended (run seconds None for a job failed because its result was refused).

    Each completion written, refused for a lost lease, or given up on is removed from `batch`
    and from `held`; an outage error propagates with the rest still in `batch`, to retry."""
    keys = [(c.job_id, c.lease_token) for c in batch]
    held.mark_finishing_many(keys)
    try:
        done, refused = savepointed(engine.complete_many, batch)
    except CONNECTION_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad row fails the statement: isolate it
        log.warning("completer: a batch of %d completion(s) was refused (%s); writing them one "
                    "by one", len(batch), storable.describe_exception(exc))
    else:
        _keep_busy(batch, done, refused, held)
        return done
    done, busy = [], []
    while batch:
        c = batch.pop(0)
        written = _write_one(c, engine)
        if written is None:
            busy.append(c)
            continue
        done.extend(written)
        held.discard(c.job_id, c.lease_token)
    if busy:
        held.mark_finishing_many([(c.job_id, c.lease_token) for c in busy], False)
        batch.extend(busy)
    return done


def _keep_busy(batch: list[Completion], done: list[tuple], refused: list[Completion],
               held: HeldJobs) -> None:
    """After a batch written: `batch` keeps only the completions whose rows another
    transaction held locked (neither written nor refused), still held, to write again; the
    rest leave it and `held`."""
    if len(done) + len(refused) == len(batch):
        held.discard_many([(c.job_id, c.lease_token) for c in batch])
        batch.clear()
        return
    answered = {row[0] for row in done} | {c.job_id for c in refused}
    finished = [c for c in batch if c.job_id in answered]
    held.discard_many([(c.job_id, c.lease_token) for c in finished])
    batch[:] = [c for c in batch if c.job_id not in answered]
    held.mark_finishing_many([(c.job_id, c.lease_token) for c in batch], False)


def _write_one(c: Completion, engine: Engine) -> list[tuple] | None:
    """Write one completion, or fail its job if its result cannot be stored: the rows it
    ended; None when its row is locked by another transaction (to write again later)."""
    refused: BaseException | None = None
    for attempt in range(WRITE_ATTEMPTS):
        try:
            done, lost = savepointed(engine.complete_many, [c])
            if not done and not lost:
                return None
            return done
        except CONNECTION_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001
            refused = exc
            time.sleep(0.05 * (attempt + 1))
    error = ("the handler's result could not be stored: "
             + storable.describe_exception(refused))
    log.warning("job=%s: %s; failing it", c.job_id, error,
                extra={"job_id": c.job_id, "job_type": c.job_type, "attempt": c.attempt,
                       "worker_id": c.worker_id})
    # The failure with the database's message, then (that refused too) without it: the
    # message may quote the value refused.
    textless = ("the handler's result could not be stored: the database refused it "
                f"({type(refused).__name__})")
    for message in (error, textless):
        for attempt in range(WRITE_ATTEMPTS):
            try:
                status, _ = savepointed(engine.fail, c.job_id, c.lease_token, worker_id=c.worker_id,
                                        error=message, permanent=True, reason="bad_result")
                return [(c.job_id, status, None)]
            except LeaseLost:
                return []
            except CONNECTION_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001
                refused = exc
                time.sleep(0.05 * (attempt + 1))
    log.error("job=%s: neither its result nor its failure could be written (%s); no longer "
              "renewing it: the reaper takes it at lease expiry", c.job_id,
              storable.describe_exception(refused))
    return []


def _bytes(batch: list[Completion]) -> int:
    return sum(len(c.result_json or "") for c in batch)


class Completer(threading.Thread):
    MAX_BATCH = 500
    MAX_BATCH_BYTES = 8 * 1024 * 1024  # of results' JSON: a batch of big results is cut short
    IDLE_RETURN_SECONDS = 0.1  # with nothing to write this long, its connection goes back
    # A completion whose row another transaction holds locked is not waited for (the rest of
    # the batch is written): it stays, and is tried again this often, with what came since.
    BUSY_RETRY_SECONDS = 0.2
    # Flow control: while this many successes wait to be written, the pool's lanes claim
    # nothing more (`has_room`). The completer is the pool's one writer of successes; when it
    # falls behind (a slow disk, a stall of the server), claiming on would only pile up jobs
    # run but not recorded, each a lease to renew, until the renewals themselves come too
    # late and the leases expire: the soak's churn, where every job ran twice and none ended.
    # Bounded in bytes of results too: a thousand results of JOB_MAX_RESULT_BYTES (1 MB by
    # default) would otherwise be held in memory at once.
    MAX_PENDING = 2 * MAX_BATCH
    MAX_PENDING_BYTES = 4 * MAX_BATCH_BYTES

    def __init__(self, held: HeldJobs, on_done=None, engine: Engine | None = None):
        super().__init__(name="completer", daemon=True)
        self.held = held
        self.engine = engine or default_engine()
        self.inbox: queue.SimpleQueue[Completion | None] = queue.SimpleQueue()
        self.on_done = on_done  # callback([(job_id, status, run_seconds), ...]) per batch
        self.refused = 0
        self.completed = 0
        self._idle = threading.Event()
        self._idle.set()
        self._room = threading.Event()  # set while fewer than MAX_PENDING wait
        self._room.set()
        self._pending = 0
        self._pending_bytes = 0  # of the pending results' JSON
        self._lock = threading.Lock()

    def submit(self, completion: Completion, held: Held | None = None) -> None:
        """Queue a success; from now on the completer answers for `held` (the watchdog)."""
        if held is not None:
            held.owner = self
        with self._lock:
            self._pending += 1
            self._pending_bytes += len(completion.result_json or "")
            if self._pending == 1:  # `_idle` is set exactly while nothing is pending (this
                self._idle.clear()  # lock keeps the two together): a busy pool skips its lock
            if self._room.is_set() and self._full():
                self._room.clear()
        self.inbox.put(completion)

    def _full(self) -> bool:
        return (self._pending >= self.MAX_PENDING
                or self._pending_bytes >= self.MAX_PENDING_BYTES)

    def has_room(self, timeout: float = 0.0) -> bool:
        """Whether fewer than MAX_PENDING successes, with fewer than MAX_PENDING_BYTES of
        results, wait to be written (waiting up to `timeout` for the completer to catch up):
        the lanes claim only then."""
        return self._room.is_set() or (timeout > 0 and self._room.wait(timeout))

    def owns(self, held: Held) -> bool:
        return self.is_alive()

    def wait_idle(self, timeout: float) -> bool:
        return self._idle.wait(timeout)

    def stop(self) -> None:
        self.inbox.put(None)

    def _settled(self, n: int, nbytes: int) -> None:
        with self._lock:
            self._pending -= n
            self._pending_bytes -= nbytes
            if self._pending == 0:
                self._idle.set()
            if not self._full():
                self._room.set()

    def run(self) -> None:
        errors, backoff = RateLimitedLog(log), Backoff()
        stopping = False
        batch: list[Completion] = []
        use_worker_pool()  # a connection of the pool's while there is work (db.py)
        try:
            while not (stopping and not batch):
                if batch:  # completions whose rows were locked: again, with what came since
                    try:
                        item = self.inbox.get(timeout=self.BUSY_RETRY_SECONDS)
                    except queue.Empty:
                        pass
                    else:
                        if item is None:
                            stopping = True
                        else:
                            batch.append(item)
                else:
                    try:
                        item = self.inbox.get(timeout=self.IDLE_RETURN_SECONDS)
                    except queue.Empty:
                        return_worker_connection()  # idle: back to the pool until work comes
                        item = self.inbox.get()
                    if item is None:
                        stopping = True
                        continue
                    batch.append(item)
                size = _bytes(batch)
                while len(batch) < self.MAX_BATCH and size < self.MAX_BATCH_BYTES:
                    try:
                        item = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stopping = True
                        break
                    batch.append(item)
                    size += len(item.result_json or "")
                before, before_bytes = len(batch), size
                try:
                    close_old_connections()
                    self.flush(batch)
                    backoff.reset()
                except CONNECTION_ERRORS as exc:
                    # Keep the rows not written: the leases are still renewed while we hold
                    # the jobs, so the completion is retried when the database is back.
                    errors.error("completer: database unavailable: %s", exc)
                    queue_connection().close()
                    self._settled(before - len(batch), before_bytes - _bytes(batch))
                    time.sleep(backoff.next_delay())
                    continue
                except Exception:
                    # A fault of ours. Retrying the same batch could fail forever: release its
                    # jobs to lease expiry instead (the reaper takes them).
                    log.exception("completer: unexpected error; %d job(s) left to lease expiry",
                                  len(batch))
                    self.held.discard_many([(c.job_id, c.lease_token) for c in batch])
                    batch.clear()
                self._settled(before - len(batch), before_bytes - _bytes(batch))
        finally:
            return_worker_connection()
            queue_connection().close()

    def flush(self, batch: list[Completion]) -> None:
        """Write `batch` (emptied as it is written; see write_completions)."""
        submitted = list(batch)
        done = write_completions(batch, self.held, self.engine)
        written = submitted[:len(submitted) - len(batch)]
        self.completed += len(done)
        self.refused += len(written) - len(done)
        # One line per success is DEBUG: at thousands of jobs a second, formatting and writing
        # it cost more CPU than the job (the `succeeded` event records each one anyway).
        # Failures, retries and lost leases stay at INFO and above.
        if self.on_done and done:
            try:
                self.on_done(done)
            except Exception:
                log.exception("completer: the on_done callback failed")
        if not log.isEnabledFor(logging.DEBUG):
            return
        by_id = {c.job_id: c for c in written}
        for job_id, status, run_seconds in done:
            c = by_id[job_id]
            log.debug("%s job=%s type=%s attempt=%s worker=%s in %.3fs", status, job_id,
                      c.job_type, c.attempt, c.worker_id, run_seconds or 0.0,
                      extra={"job_id": job_id, "job_type": c.job_type, "attempt": c.attempt,
                             "worker_id": c.worker_id, "status": status,
                             "run_seconds": float(run_seconds or 0.0)})
