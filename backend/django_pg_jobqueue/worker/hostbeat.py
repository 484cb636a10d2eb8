"""One heartbeat per host: a supervisor beats for all its children in one statement.

A lone `run_job_workers` upserts its own row in `job_workers` after each renewal pass
(worker/renewer.py): one transaction every heartbeat interval (2 s at the defaults), half of an
idle process's cost to the database. Under `run_job_workers --processes N` each child instead
writes the same figures (its memory, jobs run, stuck handlers, threads, interval) into a few
doubles it shares with its supervisor (ChildReport), right where it would have beaten: after
its renewal pass. The supervisor's HostHeartbeat thread reads them every interval and upserts
every live child's row in one statement (sql.HEARTBEAT_MANY), each row with its own figures
and its own id (`<host>-<child pid>`): one transaction per host per interval, not N.

What a row still means: its process is alive and renews its leases.
- A child the supervisor found dead (SIGKILL, a crash) is detached when it is reaped, before
  the next beat, and never beaten for again: its row turns lost two intervals after its last
  beat, as a lone process's does.
- A child whose report is older than STALE_AFTER_INTERVALS intervals (its renewer frozen, or
  failing to reach the database) is left out of the beat: frozen, it turns lost at most one
  interval later than a lone process would.
- Leases are not the heartbeat's business: each child still renews its own jobs' leases
  itself (sql.RENEW_MANY, one statement per pass while it holds any), and its report comes
  after that pass, so a beat later than a running job's lease expiry still means the process
  chose not to renew that job (audit_jobs), never that it had not got to it.
- A child that stopped gracefully (exit 0, a recycle, a hard timeout) has its row removed by
  the supervisor once it has exited, in the pass after its last beat: the one writer of the
  rows of its children, so that no beat of its brings a stopped child's row back. A child
  whose supervisor is gone (it stops then) removes its own row and resigns the leader's lease
  itself if it holds it, as a lone process does.

The maintenance leader (worker/leader.py) is elected in the same transaction: the supervisor
takes or renews the lease for one of its children, the one it already holds it for while that
child reports, else the first child that reports (sql.TAKE_LEADERSHIP_IF_FREE_OR_MINE, with
that child's process id as holder), and tells the child until when it leads (`leads_until`,
the monotonic clock, one clock for every process of the host, counted from before the
statement was sent: the child stops believing no later than the database ends the lease). A
leader child that exits, or stops, is resigned for by the supervisor in its next pass, so
another child (or host) takes over within a beat; a frozen one keeps the lease until it
expires on the database clock, as a frozen lone leader does.

The report is a handful of doubles without a lock: the child writes, the supervisor reads,
each double whole. A read may mix two consecutive reports' figures, which is harmless;
`reported_at` is written last, so a fresh time says the rest was written by then.

This module imports nothing of Django's at its top: a spawned child unpickles its ChildReport
before Django is set up."""
import logging
import socket
import threading
import time
from typing import Any

from .base import ServiceThread

log = logging.getLogger("django_pg_jobqueue.hostbeat")

# A child's report: doubles shared by the child (writes all but LEADS_UNTIL) and its
# supervisor (reads them, writes LEADS_UNTIL).
(REPORTED_AT, RSS_BYTES, JOBS_DONE, STUCK_HANDLERS, THREADS, INTERVAL, STOPPING,
 LEADS_UNTIL) = range(8)
FIELDS = 8
# A report older than this many heartbeat intervals is stale: the child is not beaten for.
STALE_AFTER_INTERVALS = 1.5


class ChildReport:
    """What a supervised child tells its supervisor's heartbeat, in shared memory."""

    def __init__(self, values, running=None) -> None:
        self.values = values  # a multiprocessing RawArray("d", FIELDS)
        # The job each executor thread is running (its index: the thread's number - 1; 0:
        # none): what the supervisor charges if the child dies (services.settle_dead_process).
        self.running = running  # a multiprocessing RawArray("q", threads)

    @classmethod
    def create(cls, context, threads: int = 0) -> "ChildReport":
        return cls(context.RawArray("d", FIELDS), context.RawArray("q", max(threads, 1)))

    # -- the child's side ------------------------------------------------------------------
    def report(self, *, rss_bytes: int | None, jobs_done: int, stuck_handlers: int,
               threads: int, interval: float) -> None:
        """After a renewal pass: the figures the supervisor's next beat writes to this
        process's row."""
        v = self.values
        v[RSS_BYTES] = -1.0 if rss_bytes is None else float(rss_bytes)
        v[JOBS_DONE], v[STUCK_HANDLERS] = float(jobs_done), float(stuck_handlers)
        v[THREADS], v[INTERVAL] = float(threads), float(interval)
        v[REPORTED_AT] = time.monotonic()  # last: the rest is written

    def stopping(self) -> None:
        """This process is stopping: the supervisor elects another child (and resigns this
        one's lease if it leads), and goes on beating for it until it has exited."""
        self.values[STOPPING] = 1.0

    def set_running(self, index: int, job_id: int) -> None:
        """Executor thread `index` runs `job_id` from now on (0: none)."""
        running = self.running
        if running is not None and index < len(running):
            running[index] = job_id

    def alive(self) -> bool:
        """Whether the supervisor reads the running slots (it does: a child whose supervisor
        is gone stops); a thread need not wait for a prefetched job's start to be written."""
        return True

    def leads_until(self) -> float:
        """Until when (monotonic) this process leads maintenance, as its supervisor says."""
        return self.values[LEADS_UNTIL]

    # -- the supervisor's side -------------------------------------------------------------
    def read(self) -> list[float]:
        return list(self.values)

    def running_jobs(self) -> list[int]:
        """The jobs the child's threads were running (read once it died)."""
        return [job_id for job_id in (self.running or ()) if job_id]

    def set_leads_until(self, until: float) -> None:
        self.values[LEADS_UNTIL] = until


class HostHeartbeat(ServiceThread):
    """The supervisor's side: every interval, one transaction beats for every live child that
    reports, removes the rows of children that stopped, and keeps one child the leader."""

    def __init__(self, supervisor_pid: int, *, queues: list[str], interval: float,
                 leader_lease_seconds: float, elect: bool, engine: Any = None,
                 hostname: str | None = None) -> None:
        super().__init__("host-heartbeat", log)
        from ..engine import default_engine  # Django is set up in the supervisor

        self.engine = engine or default_engine()
        self.supervisor_pid, self.queues = supervisor_pid, queues
        self.interval = interval
        self.leader_lease_seconds, self.elect = leader_lease_seconds, elect
        self.hostname = hostname or socket.gethostname()  # run_job_workers --hostname
        self.lock = threading.Lock()
        self.children: dict[int, tuple[int, ChildReport]] = {}  # slot -> (pid, report)
        self.gone: list[tuple[str, bool]] = []  # (process id, stopped gracefully): to settle
        self.leader: str | None = None  # the child this host holds the leader's lease for
        self.beats = 0  # transactions that beat, for tests and the log

    def process_id(self, pid: int) -> str:
        return f"{self.hostname}-{pid}"  # as the child names itself (worker/pool.py)

    def attach(self, index: int, pid: int, report: ChildReport) -> None:
        with self.lock:
            self.children[index] = (pid, report)

    def detach(self, index: int, *, graceful: bool) -> None:
        """A child was reaped: never beaten for again; its row removed if it stopped
        gracefully, kept (it turns lost) if not."""
        with self.lock:
            entry = self.children.pop(index, None)
            if entry is not None:
                self.gone.append((self.process_id(entry[0]), graceful))

    def run_once(self) -> dict[str, Any]:
        now = time.monotonic()
        with self.lock:
            children = sorted(self.children.items())
            gone, self.gone = self.gone, []
        beats, candidates, stopping = [], [], set()
        for _, (pid, report) in children:
            r = report.read()
            process_id = self.process_id(pid)
            if r[STOPPING]:
                stopping.add(process_id)
            interval = r[INTERVAL] or self.interval
            if not r[REPORTED_AT] or now - r[REPORTED_AT] > STALE_AFTER_INTERVALS * interval:
                continue  # not reported yet, or frozen: not beaten for
            beats.append({
                "id": process_id, "hostname": self.hostname, "pid": pid,
                "threads": int(r[THREADS]), "queues": self.queues,
                "rss_bytes": None if r[RSS_BYTES] < 0 else int(r[RSS_BYTES]),
                "jobs_done": int(r[JOBS_DONE]), "stuck_handlers": int(r[STUCK_HANDLERS]),
                "heartbeat_interval_seconds": interval})
            if not r[STOPPING]:
                candidates.append(process_id)
        removed = [process_id for process_id, graceful in gone if graceful]
        exited = {process_id for process_id, _ in gone}
        # The leader: the child that holds the lease while it reports, else the first that
        # reports. One that exited or is stopping is resigned for (it runs no maintenance any
        # longer); one that went stale (frozen) keeps the lease until it expires.
        resign, candidate = None, None
        if self.elect:
            if self.leader in candidates:
                candidate = self.leader
            else:
                if self.leader is not None and (self.leader in exited or self.leader in stopping):
                    resign = self.leader
                candidate = candidates[0] if candidates else None
        if not beats and not removed and resign is None and candidate is None:
            return {"beaten": 0, "removed": 0, "leader": None}
        reports = {self.process_id(pid): report for _, (pid, report) in children}
        if resign is not None and resign in reports:
            reports[resign].set_leads_until(0.0)  # it stops believing before the resignation
        from .. import db
        from .leader import MAINTENANCE

        sent_at = time.monotonic()
        try:
            with db.atomic():
                self.engine.heartbeat_many(beats, supervisor_pid=self.supervisor_pid)
                self.engine.remove_stopped_workers(removed)
                if resign is not None:
                    self.engine.resign_leadership(MAINTENANCE, resign)
                holds = candidate is not None and self.engine.take_leadership(
                    MAINTENANCE, candidate, self.leader_lease_seconds)
        except BaseException:
            with self.lock:  # settled by the next pass that reaches the database
                self.gone[:0] = gone
            raise
        self.beats += 1
        if self.elect:
            self.leader = candidate if holds else None
            for process_id, report in reports.items():
                report.set_leads_until(sent_at + self.leader_lease_seconds
                                       if process_id == self.leader else 0.0)
        return {"beaten": len(beats), "removed": len(removed), "leader": self.leader}
