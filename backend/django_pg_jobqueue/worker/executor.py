"""An executor thread runs one job at a time, outside any transaction.

The pipeline for one job: hold it (the renewer now keeps its lease), resolve the handler,
run it, and record the outcome through a fenced write: success goes to the completer (batched),
a failure schedules a retry or fails the job, a snooze or cancel requeues or ends it. A write
refused because the lease was lost leaves a `lease_lost` event and nothing else."""
import json
import logging
import queue
import threading
import time
import traceback

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections

from .. import services, tracing
from ..context import Snooze
from ..exceptions import JobCancelled, LeaseLost, PermanentError
from ..registry import registry
from ..services import ClaimedJob
from ..services.lifecycle import Completion
from .base import CONNECTION_ERRORS, Backoff, RateLimitedLog
from .held import Held

log = logging.getLogger("django_pg_jobqueue.worker")


class Executor(threading.Thread):
    def __init__(self, pool, lane, worker_id: str):
        super().__init__(name=worker_id, daemon=True)
        self.pool, self.lane, self.worker_id = pool, lane, worker_id
        self.inbox: queue.SimpleQueue[tuple[ClaimedJob, Held | None] | None] = queue.SimpleQueue()
        self.idle = True
        self.current: Held | None = None
        self.errors = RateLimitedLog(log)

    def assign(self, job: ClaimedJob, held: Held | None = None) -> None:
        """Run `job` next; `held` is given for a prefetched job, already held by the lane."""
        self.idle = False
        self.inbox.put((job, held))

    def stop(self) -> None:
        self.inbox.put(None)

    def run(self) -> None:
        db = connections[DEFAULT_DB_ALIAS]  # this thread's own connection object
        try:
            while True:
                item = self.inbox.get()
                if item is None:
                    return
                job, held = item
                try:
                    while True:
                        if db.connection is not None:
                            # What Django does around a request: drop a connection that broke
                            # or outlived CONN_MAX_AGE. Most no-op jobs never open one.
                            close_old_connections()
                        self.execute(job, held)
                        # Next, a prefetched job if one waits: taken here, without a round
                        # trip through the dispatcher (which is woken to refill when low).
                        held = self._take_prefetched()
                        if held is None:
                            break
                        job = held.job
                except Exception:
                    log.exception("executor %s: unexpected error on job %s", self.worker_id, job.id)
                finally:
                    self.current = None
                    self.idle = True
                    self.lane.wake.set()
        finally:
            connection.close()

    def _take_prefetched(self) -> Held | None:
        if self.pool.stopping.is_set() or not len(self.lane.prefetched):
            return None
        held, refill = self.lane.prefetched.take()
        if refill:
            self.lane.wake.set()
        return held

    # -- the pipeline ------------------------------------------------------------------------
    def execute(self, job: ClaimedJob, held: Held | None = None) -> None:
        if held is None:
            held = Held.of(job, self.worker_id)
            self.pool.held.add(held)
        else:  # prefetched: held (and renewed) since the claim; from now on it is this thread's
            job.worker_id = held.ctx.worker_id = self.worker_id
        ctx = held.ctx
        self.current = held
        debug = log.isEnabledFor(logging.DEBUG)  # the per-job lines below are DEBUG
        if debug:
            log.debug("started job=%s type=%s attempt=%s/%s worker=%s", job.id, job.type,
                      job.attempt, job.max_attempts, self.worker_id, extra=self._log_fields(job))
        self.pool.stats.claimed(job)
        spec = registry.get(job.type)
        if spec is None:
            self._fail(job, f"no handler registered for job type {job.type!r}", None,
                       permanent=True, reason="unknown_type")
            return
        started = time.monotonic()
        try:
            if ctx.stop_reason is not None:  # cancelled or lost while it waited in a prefetch
                raise JobCancelled(ctx.stop_reason)
            result = tracing.run_handler(spec.func, ctx, job)
            result_json = json.dumps(result, allow_nan=False)  # checked here, stored as is
        except Snooze as snooze:
            seconds = snooze.seconds
            self._write(job, lambda: services.snooze(job.id, job.lease_token,
                                                     worker_id=self.worker_id, seconds=seconds))
            self.pool.held.discard(job.id, job.lease_token)
            log.info("snoozed job=%s for %ss", job.id, seconds, extra=self._log_fields(job))
        except LeaseLost:
            self.pool.held.discard(job.id, job.lease_token)
            services.record_lease_lost(job.id, job.lease_token, self.worker_id, "progress",
                                       "a fenced write from the handler was refused; it stopped",
                                       attempt=job.attempt)
            self.pool.stats.lease_lost(job)
        except JobCancelled:
            reason = ctx.stop_reason or "cancelled"
            if reason == "cancelled":
                # The fail statement sees cancel_requested_at and ends the job cancelled.
                self._fail(job, "cancelled while running", None, permanent=True, reason=reason)
            else:
                # Timed out, lease lost or released at shutdown: that path already recorded
                # the job's fate; this attempt has nothing left to write.
                self.pool.held.discard(job.id, job.lease_token)
                log.info("handler stopped job=%s reason=%s", job.id, reason,
                         extra=self._log_fields(job))
        except PermanentError as exc:
            self._fail(job, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                       permanent=True, reason="permanent")
        except (TypeError, ValueError) as exc:
            if "JSON serializable" in str(exc) or "Out of range float" in str(exc):
                self._fail(job, f"handler returned a result that is not JSON: {exc}", None,
                           permanent=True, reason="bad_result")
            else:
                self._fail(job, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        except Exception as exc:
            self._fail(job, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        else:
            self.pool.completer.submit(
                Completion(job.id, job.lease_token, self.worker_id, result, job.type, job.attempt,
                           result_json))
            if debug:
                log.debug("handler returned job=%s in %.4fs", job.id, time.monotonic() - started,
                          extra=self._log_fields(job))

    def _fail(self, job: ClaimedJob, error: str, tb: str | None, *, permanent: bool = False,
              reason: str = "error") -> None:
        def write():
            return services.fail(job.id, job.lease_token, worker_id=self.worker_id, error=error,
                                 traceback=tb, permanent=permanent, reason=reason)

        outcome = self._write(job, write)
        self.pool.held.discard(job.id, job.lease_token)
        if outcome is not None:
            status, delay = outcome
            self.pool.stats.failed(job, status)
            if status == "queued":
                log.info("retry scheduled job=%s type=%s attempt=%s in %.2fs: %s", job.id,
                         job.type, job.attempt, delay or 0, error,
                         extra=self._log_fields(job))
            else:
                log.warning("job=%s type=%s attempt=%s ended %s: %s", job.id, job.type,
                            job.attempt, status, error,
                            extra=self._log_fields(job))

    def _log_fields(self, job: ClaimedJob) -> dict:
        """The fields every log line about a job carries (JOB_LOG_FORMAT=json)."""
        return {"job_id": job.id, "job_type": job.type, "attempt": job.attempt,
                "worker_id": self.worker_id}

    def _write(self, job: ClaimedJob, write):
        """Run a fenced write, retrying through a database outage. LeaseLost ends it."""
        self.pool.held.mark_finishing(job.id, job.lease_token)
        backoff = Backoff()
        while True:
            try:
                return write()
            except LeaseLost:
                self.pool.stats.lease_lost(job)
                return None
            except CONNECTION_ERRORS as exc:
                self.errors.error("executor %s: database unavailable: %s", self.worker_id, exc)
                connection.close()
                if self.pool.hard_stop.is_set():
                    return None
                time.sleep(backoff.next_delay())
