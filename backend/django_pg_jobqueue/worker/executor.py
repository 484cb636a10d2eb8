"""An executor thread runs one job at a time, outside any transaction.

The pipeline for one job (`JobRunner`, also what `django_pg_jobqueue.testing.drain` runs):
hold it (the renewer now keeps its lease), resolve the handler, for a prefetched job have its
start recorded and wait for that (worker/starter.py), run it, and record the outcome
through a fenced write: success goes to the completer (batched), a failure schedules a retry
or fails the job (and, once written, is told to JOB_ERROR_HOOKS: `_fail` is the one place that
writes and tells), a snooze or cancel requeues or ends it. A write refused because the lease
was lost leaves a `lease_lost` event and nothing else.

Nothing a handler returns or raises may stop the thread or leave its job running:
- every exception is the job's failure, `BaseException` included (`SystemExit`,
  `KeyboardInterrupt`, `GeneratorExit`: a handler's, since signals reach only the main
  thread), retried under the usual rules; `PermanentError` fails at once;
- the result is encoded here, after the handler returned (storable.encode_result): a result
  that cannot be stored fails the job for good, classified by where it failed, not by text;
- errors and tracebacks are made storable first (storable.py); a write the database still
  refuses is tried WRITE_ATTEMPTS times, then written without its text, and if even that
  fails the job is released to lease expiry (no longer renewed; the reaper takes it).

Connections (the worker's budget, db.py): the pipeline's own writes (a failure, a snooze, a
lost lease) borrow a connection from the worker's pool for the write only, and a success goes
to the completer, so the executor runs no SQL of its own for a handler that returns. What the
handler opens itself (the ORM, on any alias) is left as it was found, whatever the handler
did (hygiene.py):
- right after the handler, before anything about its job is written, an atomic block it
  entered and never left is rolled back and left, a raw transaction it left open (`BEGIN`,
  `SELECT ... FOR UPDATE` in one) is rolled back, and a connection that cannot be restored is
  closed; the job then fails (LEFT_OPEN, reason `transaction_left_open`, retried like any
  error) rather than report a success whose writes were rolled back;
- after each job, a connection kept for the next one that ran a session-changing statement
  (SET, set_config, advisory locks, ...) has its session reset (DISCARD ALL) and set up
  again; then, as Django does after a request, `close_old_connections()` closes it, or
  returns it to the project's pool (DATABASES OPTIONS "pool"), unless CONN_MAX_AGE keeps it;
  and a thread left without a job for IDLE_CLOSE_SECONDS closes what it still holds.
A thread whose handlers never touch the database never opens a connection and never looks
(`_opened_since_last_look`); with CONN_MAX_AGE = 0 or a pool, one whose handlers do holds
one only while a job runs."""
from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass

from django.db import close_old_connections, connections
from django.db.backends.signals import connection_created

from .. import conf, middleware, storable
from ..conf import DJANGO_TASK_TYPE
from ..db import WORKER_ALIAS, queue_connection, savepointed, worker_connection
from ..engine import ClaimedJob, Completion, Engine, default_engine
from ..exceptions import JobCancelled, LeaseLost, Park, PermanentError, Snooze
from ..registry import HandlerSpec, is_task_job, registry
from ..retries import RetryPolicy
from . import forks, hygiene
from .base import CONNECTION_ERRORS, Backoff, RateLimitedLog
from .held import Held, HeldJobs
from .starter import StartNotRecorded
from .unknown_types import UnknownTypes

log = logging.getLogger("django_pg_jobqueue.worker")

# How often a chunk handler's executor, holding fewer jobs than its chunk_size, claims again
# while its chunk_wait_seconds run (a tenth of the wait, within 10 ms to this).
CHUNK_POLL_SECONDS = 0.1
WRITE_ATTEMPTS = 3  # tries of a write the database refuses (an outage is waited out instead)
MAX_SNOOZE_SECONDS = 366 * 24 * 3600
# Why a job whose handler left a transaction open failed (hygiene.tidy names what was open).
LEFT_OPEN = "the handler left a transaction open ({}): its uncommitted writes were rolled back"
LEFT_OPEN_ADVICE = (". Commit or roll back every transaction a handler opens (use "
                    "transaction.atomic() as a `with` block)")


class OutcomeNotWritten(Exception):
    """The database refused an outcome's write WRITE_ATTEMPTS times (not an outage)."""

    def __init__(self, cause: BaseException):
        self.cause = cause
        super().__init__(storable.describe_exception(cause))


@dataclass
class RunResult:
    """What one run of the pipeline recorded. `status`: succeeded, cancelled, queued (a retry
    is scheduled), failed, snoozed, parked, lease_lost, stopped (timed out, lost or released while it
    ran: recorded elsewhere), submitted (handed to the completer), or abandoned (its outcome
    could not be written: left to lease expiry)."""
    status: str
    error: str | None = None
    exception: BaseException | None = None
    reason: str | None = None


_LOST = object()


class ChunkAnswerInvalid(Exception):
    """A chunk handler's answer is not a list with one item per job it was given: each of
    its jobs fails for good (reason `bad_result`), as for a result that cannot be stored."""


def chunk_outcomes(answer: object, raised: BaseException | None, n: int
                   ) -> list[tuple[object, BaseException | None]]:
    """Each of a chunk's `n` jobs' (result, exception), from its handler's one call: a call
    that raised is every job's failure; else the answer is a list (or tuple) of `n` items, in
    the order of the jobs given, each the job's result or an exception instance, which is
    that job's as if its own handler had raised it (retried by its policy; PermanentError,
    ctx.snooze's Snooze and a durable wait's Park too)."""
    if raised is not None:
        return [(None, raised)] * n
    if not isinstance(answer, list | tuple) or len(answer) != n:
        got = (f"a {type(answer).__name__} of {len(answer)}"
               if isinstance(answer, list | tuple) else f"{type(answer).__name__}")
        invalid = ChunkAnswerInvalid(f"a chunk handler returns a list of one item per job "
                                     f"it was given ({n}), not {got}")
        return [(None, invalid)] * n
    return [(None, item) if isinstance(item, BaseException) else (item, None)
            for item in answer]


def _task_policy(job: ClaimedJob) -> RetryPolicy | None:
    from ..tasks.options import retry_policy_for

    return retry_policy_for(job.payload)


class JobRunner:
    """The pipeline for one claimed job, without threads.

    `complete(completion, held)` records a success: the pool's completer queues it (and
    returns None), drain writes it at once (and returns the final status).
    `start_prefetched(job id, lease token, worker id)` records that this runner took a
    prefetched job, before its handler runs (the pool's starter). `owner` is who
    answers for a job while this runner runs it (the executor thread; None in drain).
    `hard_stop`: set when the pool gives up retrying writes through an outage; None (drain):
    outage errors propagate at once. `keep_callers_transaction` (drain): the thread may be in
    its caller's transaction (a test's), which the handler's cleanup leaves alone; otherwise
    its connections are tidy before each job (hygiene.py)."""

    def __init__(self, worker_id: str, *, held: HeldJobs, stats, complete, owner=None,
                 hard_stop: threading.Event | None = None, keep_callers_transaction=False,
                 engine: Engine | None = None, unknown_types: UnknownTypes | None = None,
                 start_prefetched=None):
        self.worker_id, self.held, self.stats, self.complete = worker_id, held, stats, complete
        # Records, and waits for, a prefetched job's start (worker/starter.py); None (drain):
        # this runner is never given a prefetched job.
        self.start_prefetched = start_prefetched
        self.engine = engine or default_engine()
        # The types this process gives back for want of a handler (the pool's, shared by its
        # lanes; drain's own): the claim leaves them out for a while.
        self.unknown_types = unknown_types if unknown_types is not None else UnknownTypes()
        self.owner, self.hard_stop = owner, hard_stop
        self.keep_callers_transaction = keep_callers_transaction
        # Whether this thread may hold a connection from an earlier job (the executor keeps
        # it up to date): if not, and the handler opened none, there is nothing to tidy.
        self.may_hold_connection = keep_callers_transaction
        self.current: Held | None = None
        # A chunk handler's jobs while it runs (run_chunk), and their Held objects' ids.
        self.chunk: list[Held] = []
        self.chunk_keys: set[int] = set()
        self.policy: RetryPolicy | None = None  # the running job's type's retry policy
        self.errors = RateLimitedLog(log)

    def run(self, job: ClaimedJob, held: Held | None = None,
            spec: HandlerSpec | None = None) -> RunResult:
        """Run `job` to its outcome; `spec`: its type's handler, when the caller looked it up
        already (None: looked up here)."""
        held = self._hold(job, held)
        self.current = held
        self.policy = None
        try:
            return self._run(job, held, spec)
        except BaseException as exc:
            # A fault of ours (not the handler's: those are outcomes). The job may have no
            # outcome written: stop renewing it, so that its lease expires and the reaper
            # requeues it, rather than hold it forever.
            self._drop_unsettled([held], exc)
            raise
        finally:
            self.current = None

    def run_chunk(self, spec: HandlerSpec, items: list[tuple[ClaimedJob, Held | None]], *,
                  claim_more=None, stopping: threading.Event | None = None) -> list[RunResult]:
        """The pipeline for a chunk handler's jobs (all of `spec`'s type), in one call of its
        handler: each job held, started, and then settled on its own by the same outcome path
        as a single job's (`_settle`), in the order given. `claim_more(n)`: up to n more
        jobs of the type, claimed for this runner (the executor's, through its engine),
        asked until the chunk is full or `spec.chunk_wait_seconds` have passed (`stopping`
        set: at once); the jobs held meanwhile are renewed."""
        helds = [self._hold(job, held) for job, held in items]
        self.chunk, self.chunk_keys = helds, {id(h) for h in helds}
        self.current = helds[0]  # the stuck watch's and the supervisor's view: its first job
        self.policy = None
        try:
            if claim_more is not None:
                self._gather(spec, helds, claim_more, stopping or threading.Event())
            for held in helds:
                self.stats.claimed(held.job)
            return self._run_chunk(spec, helds)
        except BaseException as exc:
            self._drop_unsettled(helds, exc)  # as in run(): a fault of ours
            raise
        finally:
            self.current, self.chunk, self.chunk_keys = None, [], set()

    def _gather(self, spec: HandlerSpec, helds: list[Held], claim_more,
                stopping: threading.Event) -> None:
        """Fill the chunk `helds` up to spec.chunk_size with jobs claim_more finds, asking
        again every CHUNK_POLL_SECONDS (at most) until chunk_wait_seconds have passed since
        the chunk's first job. Each job claimed is held at once (its lease renewed)."""
        size, wait = spec.chunk_size or 1, spec.chunk_wait_seconds
        deadline = time.monotonic() + wait
        pause = min(CHUNK_POLL_SECONDS, max(wait / 10, 0.01))
        while len(helds) < size and not stopping.is_set():
            more = claim_more(size - len(helds))
            for job in more:
                held = self._hold(job, None)
                helds.append(held)
                self.chunk_keys.add(id(held))
            remaining = deadline - time.monotonic()
            if len(helds) >= size or remaining <= 0:
                return
            if not more:
                stopping.wait(min(pause, remaining))

    def running(self) -> list[Held]:
        """The jobs this runner runs now: its chunk's, or its one job (or none)."""
        current = self.current
        return list(self.chunk) or ([current] if current is not None else [])

    def owns(self, held: Held) -> bool:
        """Whether `held` is a job this runner runs now (the watchdog's question)."""
        return self.current is held or id(held) in self.chunk_keys

    def _hold(self, job: ClaimedJob, held: Held | None) -> Held:
        """`job` held by this runner from now on (renewed while it is its owner's)."""
        if held is None:
            held = Held.of(job, self.worker_id, owner=self.owner, engine=self.engine)
            held.running_since = time.monotonic()
            self.held.add(held)
        else:  # prefetched: held (and renewed) since the claim; from now on it is this runner's
            held.running_since = time.monotonic()
            held.owner = self.owner
            job.worker_id = held.ctx.worker_id = self.worker_id
        return held

    def _drop_unsettled(self, helds: list[Held], exc: BaseException) -> None:
        for held in helds:
            job = held.job
            if held.owner is self.owner and self.held.discard(job.id, job.lease_token):
                log.error("job=%s: unexpected error (%s) before its outcome was written; no "
                          "longer renewing it: the reaper takes it at lease expiry", job.id,
                          storable.describe_exception(exc), extra=self._log_fields(job))

    def _run(self, job: ClaimedJob, held: Held, spec: HandlerSpec | None = None) -> RunResult:
        ctx = held.ctx
        debug = log.isEnabledFor(logging.DEBUG)  # the per-job lines below are DEBUG
        if debug:
            log.debug("started job=%s type=%s attempt=%s/%s worker=%s", job.id, job.type,
                      job.attempt, job.max_attempts, self.worker_id, extra=self._log_fields(job))
        self.stats.claimed(job)
        if spec is None:
            spec = registry.get(job.type)
        if spec is None and is_task_job(job.type, job.payload):
            spec = registry.get(DJANGO_TASK_TYPE)  # a Django task's job, typed by its path
        if spec is None:
            return self._release_unknown_type(job)
        if spec.chunk_size:  # a chunk handler given one job (drain): a chunk of one
            return self._run_chunk(spec, [held])[0]
        self.policy = spec.retry_policy
        started = time.monotonic()
        left: list[str] = []  # transactions the handler left open (rolled back)
        baseline = hygiene.baseline() if self.keep_callers_transaction else None
        result: object = None
        raised: BaseException | None = None
        try:
            if ctx.stop_reason is not None:  # cancelled or lost while it waited in a prefetch
                raise JobCancelled(ctx.stop_reason)
            if held.recorded_worker_id != self.worker_id:
                unstarted = self._adopt(job, held)
                if unstarted is not None:
                    return unstarted
            self.stats.started(job)
            try:
                result = forks.run_here(lambda: middleware.run_handler(spec.run, ctx, job),
                                        job.id)
            finally:
                # Before anything about the job is written: what the handler left open may
                # hold locks our writes wait for (its own job row's), and its writes in it
                # are lost, so the job cannot be a success.
                left = self._tidy(baseline)
        except BaseException as exc:  # noqa: BLE001 - every exception a handler raises is its job's
            raised = exc
        outcome = self._settle(job, held, result, raised, left)
        if debug and raised is None:
            log.debug("handler returned job=%s in %.4fs", job.id, time.monotonic() - started,
                      extra=self._log_fields(job))
        return outcome

    def _run_chunk(self, spec: HandlerSpec, helds: list[Held]) -> list[RunResult]:
        """Start each job (one cancelled or lost while it waited is settled without running),
        call the handler once with the rest, `spec.run(ctxs, payloads)`, and settle each job
        by its item of the answer (chunk_outcomes)."""
        self.policy = spec.retry_policy
        settled: dict[int, RunResult] = {}
        ready: list[Held] = []
        for held in helds:
            job = held.job
            if held.ctx.stop_reason is not None:
                settled[job.id] = self._settle(job, held, None,
                                               JobCancelled(held.ctx.stop_reason), [])
                continue
            if held.recorded_worker_id != self.worker_id:
                # Waited for: the thread's witness slot names one job, not a chunk's.
                unstarted = self._adopt(job, held, witnessed=False)
                if unstarted is not None:
                    settled[job.id] = unstarted
                    continue
            self.stats.started(job)
            ready.append(held)
        if ready:
            baseline = hygiene.baseline() if self.keep_callers_transaction else None
            answer: object = None
            raised: BaseException | None = None
            left: list[str] = []
            try:
                try:
                    answer = forks.run_here(lambda: spec.run([h.ctx for h in ready],
                                                             [h.job.payload for h in ready]),
                                            ready[0].job.id)
                finally:
                    left = self._tidy(baseline)  # as for one job: before any outcome's write
            except BaseException as failure:  # noqa: BLE001 - the whole chunk's failure
                raised = failure
            for held, (result, exc) in zip(ready, chunk_outcomes(answer, raised, len(ready)),
                                           strict=True):
                settled[held.job.id] = self._settle(held.job, held, result, exc, left)
        return [settled[h.job.id] for h in helds]

    def _settle(self, job: ClaimedJob, held: Held, result: object, exc: BaseException | None,
                left: list[str]) -> RunResult:
        """Record one job's outcome: what its handler returned for it (`result`) or raised
        (`exc`), with the transactions it left open (`left`). The one outcome path, for a
        single job's handler and for each job of a chunk's."""
        if exc is None and not left:  # the handler returned (most jobs): no check below applies
            return self._succeed(job, held, result)
        if isinstance(exc, Snooze):
            if left:
                return self._fail_left_open(job, left)
            if isinstance(exc, Park):
                return self._park(job, exc)
            return self._snooze(job, exc)
        if isinstance(exc, LeaseLost):
            self.held.discard(job.id, job.lease_token)
            self._record_lost(job, "progress",
                              "a fenced write from the handler was refused; it stopped")
            return RunResult("lease_lost")
        if isinstance(exc, JobCancelled):
            reason = held.ctx.stop_reason or "cancelled"
            if reason == "cancelled":
                # The fail statement sees cancel_requested_at and ends the job cancelled.
                return self._fail(job, "cancelled while running", None, permanent=True,
                                  reason=reason, exc=exc)
            # Timed out, lease lost, orphaned or released at shutdown: that path already
            # recorded the job's fate; this attempt has nothing left to write.
            self.held.discard(job.id, job.lease_token)
            log.info("handler stopped job=%s reason=%s", job.id, reason,
                     extra=self._log_fields(job))
            return RunResult("stopped", reason=reason)
        if isinstance(exc, ChunkAnswerInvalid):
            return self._fail(job, str(exc), None, permanent=True, reason="bad_result", exc=exc)
        if isinstance(exc, PermanentError):
            return self._fail(job, self._and_left(storable.describe_exception(exc), left),
                              storable.format_traceback(exc), permanent=True, reason="permanent",
                              exc=exc)
        if exc is not None:
            return self._fail(job, self._and_left(storable.describe_exception(exc), left),
                              storable.format_traceback(exc), exc=exc)
        return self._fail_left_open(job, left)  # it returned, but left a transaction open

    def _succeed(self, job: ClaimedJob, held: Held, result: object) -> RunResult:
        """A handler that returned `result` and left nothing open: its success, submitted."""
        # What fails from here on is ours to classify, not the handler's.
        try:
            result_json = storable.encode_result(result)
        except storable.UnstorableResult as unstorable:
            return self._fail(job, str(unstorable), None, permanent=True, reason="bad_result",
                              exc=unstorable)
        status = self.complete(Completion(job.id, job.lease_token, self.worker_id, None, job.type,
                                          job.attempt, result_json), held)
        return RunResult(status or "submitted")

    def _adopt(self, job: ClaimedJob, held: Held, witnessed: bool = True) -> RunResult | None:
        """Have this thread recorded as the owner of a prefetched job before its handler runs
        (worker/starter.py): the database then tells a job that started from one that only
        waited in a buffer. Waited for, unless the thread's witness slot names the job
        (`witnessed`) and a witness reads it (pool.start_prefetched). None: the handler may
        run. Else why not: the lease was lost while the job waited (`lease_lost`, recorded
        here), or the start could not be written (`abandoned`: the job is no longer renewed,
        its lease expires under the buffer's id, and the reaper gives it back uncharged)."""
        try:
            adopted = self.start_prefetched(job.id, job.lease_token, self.worker_id,
                                            witnessed=witnessed, held=held)
        except StartNotRecorded as exc:
            if self.held.discard(job.id, job.lease_token):
                self.errors.error("job=%s: its start could not be recorded (%s); not running "
                                  "it: the reaper gives it back uncharged when its lease "
                                  "expires", job.id, exc)
            return RunResult("abandoned", reason="start_not_recorded")
        if adopted:
            held.recorded_worker_id = self.worker_id
            return None
        if self.held.discard(job.id, job.lease_token):  # else released meanwhile (shutdown)
            self._record_lost(job, "start", "the lease was lost while the job waited in the "
                                            "prefetch buffer; not run")
        return RunResult("lease_lost")

    def _record_lost(self, job: ClaimedJob, action: str, message: str) -> None:
        """Record that this attempt's `action` was refused for a lost lease (a `lease_lost`
        event), and count it."""
        with worker_connection():
            self.engine.record_lease_lost(job.id, job.lease_token, self.worker_id, action,
                                          message, attempt=job.attempt)
        self.stats.lease_lost(job)

    def _tidy(self, baseline: dict[str, int] | None) -> list[str]:
        """Restore this thread's connections after the handler (hygiene.tidy); looks only if
        the thread opened a connection during the job or may hold one from before."""
        if not (_opened_since_last_look() or self.may_hold_connection):
            return []
        self.may_hold_connection = True  # the executor looks again after the job
        return hygiene.tidy(baseline)

    @staticmethod
    def _and_left(error: str, left: list[str]) -> str:
        return f"{error} (and {LEFT_OPEN.format('; '.join(left))})" if left else error

    def _fail_left_open(self, job: ClaimedJob, left: list[str]) -> RunResult:
        """The handler returned (or snoozed) with a transaction open: its writes were rolled
        back, so it did not do what it says. An ordinary failure: retried while attempts
        remain, as the fix is usually a bug in the handler, but a retry is harmless."""
        return self._fail(job, LEFT_OPEN.format("; ".join(left)) + LEFT_OPEN_ADVICE, None,
                          reason="transaction_left_open")

    def _snooze(self, job: ClaimedJob, snooze: Snooze) -> RunResult:
        seconds = snooze.seconds
        try:
            seconds = float(seconds)
        except (TypeError, ValueError, OverflowError):
            seconds = math.nan
        if not 0 <= seconds <= MAX_SNOOZE_SECONDS:  # NaN fails this too
            return self._fail(job, f"ctx.snooze() needs a number of seconds from 0 to "
                                   f"{MAX_SNOOZE_SECONDS}, got {storable.safe_repr(snooze.seconds)}",
                              None)
        try:
            outcome = self._write(job, lambda: self.engine.snooze(job.id, job.lease_token,
                                                                  worker_id=self.worker_id,
                                                                  seconds=seconds))
        except OutcomeNotWritten as exc:
            return self._abandon(job, exc)
        self.held.discard(job.id, job.lease_token)
        if outcome is _LOST:
            return RunResult("lease_lost")
        log.info("snoozed job=%s for %ss", job.id, seconds, extra=self._log_fields(job))
        return RunResult("snoozed")

    def _park(self, job: ClaimedJob, park: Park) -> RunResult:
        """A durable wait (ctx.sleep_until, ctx.wait_for_signal): the job goes back to queued
        uncharged, due at its time or when its signal arrives; the thread is free for the
        next job."""
        try:
            outcome = self._write(job, lambda: self.engine.park(
                job.id, job.lease_token, worker_id=self.worker_id, until=park.until,
                signal=park.signal, timeout_seconds=park.timeout_seconds))
        except OutcomeNotWritten as exc:
            return self._abandon(job, exc)
        self.held.discard(job.id, job.lease_token)
        if outcome is _LOST:
            return RunResult("lease_lost")
        status = "cancelled" if outcome == "cancelled" else "parked"
        self.stats.parked(job, status)
        log.info("parked job=%s (%s)", job.id, park, extra=self._log_fields(job))
        return RunResult(status)

    def _release_unknown_type(self, job: ClaimedJob) -> RunResult:
        """No handler for this type here (a rolling deploy: the producer runs newer code):
        give the job back uncharged for a worker that has one, and leave the type out of this
        process's claims for JOB_UNKNOWN_TYPE_SKIP_SECONDS; or, once no worker has known the
        type for JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS, it fails for good (the statement
        decides, on the database clock)."""
        try:
            outcome = self._write(job, lambda: self.engine.release_unknown_type(
                job.id, job.lease_token, worker_id=self.worker_id, job_type=job.type))
        except OutcomeNotWritten as exc:
            return self._abandon(job, exc)
        self.held.discard(job.id, job.lease_token)
        if outcome is _LOST or outcome is None:
            return RunResult("lease_lost", reason="unknown_type")
        if outcome == "queued":
            self.unknown_types.skip(job.type, conf.get().UNKNOWN_TYPE_SKIP_SECONDS)
            log.warning("job=%s type=%s: no handler for this type in this worker; given back "
                        "for a worker that has one", job.id, job.type, extra=self._log_fields(job))
            return RunResult("released", reason="unknown_type")
        error = None
        if outcome == "failed":
            error = self.engine.unknown_type_error(job.type)
            self.stats.failed(job, outcome)
            middleware.report_failure(job, None, outcome, reason="unknown_type", error=error)
            log.warning("job=%s type=%s ended failed: %s", job.id, job.type, error,
                        extra=self._log_fields(job))
        return RunResult(outcome, error, None, "unknown_type")

    def _fail(self, job: ClaimedJob, error: str, tb: str | None, *, permanent: bool = False,
              reason: str = "error", exc: BaseException | None = None) -> RunResult:
        policy = self.policy
        if is_task_job(job.type, job.payload):  # the task's own (@task_options), once it ran
            policy = _task_policy(job) or policy

        def write(error=error, tb=tb):
            return self.engine.fail(job.id, job.lease_token, worker_id=self.worker_id,
                                    error=error, traceback=tb, permanent=permanent,
                                    reason=reason, policy=policy, exception=exc,
                                    attempt=job.attempt)

        try:
            outcome = self._write(job, write)
        except OutcomeNotWritten as refused:
            # Still refused after cleaning: record the failure without its text (nor the
            # database's message, which may quote it).
            name = type(exc).__name__ if exc is not None else reason
            error = (f"{name}: [the error could not be stored: the database refused it "
                     f"({type(refused.cause).__name__})]")
            try:
                outcome = self._write(job, lambda: write(error, None))
            except OutcomeNotWritten as again:
                return self._abandon(job, again, error=error, exc=exc)
        self.held.discard(job.id, job.lease_token)
        if outcome is _LOST or outcome is None:
            return RunResult("lease_lost", error, exc, reason)
        status, delay = outcome
        self.stats.failed(job, status)
        if status in ("queued", "failed"):  # not "cancelled": a requested cancel won
            middleware.report_failure(job, exc, status, reason=reason, error=error)
        if status == "queued":
            log.info("retry scheduled job=%s type=%s attempt=%s in %.2fs: %s", job.id,
                     job.type, job.attempt, delay or 0, error, extra=self._log_fields(job))
        else:
            log.warning("job=%s type=%s attempt=%s ended %s: %s", job.id, job.type,
                        job.attempt, status, error, extra=self._log_fields(job))
        return RunResult(status, error, exc, reason)

    def _abandon(self, job: ClaimedJob, refused: OutcomeNotWritten, *, error: str | None = None,
                 exc: BaseException | None = None) -> RunResult:
        """Release a job whose outcome cannot be written to lease expiry: stop renewing it."""
        self.held.discard(job.id, job.lease_token)
        log.error("job=%s: its outcome could not be written (%s); no longer renewing it: the "
                  "reaper takes it at lease expiry", job.id, refused, extra=self._log_fields(job))
        return RunResult("abandoned", error, exc)

    def _log_fields(self, job: ClaimedJob) -> dict:
        """The fields every log line about a job carries (JOB_LOG_FORMAT=json)."""
        return {"job_id": job.id, "job_type": job.type, "attempt": job.attempt,
                "worker_id": self.worker_id}

    def _write(self, job: ClaimedJob, write):
        """Run a fenced write, retrying through a database outage; a write the database
        refuses is tried WRITE_ATTEMPTS times, then OutcomeNotWritten. Returns the write's
        answer, or _LOST when the lease was lost, or None when the pool gave up (hard stop)."""
        self.held.mark_finishing(job.id, job.lease_token)
        backoff, refusals = Backoff(), 0
        while True:
            try:
                with worker_connection():  # given back after the write, or discarded if broken
                    return savepointed(write)
            except LeaseLost:
                self.stats.lease_lost(job)
                return _LOST
            except CONNECTION_ERRORS as exc:
                if self.hard_stop is None:
                    raise
                self.errors.error("executor %s: database unavailable: %s", self.worker_id, exc)
                queue_connection().close()
                if self.hard_stop.is_set():
                    return None
                time.sleep(backoff.next_delay())
            except Exception as exc:
                refusals += 1
                if refusals >= WRITE_ATTEMPTS:
                    raise OutcomeNotWritten(exc) from exc
                log.warning("job=%s: write refused (%s); trying again", job.id,
                            storable.describe_exception(exc), extra=self._log_fields(job))
                time.sleep(0.05 * refusals)


def _holds_connection() -> bool:
    """Whether this thread holds an open connection on any alias."""
    return any(c.connection is not None for c in connections.all(initialized_only=True))


# Whether this thread opened a connection since it last looked: set by Django's
# connection_created signal, which fires in the connecting thread. An executor whose handler
# touched no database skips connections.all() (a walk of every alias through asgiref's Local,
# a tenth of a no-op job's worker CPU).
_opened = threading.local()


def _mark_opened(sender, connection, **kwargs) -> None:
    _opened.since_last_look = True
    if getattr(_opened, "executor", False) and connection.alias != WORKER_ALIAS:
        hygiene.watch(connection)  # a handler's: its session is reset after a job it ran in


connection_created.connect(_mark_opened, dispatch_uid="django_pg_jobqueue.executor.opened")


def _opened_since_last_look() -> bool:
    opened = getattr(_opened, "since_last_look", False)
    _opened.since_last_look = False
    return opened


class Executor(threading.Thread):
    # A connection kept between jobs (CONN_MAX_AGE > 0) is closed after this long without one.
    IDLE_CLOSE_SECONDS = 1.0

    def __init__(self, pool, lane, worker_id: str, index: int = 0):
        super().__init__(name=worker_id, daemon=True)
        self.pool, self.lane, self.worker_id = pool, lane, worker_id
        self.index = index  # its place among the pool's executors
        self.inbox: queue.SimpleQueue[tuple[ClaimedJob, Held | None] | None] = queue.SimpleQueue()
        self.idle = True
        # The prefetched jobs handed to this thread that it has not finished yet (ids of their
        # Held): it answers for them from the hand-over on (`owns`), so that no renewal pass
        # falls between the buffer letting go of a job and the runner taking it.
        self._handed: set[int] = set()
        # The queue of the job it was handed (None while idle): what the host's overrides
        # count (worker/overrides.py), set before the lane's claim lock is let go.
        self.queue: str | None = None
        self.runner = JobRunner(worker_id, held=pool.held, stats=pool.stats,
                                complete=pool.completer.submit, owner=self,
                                start_prefetched=pool.start_prefetched,
                                hard_stop=pool.hard_stop, engine=pool.engine,
                                unknown_types=pool.unknown_types)

    @property
    def current(self) -> Held | None:
        return self.runner.current

    def owns(self, held: Held) -> bool:
        """Whether this thread is alive and running `held`, or was handed it and has not
        finished it yet (the watchdog's question)."""
        return (self.runner.owns(held) or id(held) in self._handed) and self.is_alive()

    def hand(self, held: Held) -> None:
        """Answer for prefetched job `held` from now on (Prefetched.take calls it under the
        buffer's lock, before the buffer lets go)."""
        self._handed.add(id(held))
        held.owner = self

    def assign(self, job: ClaimedJob, held: Held | None = None) -> None:
        """Run `job` next; `held` is given for a prefetched job, already handed to this
        thread (Prefetched.take(to=...))."""
        self.queue = job.queue
        self.idle = False
        self.inbox.put((job, held))

    def stop(self) -> None:
        self.inbox.put(None)

    def run(self) -> None:
        holds = False  # whether this thread kept a connection open after its last job
        _opened.executor = True
        # Where this thread says which job it runs, for its supervisor or start witness to
        # record as started if the process dies (pool.witness; None: neither).
        report = getattr(self.pool, "witness", None)
        try:
            while True:
                try:
                    item = self.inbox.get(timeout=self.IDLE_CLOSE_SECONDS if holds else None)
                except queue.Empty:
                    connections.close_all()
                    holds = self.runner.may_hold_connection = False
                    continue
                if item is None:
                    return
                job, held = item
                try:
                    while True:
                        began = time.monotonic()
                        if report is not None:
                            report.set_running(self.index, job.id)
                        try:
                            self._run(job, held)
                        finally:
                            if report is not None:
                                report.set_running(self.index, 0)
                            if self._handed:  # settled, or dropped by the runner
                                self._handed = set()
                            self.lane.prefetched.ran(time.monotonic() - began)
                            # What Django does after a request (module docstring); a thread
                            # whose handler opened nothing pays nothing: it looks only if it
                            # opened a connection during the job, or kept one from before.
                            holds = ((_opened_since_last_look() or self.runner.may_hold_connection)
                                     and _holds_connection())
                            if holds:
                                hygiene.reset_sessions()  # of those kept for the next job
                                close_old_connections()
                                holds = _holds_connection()
                            self.runner.may_hold_connection = holds
                        # Next, a prefetched job if one waits: taken here, without a round
                        # trip through the lane (which is woken to refill when low).
                        held = self._take_prefetched()
                        if held is None:
                            break
                        job = held.job
                        self.queue = job.queue
                except BaseException:
                    log.exception("executor %s: unexpected error on job %s", self.worker_id, job.id)
                finally:
                    self.queue = None
                    self.idle = True
                    self.lane.wake.set()
        finally:
            connections.close_all()  # this thread's: the queue's and any its handlers opened

    def _run(self, job: ClaimedJob, held: Held | None) -> None:
        """Run `job`: alone, or for a chunk handler's type as the first of a chunk, which
        this thread fills with the prefetched jobs of the type, then by claiming more of it
        (run_chunk, _claim_more)."""
        spec = registry.get(job.type)
        if spec is None or not spec.chunk_size:
            self.runner.run(job, held, spec)
            return
        items = [(job, held)] + [(h.job, h) for h in self.lane.prefetched.take_type(
            spec.name, (spec.chunk_size or 1) - 1, to=self)]
        self.runner.run_chunk(spec, items, stopping=self.pool.stopping,
                              claim_more=lambda n: self._claim_more(spec, n))

    def _claim_more(self, spec: HandlerSpec, wanted: int) -> list[ClaimedJob]:
        """Up to `wanted` runnable jobs of a chunk handler's type in this thread's lane's
        queues, claimed for this thread through the pool's engine (nothing, on an error: the
        chunk runs with what it has)."""
        pool = self.pool
        granted = pool.reserve_claims(wanted)  # --max-jobs-per-process counts them too
        if not granted:
            return []
        jobs: list[ClaimedJob] = []
        try:
            with worker_connection():
                jobs = pool.engine.claim(
                    worker_ids=[self.worker_id] * granted, types=[spec.name],
                    queues=list(self.lane.spec.queues) if self.lane.spec.queues else None,
                    lease_seconds=pool.lease_seconds,
                    exclude_queues=pool.overrides.stopped(self.lane.spec.queues) or None)
        except CONNECTION_ERRORS as exc:
            self.runner.errors.error("executor %s: database unavailable: %s", self.worker_id, exc)
        except Exception:  # noqa: BLE001 - the chunk runs with the jobs it holds
            log.exception("executor %s: claiming more of a chunk failed", self.worker_id)
        finally:
            pool.return_claims(granted - len(jobs))
        return jobs

    def _take_prefetched(self) -> Held | None:
        if self.pool.stopping.is_set() or not len(self.lane.prefetched):
            return None
        if self.pool.overrides.touches(self.lane.spec.queues):
            return None  # the lane gives them back: the host's overrides may refuse them
        held, refill = self.lane.prefetched.take(to=self)
        if refill and not self.lane.wake.is_set():  # set already: the lane is due to
            self.lane.wake.set()                    # look, and set() would take its lock
        return held
