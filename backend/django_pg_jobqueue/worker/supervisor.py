"""The supervisor of `run_job_workers --processes N`: N worker processes, each a whole pool.

It claims nothing: it starts the children, restarts one
that exits or is killed (at once after a planned exit, a recycle or a hard timeout; with a
capped backoff after a crash), kills one whose beat stops for FROZEN_SECONDS (stuck in C code
holding the GIL, or stopped), and on SIGTERM/SIGINT passes the graceful shutdown to every
child and waits for them; a second signal kills them at once. The children's jobs are theirs
while they live; a child that died (not a planned exit) has its jobs settled by the
supervisor at once (`_settle`): those its threads were running, as the child reported them
in shared memory, charged the attempt, the rest released uncharged; the reaper is the
fallback when the database cannot be reached then.

Its one transaction is the host's heartbeat: every interval, one statement upserts every live
child's row in `job_workers` from the figures each child shares with it, in the transaction
that also keeps one child the maintenance leader (worker/hostbeat.py), on a connection of
its own.

Its other database connection is the host's LISTEN connection (with LISTEN/NOTIFY on): it
relays each notification to one child over that child's pipe, and the children hold no LISTEN
connection of their own (worker/relay.py). A single `run_job_workers` without --processes
listens itself, as before.

Spawn, not fork. A forked child would inherit the supervisor's Django connections (two
processes on one socket), any lock another thread held at fork time, and the app and handler
registries as they were when it forked. A spawned child is a fresh interpreter: it sets Django
up itself (`django.setup()`: the app registry, then the handler registry as the app's ready()
builds it), opens its own connections, and runs exactly what a plain `run_job_workers` runs.
It costs a second or so and the memory of one more interpreter per child, once per start."""
import logging
import multiprocessing
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_for_sentinels
from typing import Any

from .exits import EXIT_HARD_TIMEOUT, EXIT_RECYCLED

log = logging.getLogger("django_pg_jobqueue.supervisor")

# This module imports nothing of Django's at its top: a spawned child imports it (to find
# _child_main) before Django is set up. It reaches worker/process.py only there, in the child;
# process.py reads the exit statuses from worker/exits.py, not from here.

FROZEN_SECONDS = 60.0  # a child that has not beaten for this long is killed and replaced
STARTUP_SECONDS = 120.0  # a child's first beat may take this long (Django's setup)
BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS = 0.5, 30.0
STABLE_SECONDS = 60.0  # a child that ran this long resets its slot's backoff
STOP_MARGIN_SECONDS = 15.0  # beyond the grace: the children's release and exit


def _child_main(pool_options: dict, beat, supervisor_pid: int, max_jobs, max_memory_bytes,
                log_settings: tuple, relay=None, report=None) -> None:
    """A spawned child: set Django up, then run one pool as `run_job_workers` would."""
    import signal as _signal
    import sys

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # the supervisor alone answers Ctrl-C
    # Stopped before its pool starts (it holds nothing yet): a clean exit, not a death by
    # SIGTERM. The pool's own handlers replace this one before it claims anything.
    _signal.signal(_signal.SIGTERM, lambda signum, frame: sys.exit(0))
    import django

    django.setup()
    from ..logformat import configure_worker_logging
    from .process import Supervised, run_worker_process

    configure_worker_logging(*log_settings)
    code = run_worker_process(pool_options, supervised=Supervised(
        beat, supervisor_pid, max_jobs=max_jobs, max_memory_bytes=max_memory_bytes,
        relay=relay, report=report))
    # Stopped: a SIGTERM from now on (the supervisor stopping while this one recycles) must
    # not kill it during the interpreter's exit, which resets Python's handlers to the default.
    _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
    sys.exit(code)


@dataclass
class Slot:
    index: int
    process: Any = None  # multiprocessing.Process (the spawn context's)
    beat: Any = None  # its multiprocessing.Value("d")
    wake_conn: Any = None  # the supervisor's end of its wake-up pipe (worker/relay.py)
    report: Any = None  # its heartbeat's figures, shared (worker/hostbeat.py's ChildReport)
    started_at: float = 0.0
    crashes: int = 0
    restart_at: float | None = 0.0  # when to start it (None: not again)
    killed_by_stop: bool = False  # killed by the supervisor's own stop (a second signal, late)
    exits: list = field(default_factory=list)  # exit codes, for tests and the final log


def stopped_as_planned(code: int | None, *, stopping: bool) -> bool:
    """Whether a child's exit left nothing behind it: a graceful stop (0), a planned recycle,
    an end for a handler past its timeout (its job failed first), or, while the supervisor
    stops, a death by the SIGTERM it sent. Only a child still in Python's start-up dies of
    that signal (from `_child_main`'s first line on, SIGTERM is handled), and such a child
    has claimed nothing: on a loaded machine a stop soon after a start catches children so."""
    return code in (0, EXIT_RECYCLED, EXIT_HARD_TIMEOUT) or _caught_starting(code, stopping)


def _caught_starting(code: int | None, stopping: bool) -> bool:
    """Killed by the SIGTERM of the supervisor's stop while still in Python's start-up."""
    return stopping and code == -signal.SIGTERM


def describe_exit(code: int | None, *, stopping: bool = False) -> str:
    if code is None:
        return "still running"
    if _caught_starting(code, stopping):
        return "stopped before it started (SIGTERM during Python's start-up; it held nothing)"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code == EXIT_RECYCLED:
        return "recycled (exit status 3)"
    if code == EXIT_HARD_TIMEOUT:
        return "ended for a handler past its timeout (exit status 4)"
    return f"exited with status {code}"


class Supervisor:
    def __init__(self, *, processes: int, pool_options: dict, shutdown_grace: float,
                 max_jobs: int | None = None, max_memory_bytes: int | None = None,
                 log_settings: tuple = ("INFO", "text"), stdout=None):
        import os

        self.processes, self.pool_options = processes, pool_options
        self.shutdown_grace = shutdown_grace
        self.max_jobs, self.max_memory_bytes = max_jobs, max_memory_bytes
        self.log_settings, self.stdout = log_settings, stdout
        self.pid = os.getpid()
        self.context = multiprocessing.get_context("spawn")
        self.slots = [Slot(i) for i in range(processes)]
        self.signals = 0
        self.relay: Any = None  # worker/relay.py's HostRelay, while listening
        self.listener: Any = None
        self.listening: Any = None  # a multiprocessing Event: the LISTEN connection is up
        self.hostbeat: Any = None  # worker/hostbeat.py's HostHeartbeat: one beat for all

    def _listens(self) -> bool:
        from .. import conf  # Django is set up in the supervisor (the management command)

        listen = self.pool_options.get("listen")
        return conf.get().LISTEN_NOTIFY if listen is None else bool(listen)

    def _start_listening(self) -> None:
        """The host's one LISTEN connection, relayed to the children (worker/relay.py)."""
        if not self._listens():
            return
        from .listener import Listener
        from .relay import HostRelay

        self.listening = self.context.Event()
        self.relay = HostRelay()
        self.listener = Listener(self.relay.notify, connected=self.listening)
        self.relay.start()
        self.listener.start()

    def _stop_listening(self) -> None:
        for thread in (self.listener, self.relay):
            if thread is not None:
                thread.stop()
        for thread in (self.listener, self.relay):
            if thread is not None:
                thread.join(timeout=2)

    def _start_heartbeat(self) -> None:
        """The host's one heartbeat for all its children (worker/hostbeat.py), on a pooled
        connection of its own, kept open between beats."""
        from django.db.backends.signals import connection_created

        from .. import conf, db
        from .hostbeat import HostHeartbeat
        from .leader import heartbeat_interval
        from .pool import _set_session_limits, parse_queues, queue_names

        c = conf.get()
        interval = heartbeat_interval(self.pool_options.get("lease_seconds"))
        connection_created.connect(_set_session_limits)
        db.open_worker_pool(1)
        self.hostbeat = HostHeartbeat(
            self.pid, queues=queue_names(parse_queues(self.pool_options.get("queues"), 1)),
            interval=interval, leader_lease_seconds=c.LEADER_LEASE_SECONDS or 3 * interval,
            elect=c.MAINTENANCE_LEADER, hostname=self.pool_options.get("hostname"))
        self.hostbeat.start()

    def _stop_heartbeat(self) -> None:
        """After the last child exited: one last pass removes the stopped children's rows and
        resigns the lease a child held."""
        from django.db.backends.signals import connection_created

        from .. import db
        from .base import CONNECTION_ERRORS
        from .pool import _set_session_limits

        self.hostbeat.stop()
        self.hostbeat.join(timeout=10)
        try:
            with db.worker_connection():
                self.hostbeat.run_once()
        except CONNECTION_ERRORS as exc:
            log.error("supervisor: could not remove the stopped children's rows (%s); the "
                      "reaper forgets them once they are silent", exc)
        finally:
            db.close_worker_pool()
            connection_created.disconnect(_set_session_limits)

    # -- one child -------------------------------------------------------------------------
    def _start(self, slot: Slot) -> None:
        from .hostbeat import ChildReport

        slot.beat = self.context.Value("d", 0.0, lock=False)
        slot.report = ChildReport.create(self.context, self._threads())
        slot.killed_by_stop = False
        relay = child_conn = None
        if self.relay is not None:
            slot.wake_conn, child_conn = self.context.Pipe(duplex=True)
            relay = (child_conn, self.listening)
        slot.process = self.context.Process(
            target=_child_main, name=f"jobqueue-worker-{slot.index}",
            args=(self.pool_options, slot.beat, self.pid, self.max_jobs, self.max_memory_bytes,
                  self.log_settings, relay, slot.report))
        slot.process.start()
        self.hostbeat.attach(slot.index, slot.process.pid, slot.report)
        if child_conn is not None:
            child_conn.close()  # the child has its own copy; ours would keep the pipe open
            self.relay.attach(slot.index, slot.wake_conn)
        slot.started_at, slot.restart_at = time.monotonic(), None
        log.info("supervisor: started worker process %d (pid %s)", slot.index, slot.process.pid)

    def _threads(self) -> int:
        """How many executor threads each child runs (the size of its running-jobs report)."""
        from .. import conf
        from .pool import parse_queues

        threads = self.pool_options.get("threads") or conf.get().WORKER_THREADS
        return sum(spec.threads for spec in parse_queues(self.pool_options.get("queues"),
                                                          threads))

    def _settle(self, slot: Slot, pid: int, code: int | None, stopping: bool) -> None:
        """A child that died (not a planned exit): its jobs settled now, not at lease expiry.
        Those its handlers were running are charged the attempt (retried or failed by their
        policy): one of them killed it, or it froze running them, and which one cannot be
        told from the exit status; so the killer runs out of attempts instead of killing
        process after process. What it held without running (prefetched) goes back
        uncharged. A death the supervisor's stop caused (a second signal, past the grace)
        charges nothing."""
        from .. import db
        from ..registry import registry
        from .base import CONNECTION_ERRORS

        def policy_for(job_type: str):
            spec = registry.get(job_type)
            return spec.retry_policy if spec is not None else None

        process_id = self.hostbeat.process_id(pid)
        charge = not slot.killed_by_stop
        try:
            with db.worker_connection():
                done = self.hostbeat.engine.settle_dead_process(
                    process_id, running=slot.report.running_jobs() if charge else [],
                    cause=f"worker process {process_id} died ({describe_exit(code)})",
                    charge=charge, policy_for=policy_for)
        except Exception as exc:  # noqa: BLE001 - the supervisor outlives any failure here
            log.error("supervisor: could not settle the jobs of worker process %d (pid %s) "
                      "(%s); the reaper requeues them at lease expiry", slot.index, pid, exc,
                      exc_info=not isinstance(exc, CONNECTION_ERRORS))
            return
        if done.retried or done.failed or done.released:
            log.warning("supervisor: worker process %d (pid %s) died holding jobs: charged an "
                        "attempt (running): retried %s, failed %s; released uncharged (not "
                        "started): %s", slot.index, pid, done.retried, done.failed,
                        done.released)

    def _reap(self, slot: Slot, stopping: bool) -> None:
        """A child that ended: log how, and when (if at all) to start its successor."""
        proc = slot.process
        proc.join()
        if self.relay is not None:
            self.relay.detach(slot.index)
        slot.wake_conn = None
        code = proc.exitcode
        # Never beaten for again; its row removed if it stopped as planned, kept (it turns
        # lost) if it was killed or crashed.
        planned = stopped_as_planned(code, stopping=stopping)
        self.hostbeat.detach(slot.index, graceful=planned)
        if not planned:
            self._settle(slot, proc.pid, code, stopping)
        slot.exits.append(code)
        slot.process = None
        now = time.monotonic()
        if stopping:
            log.info("supervisor: worker process %d (pid %s) %s", slot.index, proc.pid,
                     describe_exit(code, stopping=True))
            return
        if code in (EXIT_RECYCLED, EXIT_HARD_TIMEOUT):
            slot.restart_at = now
            log.warning("supervisor: worker process %d (pid %s) %s; starting a new one",
                        slot.index, proc.pid, describe_exit(code))
            return
        if now - slot.started_at >= STABLE_SECONDS:
            slot.crashes = 0
        slot.crashes += 1
        delay = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (slot.crashes - 1))
        slot.restart_at = now + delay
        log.error("supervisor: worker process %d (pid %s) %s; starting a new one in %.1fs",
                  slot.index, proc.pid, describe_exit(code), delay)

    def _check_frozen(self, slot: Slot, now: float) -> None:
        beat = slot.beat.value
        last = beat if beat else slot.started_at
        limit = FROZEN_SECONDS if beat else STARTUP_SECONDS
        if now - last > limit:
            log.error("supervisor: worker process %d (pid %s) has not beaten for %.0fs "
                      "(frozen or stopped): killing it", slot.index, slot.process.pid, now - last)
            slot.process.kill()

    # -- the loop ----------------------------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        self.signals += 1

    def running(self) -> list[Slot]:
        return [s for s in self.slots if s.process is not None]

    def run(self) -> int:
        """Supervise until a signal; return the exit status (0: every child stopped in time)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self._start_listening()
        self._start_heartbeat()
        for slot in self.slots:
            self._start(slot)
        if self.stdout is not None:
            self.stdout.write(f"supervisor {self.pid} running {self.processes} worker "
                              f"processes; Ctrl-C to stop\n")
            self.stdout.flush()
        while not self.signals:
            now = time.monotonic()
            for slot in self.slots:
                if slot.process is not None and not slot.process.is_alive():
                    self._reap(slot, stopping=False)
                if slot.process is None and slot.restart_at is not None \
                        and now >= slot.restart_at and not self.signals:
                    self._start(slot)
                elif slot.process is not None:
                    self._check_frozen(slot, now)
            sentinels = [s.process.sentinel for s in self.running()]
            wait_for_sentinels(sentinels, timeout=0.5) if sentinels else time.sleep(0.5)
        return self._stop()

    def _stop(self) -> int:
        log.info("supervisor: stopping %d worker process(es), grace %ss", len(self.running()),
                 self.shutdown_grace)
        for slot in self.running():
            slot.process.terminate()  # SIGTERM: the child's graceful shutdown
        deadline = time.monotonic() + self.shutdown_grace + STOP_MARGIN_SECONDS
        code = 0
        while self.running():
            if self.signals > 1 or time.monotonic() > deadline:
                why = "second signal" if self.signals > 1 else "past the grace period"
                log.warning("supervisor: %s: killing %d worker process(es) at once", why,
                            len(self.running()))
                for slot in self.running():
                    slot.killed_by_stop = True
                    slot.process.kill()
                code = 1
            for slot in self.running():
                if not slot.process.is_alive():
                    self._reap(slot, stopping=True)
                    if not stopped_as_planned(slot.exits[-1], stopping=True):
                        code = 1  # planned exits recorded or released all they held
            sentinels = [s.process.sentinel for s in self.running()]
            if sentinels:
                wait_for_sentinels(sentinels, timeout=0.2)
        self._stop_listening()
        self._stop_heartbeat()
        log.info("supervisor: stopped")
        return code
