"""The jobs a worker process holds leases on, shared by its executors, renewer and completer.

Each held job has an owner: the executor running it, the prefetch buffer it waits in, or the
completer writing its result. An owner answers `owns(held)`: an executor while its thread is
alive and running that job or was handed it (by the buffer, which lets go only after the
executor answers for it: no renewal pass sees a job between two owners), a buffer while the
job is in it, the completer while its thread is alive. The renewer renews only owned jobs (worker/renewer.py: the watchdog)."""
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..context import JobContext
from ..engine import ClaimedJob, Engine

if TYPE_CHECKING:
    from .signals import TestSignals


@dataclass
class Held:
    job: ClaimedJob
    ctx: JobContext
    # Set just before the job's final write (complete, fail, snooze). From then on, a renewal
    # that no longer finds the job running means that write committed, not that the lease was
    # lost; if the write is refused instead, its writer records the `lease_lost` itself.
    finishing: bool = False
    # Who answers for the job now (see the module docstring); None: nobody, which the
    # watchdog treats as an orphan.
    owner: Any = None
    # Consecutive renewer passes that found no live owner (the watchdog releases at 2: one
    # pass may fall inside a hand-over, from a prefetch buffer to an executor, say).
    unowned_passes: int = 0
    # When an executor began running it (time.monotonic()); None while it waits in a prefetch
    # buffer. The stuck watch (worker/stuck.py) measures a handler's run from here.
    running_since: float | None = None
    # The worker id the database names as its owner (`locked_by`): the claim's; for a
    # prefetched job, the buffer's until the executor that takes it records its own, before
    # the handler runs (JobRunner._adopt).
    recorded_worker_id: str | None = None

    @classmethod
    def of(cls, job: ClaimedJob, worker_id: str, owner=None,
           engine: Engine | None = None) -> "Held":
        """A claimed job with the context its handler will see, run under `worker_id`, whose
        progress and log lines go through `engine` (the pool's; None: the default)."""
        return cls(job, JobContext(job_id=job.id, type=job.type, queue=job.queue,
                                   attempt=job.attempt, max_attempts=job.max_attempts,
                                   lease_token=job.lease_token, worker_id=worker_id,
                                   engine=engine),
                   owner=owner, recorded_worker_id=worker_id)

    def owned(self) -> bool:
        owner = self.owner
        return owner is not None and bool(owner.owns(self))


class HeldJobs:
    signals: "TestSignals | None" = None  # the pool's test signals, when a test asked (signals.py)

    def __init__(self):
        self._lock = threading.Lock()
        self._jobs: dict[int, Held] = {}

    def add(self, held: Held) -> None:
        with self._lock:
            self._jobs[held.job.id] = held
        if self.signals is not None:
            self.signals.claimed.emit(held.job.id)

    def add_many(self, helds: list[Held]) -> None:
        """add for each, under one lock (a claim's prefetched jobs)."""
        with self._lock:
            for held in helds:
                self._jobs[held.job.id] = held
        if self.signals is not None:
            self.signals.claimed.emit(*(held.job.id for held in helds))
            self.signals.prefetched.emit(*(held.job.id for held in helds))

    def discard(self, job_id: int, lease_token) -> Held | None:
        """Forget a job while it is still held under this lease token; return it, or None."""
        with self._lock:
            for held in self._under_their_tokens([(job_id, lease_token)]):
                return self._jobs.pop(held.job.id)
            return None

    def mark_finishing(self, job_id: int, lease_token) -> None:
        self.mark_finishing_many([(job_id, lease_token)])

    def mark_finishing_many(self, items, finishing: bool = True) -> None:
        """mark_finishing for each (job id, lease token), under one lock (`finishing` False:
        its final write was put off, the row being locked by another transaction)."""
        with self._lock:
            for held in self._under_their_tokens(items):
                held.finishing = finishing

    def discard_many(self, items) -> None:
        """discard for each (job id, lease token), under one lock."""
        with self._lock:
            for held in self._under_their_tokens(items):
                del self._jobs[held.job.id]

    def _under_their_tokens(self, items) -> list[Held]:
        """The held jobs among (job id, lease token) pairs, each only while it is still held
        under that token. Call with the lock held."""
        get, out = self._jobs.get, []
        for job_id, token in items:  # twice per completion batch, under the lock: kept plain
            held = get(job_id)
            if held is not None:
                # The token given is nearly always the held job's own object (a completion
                # carries its claim's): `is` first spares UUID.__eq__, a Python call, which
                # cost more than the rest of this loop.
                held_token = held.job.lease_token
                if held_token is token or held_token == token:
                    out.append(held)
        return out

    def snapshot(self) -> list[Held]:
        with self._lock:
            return list(self._jobs.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)
