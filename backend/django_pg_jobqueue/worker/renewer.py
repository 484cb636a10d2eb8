"""The lease renewer: one statement extends every lease this process holds.

It also relays what the database says about each job to its handler: a job missing from the
answer lost its lease (stop now; its result will be refused), a cancel was requested (stop),
or the job's own timeout passed on the database clock (fail the attempt, retryably, tell
JOB_ERROR_HOOKS, and stop).
It keeps the process's heartbeat row in `job_workers` too (under a supervisor, it writes the
figures and the supervisor beats for all its children at once: worker/hostbeat.py).

The watchdog: it renews only the jobs someone in this process answers for (worker/held.py:
a live executor running it, the prefetch buffer it waits in, the live completer writing its
result). A held job found without a live owner on ORPHAN_PASSES passes in a row (one pass may
fall inside a hand-over) is released: no longer renewed, its handler (if any still runs) asked
to stop, a `log` event saying so; its lease expires and the reaper requeues it (the attempt
counts, as for any expired lease: a handler that kills its thread cannot loop forever)."""
import logging
import os
import socket

from .. import conf, db, middleware
from ..engine import Engine, default_engine
from ..exceptions import LeaseLost
from .base import ServiceThread
from .held import HeldJobs
from .hostbeat import ChildReport
from .leader import Leadership
from .stuck import StuckWatch, rss_bytes

log = logging.getLogger("django_pg_jobqueue.renewer")

ORPHAN_PASSES = 2
ORPHAN_MESSAGE = ("watchdog: no live executor runs this job and no prefetch buffer holds it; "
                  "no longer renewing its lease: the reaper requeues it when the lease expires")

class LeaseRenewer(ServiceThread):
    def __init__(self, held: HeldJobs, *, process_id: str, threads: int, queues: list[str],
                 lease_seconds: float | None = None, engine: Engine | None = None,
                 stuck: StuckWatch | None = None, jobs_done=None,
                 supervisor_pid: int | None = None, after_pass=None,
                 hostname: str | None = None):
        super().__init__("renewer", log)
        self.held = held
        self.engine = engine or default_engine()
        self.lease_seconds = lease_seconds or conf.get().LEASE_SECONDS
        # Renew well before expiry, and often enough that a cancel reaches its handler quickly.
        self.interval = max(0.2, min(self.lease_seconds / 3, 2.0))
        self.process_id, self.threads, self.queues = process_id, threads, queues
        self.hostname = hostname or socket.gethostname()  # run_job_workers --hostname
        self.stuck, self.supervisor_pid = stuck, supervisor_pid
        self.jobs_done = jobs_done or (lambda: 0)  # how many jobs this process has run
        # Run after each pass: the pool's summary line (stats.py), its host's queue overrides
        # read again (worker/overrides.py).
        self.after_pass = after_pass
        self.stuck_now = 0
        self.lost = 0
        self.waited_for_locks = False
        self.timed_out = 0
        self.orphaned = 0

    # Set by the pool: the maintenance leader's lease, taken or renewed with each heartbeat
    # (not `leadership`, which would make this loop itself run on the leader only).
    elector: "Leadership | None" = None

    # Set by the pool under a supervisor: worker/hostbeat.py's ChildReport. The supervisor
    # then beats for this process (and takes the leader's lease for it), with the host's other
    # children, in one statement; this process only writes its figures there.
    report: "ChildReport | None" = None

    def heartbeat(self) -> None:
        if self.report is not None:
            self.report.report(rss_bytes=rss_bytes(), jobs_done=self.jobs_done(),
                               stuck_handlers=self.stuck_now, threads=self.threads,
                               interval=self.interval)
            return
        # One transaction: the process's row and, when it leads or may, the leader's lease.
        with db.atomic():
            self.engine.heartbeat(
                self.process_id, hostname=self.hostname, pid=os.getpid(),
                threads=self.threads, queues=self.queues, rss_bytes=rss_bytes(),
                jobs_done=self.jobs_done(), stuck_handlers=self.stuck_now,
                heartbeat_interval_seconds=self.interval, supervisor_pid=self.supervisor_pid)
            if self.elector is not None:
                self.elector.beat()

    def run_once(self) -> dict[str, int]:
        held, orphaned = self._watch(self.held.snapshot())
        answer = self.engine.renew_many([(h.job.id, h.job.lease_token) for h in held],
                                     lease_seconds=self.lease_seconds) if held else {}
        busy = [h for h in held if h.job.id in answer and answer[h.job.id].busy]
        if self.stuck is not None:
            self.stuck_now = self.stuck.run_once()
        # The heartbeat comes after the renewals: a heartbeat later than one of this process's
        # running jobs' lease expiry then means the process chose not to renew that job
        # (audit_jobs: held_without_executor), never that it had not got to it yet.
        self.heartbeat()
        if self.after_pass is not None:
            self.after_pass()
        # Rows another transaction holds a lock on were skipped, every other lease renewed:
        # now wait for those alone, up to an interval (then the next pass starts at once, and
        # waits again: the renewal keeps its place in the row's lock queue, ahead of any
        # reaper, for as long as the other transaction lasts).
        self.waited_for_locks = bool(busy)
        if busy:
            answer.update(self.engine.renew_locked(
                [(h.job.id, h.job.lease_token) for h in busy], wait_seconds=self.interval,
                lease_seconds=self.lease_seconds))
        if not held:
            return {"renewed": 0, "lost": 0, "cancelled": 0, "timed_out": 0, "orphaned": orphaned}
        counts = {"renewed": sum(not row.busy for row in answer.values()), "lost": 0,
                  "cancelled": 0, "timed_out": 0, "orphaned": orphaned, "busy": 0}
        lost = []
        for h in held:
            row = answer.get(h.job.id)
            if row is not None and row.busy:  # still locked: neither renewed nor lost
                counts["busy"] += 1
                continue
            if row is None:
                if h.finishing:
                    continue  # its final write just committed (a refusal is recorded by the writer)
                if self.held.discard(h.job.id, h.job.lease_token):
                    h.ctx.request_stop("lease_lost")
                    lost.append((h.job.id, h.job.lease_token, h.job.worker_id, h.job.attempt))
                continue
            log.debug("renewed job=%s worker=%s", h.job.id, h.job.worker_id)
            if row.cancel_requested and h.ctx.stop_reason is None:
                counts["cancelled"] += 1
                log.info("cancel requested job=%s worker=%s", h.job.id, h.job.worker_id)
                h.ctx.request_stop("cancelled")
            if row.timed_out and self.held.discard(h.job.id, h.job.lease_token):
                counts["timed_out"] += 1
                self.timed_out += 1
                # Failed first, then told to stop: a handler that returns as soon as it is
                # told must find its completion refused, not beat the timeout's write to it.
                try:
                    self._fail_timed_out(h)
                finally:
                    h.ctx.request_stop("timeout")
        if lost:  # every refusal of this pass in one write, after the renewals
            counts["lost"] = len(lost)
            self.lost += len(lost)
            self.engine.record_leases_lost(
                lost, "renew", "lease renewal refused; the handler was asked to stop")
        return counts

    def pause_after_pass(self) -> float:
        return 0.0 if self.waited_for_locks else self.interval

    def _watch(self, held: list) -> tuple[list, int]:
        """The held jobs to renew, and how many orphans were released this pass."""
        keep, orphaned = [], 0
        for h in held:
            if h.owned():
                h.unowned_passes = 0
                keep.append(h)
                continue
            h.unowned_passes += 1
            if h.unowned_passes < ORPHAN_PASSES:
                keep.append(h)
                continue
            if not self.held.discard(h.job.id, h.job.lease_token):
                continue
            orphaned += 1
            self.orphaned += 1
            h.ctx.request_stop("orphaned")
            log.error("job=%s worker=%s: %s", h.job.id, h.job.worker_id, ORPHAN_MESSAGE)
            try:
                self.engine.log_message(h.job.id, h.job.lease_token, worker_id=h.job.worker_id,
                                     message=ORPHAN_MESSAGE)
            except LeaseLost:
                pass
        return keep, orphaned

    def _fail_timed_out(self, h) -> None:
        error = f"timed out after {h.job.timeout_seconds}s (attempt {h.job.attempt})"
        try:
            status, _ = self.engine.fail(h.job.id, h.job.lease_token, worker_id=h.job.worker_id,
                                         reason="timeout", error=error)
        except LeaseLost:
            return
        log.warning("timed out job=%s type=%s attempt=%s -> %s", h.job.id, h.job.type,
                    h.job.attempt, status)
        if self.signals is not None:
            self.signals.ended.emit((h.job.id, status))
        if status in ("queued", "failed"):  # the handler's own end is not told again: stopped
            middleware.report_failure(h.job, None, status, reason="timeout", error=error)

    def remove_worker_row(self) -> None:
        """At a graceful stop. Under a live supervisor, not here: it beats for this process
        and removes the row itself once this process has exited (worker/hostbeat.py)."""
        if self.report is not None and os.getppid() == self.supervisor_pid:
            self.report.stopping()
            return
        self.engine.remove_stopped_workers([self.process_id])
