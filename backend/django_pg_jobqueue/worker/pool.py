"""The worker pool of one `run_job_workers` process.

    lanes (one per --queues group) --claim in batches--> executor threads --outcome-->
        completer (batched, fenced)      renewer (leases, cancel, timeouts, heartbeat)
        reaper (expired leases)          listener (LISTEN/NOTIFY wake-ups; under a supervisor,
                                         the supervisor's, relayed: worker/relay.py)

A lane (one thread per --queues group) claims as many jobs as it has idle executors, in one
statement, and hands each to the executor whose worker id the claim stamped on it. When it
claims is its wake policy's to say (worker/wake.py). With prefetch on (the
default; worker/prefetch.py), it claims up to JOB_PREFETCH more while there is a backlog and
no concurrency limit applies, and executors that finish a job take the next of those
themselves, once the starter (worker/starter.py) has recorded that they did. Idle lanes wake
on NOTIFY from an enqueue's commit, or after the poll interval (with jitter) as a fallback.
"""
import logging
import os
import socket
import threading
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections
from django.db.backends.signals import connection_created

from .. import conf, db, middleware
from ..context import SHUTDOWN
from ..engine import ClaimedJob, Engine, default_engine
from ..exceptions import LeaseLost
from ..states import PREFETCH_WORKER_SUFFIX
from . import forks
from .base import CONNECTION_ERRORS, Backoff, RateLimitedLog
from .completer import Completer
from .executor import Executor
from .exits import exit_now
from .held import Held, HeldJobs
from .hostbeat import ChildReport
from .leader import HostLeadership, Leadership
from .listener import Listener
from .overrides import ClaimPlan, HostOverrides
from .overrides import plan as plan_claim
from .periodic import PeriodicEnqueuer
from .prefetch import Prefetched
from .pruner import Pruner
from .reaper import Reaper
from .relay import RelayedWakeups
from .renewer import LeaseRenewer
from .seek import ClaimSeek
from .signals import Poll, TestSignals
from .stager import Stager
from .starter import Starter
from .stats import PoolStats
from .stuck import StuckWatch
from .unknown_types import UnknownTypes
from .wake import WakePolicy

log = logging.getLogger("django_pg_jobqueue.worker")


# JOB_WAKE_JITTER_SECONDS's default (None) for the children of a supervisor.
SUPERVISED_WAKE_JITTER_SECONDS = 0.002


@dataclass(frozen=True)
class LaneSpec:
    queues: tuple[str, ...] | None  # None: every queue
    threads: int


def parse_queues(value: str | None, default_threads: int) -> list[LaneSpec]:
    """'' -> one lane over all queues; 'a,b' -> one lane over a and b; 'a=4,b=1' -> a lane each."""
    if not value:
        return [LaneSpec(None, default_threads)]
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if all("=" in p for p in parts):
        lanes = []
        for p in parts:
            name, _, n = p.partition("=")
            if not name.strip() or not n.strip().isdigit() or int(n) < 1:
                raise ValueError(f"bad queue spec {p!r}: expected name=threads")
            lanes.append(LaneSpec((name.strip(),), int(n)))
        return lanes
    if any("=" in p for p in parts):
        raise ValueError("give either 'a,b' or 'a=4,b=1', not a mix")
    return [LaneSpec(tuple(parts), default_threads)]


def queue_names(lane_specs: list[LaneSpec]) -> list[str]:
    """The queues a pool's row in `job_workers` names ("*": every queue)."""
    return sorted({q for s in lane_specs for q in (s.queues or ("*",))})


class Lane(threading.Thread):
    def __init__(self, pool: "WorkerPool", spec: LaneSpec, executors: list[Executor]):
        label = ",".join(spec.queues) if spec.queues else "*"
        super().__init__(name=f"lane[{label}]", daemon=True)
        self.pool, self.spec, self.executors = pool, spec, executors
        self.wake = threading.Event()
        self.errors = RateLimitedLog(log)
        self.backoff = Backoff()  # between claims that failed
        self.prefetch_id = pool.process_id + PREFETCH_WORKER_SUFFIX
        # Stays empty with prefetch off; never deeper than its threads start within a moment.
        self.prefetched = Prefetched(pool.prefetch, threads=len(executors))
        self.seek = ClaimSeek()  # from the head, or past its last claim while that is slow
        # When to claim (worker/wake.py): fed by the listener's notifications and by the
        # claims' results. An executor that frees up sets only `wake`: without a backlog, a
        # notification or a due poll it does not make the lane claim.
        self.policy = WakePolicy(
            poll_interval=pool.poll_interval, poll_interval_max=pool.poll_interval_max,
            poll_jitter=pool.poll_jitter, fetch_cooldown=pool.fetch_cooldown,
            wake_jitter=pool.wake_jitter, rate_poll=pool.rate_poll, listening=pool.listening)

    # While there is a backlog, a lane woken by the first executor to free up waits
    # this long for more to free up, so that it claims (and the completer completes) in
    # batches instead of one job per round trip. An idle pool claims at once.
    LINGER_SECONDS = 0.002

    def _linger(self, want: int) -> list[Executor]:
        deadline = time.monotonic() + self.LINGER_SECONDS
        while True:
            free = [e for e in self.executors if e.idle and e.is_alive()][:want]
            remaining = deadline - time.monotonic()
            if len(free) >= want or remaining <= 0 or self.pool.stopping.is_set():
                return free
            self.wake.wait(remaining)
            self.wake.clear()

    def _hand_out_prefetched(self, free: list[Executor]) -> list[Executor]:
        """Give prefetched jobs to idle executors; return the executors still idle."""
        while free:
            held, _ = self.prefetched.take(to=free[-1])
            if held is None:
                break
            free.pop().assign(held.job, held)
        return free

    def _release_prefetched(self, stale: list[Held], message: str) -> None:
        if not stale:
            return
        self.pool.held.discard_many([(h.job.id, h.job.lease_token) for h in stale])
        self.pool._release([(h.job.id, h.job.lease_token, h.job.worker_id) for h in stale],
                           message=message)

    def _idle_wait(self) -> float:
        """How long an idle lane may sleep: the poll interval, or less when a prefetched
        job is due for release."""
        due = self.prefetched.seconds_until_stale()
        return self.pool.poll_interval if due is None else min(self.pool.poll_interval, due)

    def run(self) -> None:
        pool, policy = self.pool, self.policy
        want = min(pool.batch_size, len(self.executors))
        db.use_worker_pool()  # a connection of the pool's while there is work (db.py)
        try:
            while not pool.stopping.is_set():
                self.wake.clear()
                # What the host's overrides let this lane claim (None: none touches its
                # queues), once a pass: the claim asks again only when they changed since,
                # or under the claim lock when a cap bounds it (_claim_and_hand_out).
                overrides = pool.overrides.current()
                plan = self._plan(len(self.executors))
                if plan is not None and len(self.prefetched):  # they would start without asking
                    self._release_prefetched(self.prefetched.take_all(),
                                             "the host's queue overrides changed")
                free = self._hand_out_prefetched(
                    [e for e in self.executors if e.idle and e.is_alive()])
                stale = self.prefetched.stale()
                if stale:
                    log.info("%s: %d prefetched job(s) found no thread within %ss; releasing "
                             "them, prefetch depth now %d", self.name, len(stale),
                             Prefetched.MAX_WAIT_SECONDS, self.prefetched.depth)
                    self._release_prefetched(stale, f"prefetched, but no thread was free "
                                                    f"within {Prefetched.MAX_WAIT_SECONDS:g}s")
                if plan is not None:
                    free = free[:plan.limit]
                limited = plan is not None or self._limited()
                extra = 0 if limited else self.prefetched.wanted(policy.backlog)
                if not free and not extra:
                    self.wake.wait(self._idle_wait())
                    continue
                if not pool.completer.has_room(timeout=self._idle_wait()):
                    if pool.test_signals is not None:
                        pool.test_signals.throttled.emit(self.name)
                    continue  # flow control: the completer is behind (worker/completer.py)
                step = policy.next_step(extra=extra, can_probe=bool(
                    pool.prefetch and not limited and not len(self.prefetched)))
                if not step.claim:
                    (self.wake if step.wakeable else pool.stopping).wait(step.seconds)
                    continue
                extra = step.extra
                if policy.backlog and not extra and len(free) < want:
                    free = self._linger(want)
                free = free[: pool.batch_size]
                extra = min(extra, pool.batch_size - len(free))
                granted = pool.reserve_claims(len(free) + extra)
                if granted < len(free) + extra:  # --max-jobs-per-process: the last few
                    free, extra = free[:granted], max(0, granted - len(free))
                if not granted:
                    pool.stopping.wait(pool.poll_interval)
                    continue
                if pool.overrides.current() is not overrides:  # refreshed during the pass
                    plan = self._plan(len(free))
                if not self._claim_and_hand_out(plan, free, extra, granted):
                    continue  # nothing to claim here, or the claim failed: the top waits
                if not policy.backlog and not len(self.prefetched):
                    rate_window = self._rate_window()  # on the lane's connection, while it has it
                    self._return_connection()  # idle: back to the pool until woken
                    self.wake.wait(policy.idle_wait(rate_window=rate_window))
        finally:
            try:
                self._release_prefetched(self.prefetched.take_all(), "worker shutting down")
            finally:
                self._return_connection()
                db.queue_connection().close()

    def _claim_and_hand_out(self, plan: ClaimPlan | None, free: list[Executor], extra: int,
                            granted: int) -> bool:
        """Claim a job for each of the `free` executors and `extra` to prefetch, as the host's
        overrides `plan` allows, and hand them out; the `granted` claims it does not use go
        back to the pool. Whether it claimed: False when the plan leaves nothing to claim
        (a stopped or full queue) or the claim failed (then it backed off)."""
        pool, policy, signals = self.pool, self.policy, self.pool.test_signals
        # The host's overrides (worker/overrides.py): leave out its stopped and full queues,
        # take no more of a capped one than its room; lanes a cap with room covers decide and
        # claim one at a time, so that two never fill one room.
        capped = plan is not None and plan.capped
        with pool.overrides.claim_lock if capped else nullcontext():
            if capped:
                plan = self._plan(len(free))  # again, now that no other lane claims
            if plan is not None and plan.limit < len(free):
                pool.return_claims(len(free) - plan.limit)
                granted -= len(free) - plan.limit
                free = free[:plan.limit]
            if not free and not extra:
                pool.return_claims(granted)
                return False
            busy = policy.backlog  # a busy loop: one statement per claim from now on
            claim = policy.claim_started()  # a NOTIFY from now on claims again
            heard = signals is not None and pool.listening()
            try:
                close_old_connections()
                if busy:
                    pool.engine.pin_claim_planner_settings()  # once per connection
                after = self.seek.after()
                began = time.monotonic()
                jobs = pool.engine.claim(
                    worker_ids=[e.worker_id for e in free] + [self.prefetch_id] * extra,
                    queues=list(self.spec.queues) if self.spec.queues else None,
                    lease_seconds=pool.lease_seconds,
                    exclude_types=pool.unknown_types.current(),
                    exclude_queues=list(plan.exclude) if plan is not None else None,
                    after=after)
                self.seek.claimed(jobs, time.monotonic() - began, sought=after is not None)
                self.backoff.reset()
            except CONNECTION_ERRORS as exc:
                policy.claim_failed()
                pool.return_claims(granted)
                self.errors.error("%s: database unavailable: %s", self.name, exc)
                db.queue_connection().close()
                pool.stopping.wait(self.backoff.next_delay())
                return False
            except Exception:
                policy.claim_failed()
                pool.return_claims(granted)
                log.exception("%s: claim failed", self.name)
                db.queue_connection().close()
                pool.stopping.wait(self.backoff.next_delay())
                return False
            asked = len(free) + extra
            burst = policy.claimed(claim, asked=asked, found=len(jobs))
            pool.return_claims(granted - len(jobs))
            if signals is not None:
                signals.polled.emit(Poll(len(jobs), heard))
            log.debug("%s: polled, claimed %d of %d", self.name, len(jobs), asked)
            self._hand_out(jobs, free)
        if burst:
            pool.more_work(self.spec.queues)
        return True

    def _hand_out(self, jobs: list[ClaimedJob], free: list[Executor]) -> None:
        """Each claimed job to the executor whose worker id the claim stamped on it, or into
        the prefetch buffer; one claimed for a thread that ended meanwhile is released."""
        by_worker = {e.worker_id: e for e in free}
        orphans, prefetched = [], []
        debug = log.isEnabledFor(logging.DEBUG)  # once per claim, not per job
        for job in jobs:
            if debug:
                log.debug("claimed job=%s type=%s attempt=%s worker=%s", job.id,
                          job.type, job.attempt, job.worker_id)
            executor = by_worker.get(job.worker_id)
            if executor is None:
                prefetched.append(Held.of(job, job.worker_id, owner=self.prefetched,
                                          engine=self.pool.engine))
            elif executor.is_alive():
                executor.assign(job)
            else:  # its thread ended since the claim began: nobody would run it
                orphans.append((job.id, job.lease_token, job.worker_id))
        if prefetched:  # held, then buffered: two locks a claim, not two a job
            self.pool.held.add_many(prefetched)
            self.prefetched.put_many(prefetched)
        if orphans:
            log.error("%s: %d job(s) claimed for an executor thread that is no longer "
                      "alive; releasing them", self.name, len(orphans))
            self.pool._release(orphans, message="claimed for an executor thread that is "
                                                "no longer alive")

    def cooling_down(self) -> bool:
        return self.policy.cooling_down()

    def _return_connection(self) -> None:
        """Give the lane's connection back to the worker's pool, its claim settings
        unpinned first (the pool's other borrowers plan with the server's own)."""
        try:
            self.pool.engine.unpin_claim_planner_settings()
        except CONNECTION_ERRORS:
            db.queue_connection().close()  # broken: the pool discards it
        db.return_worker_connection()

    def _plan(self, wanted: int) -> ClaimPlan | None:
        """What the host's overrides let this lane claim of `wanted` jobs now (None: no
        override touches its queues), counting the jobs of each queue this process's
        executors run or were just handed."""
        overrides = self.pool.overrides
        if not overrides.touches(self.spec.queues):
            return None
        running = Counter(e.queue for e in self.pool.executors if not e.idle and e.queue)
        return plan_claim(overrides.current(), self.spec.queues, running, wanted)

    def _limited(self) -> bool:
        """Whether a concurrency limit applies to this lane's claims: then it prefetches
        nothing, so that a limited slot is never spent on a job waiting for a thread."""
        try:
            return self.pool.engine.limits_apply(self.spec.queues)
        except Exception:  # noqa: BLE001 - cannot tell (the database is away): do not prefetch
            return True

    def _rate_window(self) -> float:
        """The longest period of the rate limits this lane's claims count against (0: none)."""
        try:
            return self.pool.engine.rate_window(self.spec.queues)
        except Exception:  # noqa: BLE001 - cannot tell (the database is away): back off as usual
            return 0.0

    def matches(self, queue_name: str | None) -> bool:
        return queue_name is None or self.spec.queues is None or queue_name in self.spec.queues


class WorkerPool:
    def __init__(self, *, threads: int | None = None, queues: str | None = None,
                 lease_seconds: float | None = None, poll_interval: float | None = None,
                 reaper: bool = True, listen: bool | None = None, batch_size: int | None = None,
                 shutdown_grace: float | None = None, prefetch: int | None = None,
                 engine: Engine | None = None, test_signals: TestSignals | None = None,
                 max_jobs: int | None = None, supervisor_pid: int | None = None,
                 relay: tuple | None = None, report: ChildReport | None = None,
                 hostname: str | None = None):
        c = conf.get()
        self.engine = engine or default_engine()  # every read and write of jobs (engine.py)
        self.lane_specs = parse_queues(queues, threads or c.WORKER_THREADS)
        self.lease_seconds = lease_seconds or c.LEASE_SECONDS
        self.poll_interval = poll_interval or c.POLL_INTERVAL_SECONDS
        self.poll_jitter = c.POLL_JITTER_SECONDS
        self.poll_interval_max = max(self.poll_interval, c.POLL_INTERVAL_MAX_SECONDS)
        self.batch_size = batch_size or c.CLAIM_BATCH_SIZE
        self.prefetch = c.PREFETCH if prefetch is None else prefetch
        self.shutdown_grace = c.SHUTDOWN_GRACE_SECONDS if shutdown_grace is None else shutdown_grace
        self.fetch_cooldown = c.FETCH_COOLDOWN_SECONDS
        self.rate_poll = c.RATE_LIMIT_POLL_SECONDS
        # By default only a supervised child jitters its notified claims: a lone process
        # would pay it on every pickup (a millisecond on average) for no claim it saves alone.
        self.wake_jitter = (c.WAKE_JITTER_SECONDS if c.WAKE_JITTER_SECONDS is not None
                            else SUPERVISED_WAKE_JITTER_SECONDS if supervisor_pid is not None
                            else 0.0)
        # The machinery's connections (db.worker_connection): each lane's claims, the
        # completer, the renewer, and one for the rest (reaper, pruner, periodic, the
        # executors' failure writes), unless JOB_WORKER_POOL_SIZE says otherwise.
        self.db_pool_size = c.WORKER_POOL_SIZE or len(self.lane_specs) + 3
        # The host this process reports (job_workers.hostname, the workers page) and whose
        # queue overrides it applies: run_job_workers --hostname, by default the machine's.
        self.hostname = hostname or socket.gethostname()
        self.process_id = f"{self.hostname}-{os.getpid()}"
        self.overrides = HostOverrides(self.hostname, self.engine)
        self.stopping = threading.Event()   # stop claiming
        self.hard_stop = threading.Event()  # give up retrying writes
        # Events tests wait on (worker/signals.py): None, the default, sends none.
        self.test_signals = test_signals
        self.stats = PoolStats(test_signals)
        # --max-jobs-per-process: how many more jobs this pool may claim (None: no limit).
        self.max_jobs = max_jobs
        self._claims_left = max_jobs
        self._claims_lock = threading.Lock()
        self.held = HeldJobs()
        self.report = report  # under a supervisor: what this process tells it (hostbeat.py)
        # What knows, outside this process, the job each executor runs (set_running), so that
        # a prefetched job's start need not be waited for (`start_prefetched`): the supervisor
        # (through `report`), else a start witness `start_witness()` launched, else nothing.
        self.witness: Any = report
        self._own_witness = False
        self.unknown_types = UnknownTypes()  # types with no handler here, left out of claims
        self.completer = Completer(self.held, on_done=self.stats.completed, engine=self.engine)
        # Records prefetched jobs' starts; one noted without waiting whose job has succeeded
        # meanwhile (handed to the completer) is left out.
        self.starter = Starter(engine=self.engine,
                               succeeded=lambda held: held.owner is self.completer)
        self.lanes: list[Lane] = []
        n = 0
        for spec in self.lane_specs:
            executors = []
            for _ in range(spec.threads):
                n += 1
                executors.append(Executor(self, None, f"{self.process_id}-{n}", n - 1))
            lane = Lane(self, spec, executors)
            for e in executors:
                e.lane = lane
            self.lanes.append(lane)
        self.executors = [e for lane in self.lanes for e in lane.executors]
        all_queues = queue_names(self.lane_specs)
        self.stuck = StuckWatch(self.executors, engine=self.engine)
        self.renewer = LeaseRenewer(self.held, process_id=self.process_id,
                                    threads=len(self.executors), queues=all_queues,
                                    lease_seconds=self.lease_seconds, engine=self.engine,
                                    stuck=self.stuck, jobs_done=self.jobs_done,
                                    supervisor_pid=supervisor_pid, hostname=self.hostname,
                                    after_pass=self._after_renewal)
        self.reaper = Reaper(engine=self.engine) if reaper else None
        use_listen = c.LISTEN_NOTIFY if listen is None else listen
        # A supervised child is woken by its supervisor, which holds the host's one LISTEN
        # connection (`relay`: this child's end of its pipe, and the supervisor's "LISTEN is
        # up" event; worker/relay.py); any other process listens itself.
        self.listener: Listener | RelayedWakeups | None = None
        if use_listen and relay is not None:
            self.listener = RelayedWakeups(relay[0], relay[1], self.wake, self.can_take)
        elif use_listen:
            self.listener = Listener(self.wake)
        self.pruner = Pruner(engine=self.engine) if Pruner.enabled() else None
        # Each tick once, whichever pool wins; the schedules are JOB_DATABASE's workers' (a
        # tick goes to its queue's shard through enqueue, JOB_SHARDS).
        self.periodic = (None if db.serving_shard()
                         else PeriodicEnqueuer(engine=self.engine))
        self.stager = Stager(self.poll_interval, engine=self.engine)
        # The loops one process per database runs (worker/leader.py): elected with the
        # renewer's heartbeat; the renewer itself runs everywhere (its leases are its own).
        # Under a supervisor, the supervisor beats for this process with the host's other
        # children, in one statement, and takes the leader's lease for one of them; this
        # process writes its figures into `report` and reads from it whether it leads
        # (worker/hostbeat.py).
        leader_lease = c.LEADER_LEASE_SECONDS or 3 * self.renewer.interval
        self.leadership: Leadership = (
            Leadership(self.process_id, lease_seconds=leader_lease, engine=self.engine)
            if report is None else
            HostLeadership(self.process_id, report, supervisor_pid=supervisor_pid or 0,
                           lease_seconds=leader_lease, engine=self.engine))
        self.renewer.elector = self.leadership
        self.renewer.report = report
        for loop in (self.reaper, self.pruner, self.periodic, self.stager):
            if loop is not None:
                loop.leadership = self.leadership
        self.maintenance: list = [t for t in (self.renewer, self.reaper, self.pruner,
                                              self.periodic, self.stager) if t]
        for part in (*self.maintenance, self.leadership, self.listener, self.held):
            if part is not None:  # None, the default signals: each part sends none
                part.signals = test_signals

    # -- lifecycle -----------------------------------------------------------------------------
    def _after_renewal(self) -> None:
        """After each renewal pass: the pool's summary line (stats.py), and the host's queue
        overrides read again (worker/overrides.py); when they changed, every lane looks at
        once (a queue started again, or given more threads, claims without waiting for a
        poll)."""
        self.stats.log_summary()
        self.refresh_overrides()

    def refresh_overrides(self) -> None:
        try:
            changed = self.overrides.refresh()
        except CONNECTION_ERRORS:
            return  # the database is away: the renewer says so; the last ones read hold
        except Exception:  # noqa: BLE001 - the last ones read stay in force until the next pass
            log.warning("host %s: could not read its queue overrides; keeping the last ones",
                        self.hostname, exc_info=True)
            return
        if changed:
            self.wake(None)

    def wake(self, queue_name: str | None = None) -> None:
        """A notification: jobs may wait in `queue_name` (None: in any queue)."""
        for lane in self.lanes:
            if lane.matches(queue_name):
                lane.policy.notify()
                lane.wake.set()

    def listening(self) -> bool:
        """Whether notifications reach this pool now (its LISTEN connection, or under a
        supervisor the supervisor's, is up): then an idle lane may poll less often."""
        return self.listener is not None and self.listener.connected.is_set()

    def can_take(self, queue_name: str | None) -> bool:
        """Whether a lane of `queue_name` has an idle thread and is not cooling down after a
        claim that found nothing (a relayed wake-up is passed on to another process of the
        host if not)."""
        return any(e.idle and e.is_alive() for lane in self.lanes
                   if lane.matches(queue_name) and not lane.cooling_down()
                   for e in lane.executors)

    def more_work(self, queues: tuple[str, ...] | None) -> None:
        """A lane's claims keep coming back full: with a supervisor, wake another process of
        the host for it (worker/relay.py); a lone process has no one to tell."""
        if isinstance(self.listener, RelayedWakeups):
            self.listener.more(queues[0] if queues and len(queues) == 1 else None)

    def start(self) -> "WorkerPool":
        forks.install()  # a handler's forked child never runs the worker's code (forks.py)
        connection_created.connect(_set_session_limits)
        db.open_worker_pool(self.db_pool_size)
        log.info("worker pool %s starting: %s, lease %ss, database %s", self.process_id,
                 ", ".join(f"{','.join(s.queues) if s.queues else 'all queues'} x{s.threads}"
                           for s in self.lane_specs), self.lease_seconds, db.home_alias())
        with db.worker_connection():
            self.refresh_overrides()  # before the first claim: a stopped queue stays so
        self.completer.start()
        self.starter.start()
        for e in self.executors:
            e.start()
        for t in self.maintenance:
            t.start()
        if self.listener:
            self.listener.start()
        for lane in self.lanes:
            lane.start()
        return self

    def start_witness(self) -> None:
        """Launch this process's start witness (witness.py), before start(): its threads then
        run a prefetched job without waiting for its start to be written. One that cannot be
        launched is logged, and the threads wait as without one."""
        if self.witness is not None or not self.prefetch:
            return
        ids = [""] * len(self.executors)
        for e in self.executors:
            ids[e.index] = e.worker_id
        try:
            self.witness = self.engine.start_witness(self.process_id + PREFETCH_WORKER_SUFFIX, ids)
        except Exception as exc:  # noqa: BLE001 - the threads wait for their starts instead
            log.warning("worker pool %s: its start witness could not be launched (%s); each "
                        "thread waits for a prefetched job's start to be written",
                        self.process_id, exc)
            return
        self._own_witness = True

    def start_prefetched(self, job_id: int, lease_token, worker_id: str, *,
                         witnessed: bool = True, held=None) -> bool:
        """Record that `worker_id` takes prefetched job `job_id` (worker/starter.py): when the
        thread's slot names it (`witnessed`) and a live witness reads the slots, queued
        without waiting (True); else written and waited for (whether the lease was still
        held; StartNotRecorded if it cannot tell)."""
        witness = self.witness
        if witnessed and witness is not None:
            if witness.alive():
                self.starter.note_start(job_id, lease_token, worker_id, held)
                return True
            if self._own_witness:
                log.warning("worker pool %s: its start witness exited; each thread waits for "
                            "a prefetched job's start to be written from now on",
                            self.process_id)
                self.witness.close()
                self.witness, self._own_witness = None, False
        return self.starter.start_job(job_id, lease_token, worker_id)

    def jobs_done(self) -> int:
        """The attempts this pool's executors ran to an outcome they wrote: succeeded,
        retry scheduled, failed, cancelled (not those started and not finished, nor those
        whose lease was lost)."""
        return self.stats.finished()

    def reserve_claims(self, wanted: int) -> int:
        """How many of `wanted` jobs a lane may claim now (all of them without
        --max-jobs-per-process); what it does not claim it gives back (return_claims)."""
        if self._claims_left is None:
            return wanted
        with self._claims_lock:
            granted = min(wanted, self._claims_left)
            self._claims_left -= granted
            return granted

    def return_claims(self, n: int) -> None:
        if self._claims_left is not None and n > 0:
            with self._claims_lock:
                self._claims_left += n

    def spent(self) -> bool:
        """Whether the pool claimed its --max-jobs-per-process and holds none of them any
        longer (all run and recorded, or released): then its process recycles."""
        if self._claims_left is None:
            return False
        with self._claims_lock:
            if self._claims_left > 0:
                return False
        return not self.busy_executors() and not len(self.held)

    def busy_executors(self) -> list[Executor]:
        return [e for e in self.executors if not e.idle]

    def shutdown(self, grace: float | None = None, *, charge: str | None = None) -> dict[str, int]:
        """Stop claiming; let running handlers finish within the grace period; then ask the
        rest to stop and release their jobs to queued at once (no attempt charged). With
        `charge` (a recycle for memory: worker/process.py), the handlers still running then
        are failed with that error instead, charged the attempt, by their retry policy."""
        grace = self.shutdown_grace if grace is None else grace
        log.info("worker pool %s stopping: %d running, grace %ss", self.process_id,
                 len(self.busy_executors()), grace)
        self.stopping.set()
        for lane in self.lanes:
            lane.wake.set()
        deadline = time.monotonic() + grace
        while self.busy_executors() and time.monotonic() < deadline:
            time.sleep(0.05)
        running = [(h, e.runner.policy) for e in self.busy_executors()
                   for h in e.runner.running()]
        leftovers = [h for h, _ in running]
        if leftovers:
            # The job's fate is written before its handler is woken: a handler that returns
            # when asked to stop cannot complete the job first. The stop's reason is set
            # before, so that a write of the handler's refused in between is that stop.
            for h in leftovers:
                h.ctx.name_stop(SHUTDOWN)
                self.held.discard(h.job.id, h.job.lease_token)
            if charge is None:
                self._release([(h.job.id, h.job.lease_token, h.job.worker_id)
                               for h in leftovers])
            else:
                self._charge(running, charge)
            for h in leftovers:
                h.ctx.request_stop(SHUTDOWN)
        self.completer.stop()
        self.completer.join(timeout=10)
        self.starter.stop()
        self.starter.join(timeout=10)
        if self._own_witness:  # the starts are written: it has nothing left to tell
            self.witness.close()
            self._own_witness = False
        # Every executor, busy ones too: a handler still running past the grace ends its
        # thread when it returns (after its refused outcome), which closes the connections it
        # holds, instead of the thread idling on with them in a process that goes on (tests,
        # a host that runs the pool in-process).
        for e in self.executors:
            e.stop()
        for t in self.maintenance:
            t.stop()
        if self.listener:
            self.listener.stop()
        try:
            close_old_connections()
            self.renewer.remove_worker_row()
            self.leadership.resign()  # the next heartbeat elsewhere takes maintenance over
        except CONNECTION_ERRORS:
            pass
        for t in [*self.lanes, *self.maintenance]:
            t.join(timeout=5)
        self.hard_stop.set()
        db.close_worker_pool()
        connection_created.disconnect(_set_session_limits)
        self.stats.log_summary(final=True)
        log.info("worker pool %s stopped: %s", self.process_id, self.stats.snapshot())
        return self.stats.snapshot()

    def _charge(self, running, error: str) -> None:
        """Fail each (held job, its type's retry policy) with `error`, charging the attempt;
        on a connection error, the reaper does it at lease expiry."""
        for h, policy in running:
            try:
                close_old_connections()
                with db.worker_connection():
                    status, _ = self.engine.fail(h.job.id, h.job.lease_token,
                                                 worker_id=h.job.worker_id, error=error,
                                                 reason="memory_limit", policy=policy,
                                                 attempt=h.job.attempt)
            except LeaseLost:
                continue
            except CONNECTION_ERRORS as exc:
                log.error("could not charge job=%s (%s); the reaper requeues it at lease "
                          "expiry", h.job.id, exc)
                continue
            log.warning("job=%s type=%s attempt=%s: %s -> %s", h.job.id, h.job.type,
                        h.job.attempt, error, status)
            middleware.report_failure(h.job, None, status, reason="memory_limit", error=error)

    def _release(self, items, message: str = "worker shutting down") -> None:
        backoff = Backoff()
        for _ in range(5):
            try:
                close_old_connections()
                with db.worker_connection():
                    released = self.engine.release_many(items, message=message)
                self.stats.released(len(released))
                if self.test_signals is not None:
                    self.test_signals.released.emit(*released)
                log.info("released %d job(s) to the queue: %s", len(released), released)
                return
            except CONNECTION_ERRORS as exc:
                log.error("release failed (%s); the reaper will requeue them on lease expiry", exc)
                db.queue_connection().close()
                time.sleep(backoff.next_delay())


def _set_session_limits(sender, connection, **kwargs) -> None:
    """Worker sessions never hang: statements and idle transactions have a ceiling (set per
    transaction behind a transaction pooler: db.apply_worker_limits).

    And no health check: with CONN_HEALTH_CHECKS, every close_old_connections() in a worker
    loop would make the next query pay a `SELECT 1` round trip first, doubling the round trips
    of the claim and of each completion batch. The loops catch connection errors, close the
    connection and retry, which is all the check would buy."""
    connection.health_check_enabled = False
    db.apply_worker_limits(connection, statement_timeout_ms=conf.get().STATEMENT_TIMEOUT_MS,
                           application_name=f"jobqueue-worker {socket.gethostname()}-{os.getpid()}")


STRAY_THREADS_JOIN_SECONDS = 1.0


def exit_despite_stray_threads(code: int = 0,
                               join_seconds: float = STRAY_THREADS_JOIN_SECONDS) -> None:
    """After the pool's shutdown, make sure the process exits: a non-daemon thread a handler
    started (and never ended) would otherwise keep it alive, since the interpreter joins such
    threads before it exits. They get `join_seconds` in all; if any still runs, it is named
    in the log, the exit handlers run (logging's flush among them, an OpenTelemetry exporter's)
    and the process exits with `code` without waiting for it. Returns when there is none:
    the ordinary exit follows."""
    import atexit

    deadline = time.monotonic() + join_seconds
    for thread in _stray_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    stray = _stray_threads()
    if not stray:
        return
    log.warning("exiting without waiting for %d thread(s) a handler started and never ended: %s",
                len(stray), ", ".join(sorted(t.name for t in stray)))
    atexit._run_exitfuncs()
    exit_now(code)


def _stray_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]
