"""The maintenance leader: one worker process per database runs the maintenance loops.

The reaper, the pruner (with the partition manager), the periodic enqueuer and the stager need
not run in every process: several at once are safe (each takes its rows with SKIP LOCKED, and a
periodic tick is enqueued once whoever wins), but each costs every process a transaction every
few seconds, which hundreds of processes turn into a load of their own. So one process holds a
lease row in `job_leader` (sql.TAKE_LEADERSHIP_IF_FREE_OR_MINE) and runs them; the others
skip them without touching the database.

The lease is taken and renewed by the renewer's heartbeat, in the same transaction: no extra
transaction. It lasts JOB_LEADER_LEASE_SECONDS on the database clock; a leader that stops
beating (killed, frozen, cut off) loses it when it expires, and the next process to beat takes
it, so a new leader runs maintenance within the lease plus one heartbeat. A leader that stops
gracefully resigns, and the next heartbeat elsewhere takes over at once.

Under a supervisor (`run_job_workers --processes N`) the children do not beat themselves: the
supervisor beats for all of them in one transaction and takes or renews the lease there, for
one of its children (worker/hostbeat.py); that child's HostLeadership reads until when it
leads from memory it shares with the supervisor, and a leader child that exits or stops is
resigned for by the supervisor at its next beat.

A process believes it leads from the heartbeat that renewed its lease until that lease would
expire by its own monotonic clock, counted from before the statement was sent; so it stops
believing no later than the database ends the lease, whatever happens to the connection.
Maintenance overlapping a hand-over by a moment is harmless, for the reason above.
"""
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import conf
from ..engine import Engine, default_engine

if TYPE_CHECKING:
    from .signals import TestSignals

log = logging.getLogger("django_pg_jobqueue.leader")

MAINTENANCE = "maintenance"


def heartbeat_interval(lease_seconds: float | None = None) -> float:
    """How often the renewer beats (and renews leases): a third of the lease (by default
    JOB_LEASE_SECONDS), at most 2 s, at least 0.2 s."""
    return max(0.2, min((lease_seconds or conf.get().LEASE_SECONDS) / 3, 2.0))


class Leadership:
    signals: "TestSignals | None" = None  # the pool's test signals, when a test asked (signals.py)

    def __init__(self, process_id: str, *, role: str = MAINTENANCE,
                 lease_seconds: float | None = None, enabled: bool | None = None,
                 engine: Engine | None = None, clock: Callable[[], float] = time.monotonic):
        c = conf.get()
        self.clock = clock  # monotonic seconds: when the lease this process holds runs out
        self.engine = engine or default_engine()
        self.process_id, self.role = process_id, role
        self.lease_seconds = lease_seconds or c.LEADER_LEASE_SECONDS or 3 * heartbeat_interval()
        # Off: every process runs maintenance (it leads, as far as its loops know).
        self.enabled = c.MAINTENANCE_LEADER if enabled is None else enabled
        self._valid_until = float("inf") if not self.enabled else 0.0
        self._lock = threading.Lock()
        self.elected = threading.Event()  # set while this process leads; loops wait on it
        if not self.enabled:
            self.elected.set()
        self.terms = 0  # how many times this process became the leader

    def is_leader(self) -> bool:
        if self.clock() < self._valid_until:
            return True
        if self.elected.is_set() and self.enabled:
            self._lose("its lease ran out before a heartbeat renewed it")
        return False

    def beat(self) -> bool:
        """Take or renew the lease (inside the heartbeat's transaction); whether this process
        leads now."""
        if not self.enabled:
            return True
        sent_at = self.clock()
        holds = self.engine.take_leadership(self.role, self.process_id, self.lease_seconds)
        if not holds:
            # Outside the lock: _lose takes it (a Lock, not reentrant). Called under it, the
            # renewer deadlocked the first time a heartbeat found another leader while this
            # process still believed it led, and every thread then hung on the lock: no job
            # lease renewed again, and the process could never stop.
            self._lose("another process holds the lease")
            return False
        with self._lock:
            self._valid_until = sent_at + self.lease_seconds
            if not self.elected.is_set():
                self.terms += 1
                self.elected.set()
                log.info("%s leads %s now (lease %ss)", self.process_id, self.role,
                         self.lease_seconds)
                if self.signals is not None:
                    self.signals.leading.emit(True)
        return True

    def _lose(self, why: str) -> None:
        with self._lock:
            if not self.elected.is_set():
                return
            self._valid_until = 0.0
            self.elected.clear()
            if self.signals is not None:
                self.signals.leading.emit(False)
        log.warning("%s no longer leads %s: %s", self.process_id, self.role, why)

    def resign(self) -> None:
        """Give the lease up at a graceful stop, so that another process takes it at once."""
        if not self.enabled or not self.elected.is_set():
            return
        self.engine.resign_leadership(self.role, self.process_id)
        self._lose("it stopped")


class HostLeadership(Leadership):
    """A supervised child's side: its supervisor takes and renews the lease for it, in the
    host's one heartbeat (worker/hostbeat.py), and writes until when it leads into the child's
    ChildReport (the monotonic clock, counted from before the statement was sent)."""

    def __init__(self, process_id: str, report, *, supervisor_pid: int, **kwargs):
        super().__init__(process_id, **kwargs)
        self.report = report  # worker/hostbeat.py's ChildReport
        self.supervisor_pid = supervisor_pid

    def is_leader(self) -> bool:
        if not self.enabled:
            return True
        if time.monotonic() < self.report.leads_until():
            with self._lock:
                if not self.elected.is_set():
                    self.terms += 1
                    self.elected.set()
                    log.info("%s leads %s now (its supervisor holds the lease for it, %ss)",
                             self.process_id, self.role, self.lease_seconds)
                    if self.signals is not None:
                        self.signals.leading.emit(True)
            return True
        if self.elected.is_set():
            self._lose("its supervisor no longer holds the lease for it")
        return False

    def beat(self) -> bool:
        """No statement: the supervisor's beat takes the lease; whether this process leads."""
        return self.is_leader()

    def resign(self) -> None:
        """At a graceful stop: tell the supervisor, which resigns the lease at its next beat
        (and elects another child); if the supervisor is gone (the reason this process stops),
        resign here, so that another host need not wait for the lease to expire."""
        if not self.enabled:
            return
        self.report.stopping()
        if os.getppid() != self.supervisor_pid:
            # Whether or not this process had noticed that it leads: it learns so lazily, from
            # the reports its supervisor wrote, and the last may have lapsed since that died.
            # The statement touches the lease only if this process holds it.
            self.engine.resign_leadership(self.role, self.process_id)
        self._lose("it stopped")
