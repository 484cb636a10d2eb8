"""Prefetch (on by default, JOB_PREFETCH): jobs a lane claimed ahead of its idle threads.

Without it, a thread that finishes a job waits for the lane's next claim round trip.
With it, while the queue has a backlog, the lane claims up to `depth` jobs more than it
has idle threads; they wait here, held (the renewer keeps their leases) and stamped
`<process>-prefetch`, and a thread that finishes a job takes the oldest one itself, without a
hand-off through the lane.

The depth adapts: it starts at 1 and doubles (up to JOB_PREFETCH) each time the prefetched jobs
all found a thread. A job that waited longer than MAX_WAIT_SECONDS (every thread busy with slow
jobs) is released back to the queue, uncharged, for another process to take, and the depth
halves; at 0, prefetching pauses for PAUSE_SECONDS. And it never holds more than the lane's
threads will start within HORIZON_SECONDS, by the running mean of its handlers' durations: for
jobs of microseconds that is JOB_PREFETCH, for CPU-bound jobs of 0.1 s on one thread it is one
job. A deeper buffer of slow jobs buys nothing (one claim round trip is milliseconds) and costs
twice: their timeouts run while they wait, and when the backlog ends one process still holds a
queue of them while the others, with nothing left to claim, stand idle (with `--processes 2
--threads 1` and CPU-bound jobs, the drain's tail ran on one core). While a concurrency limit applies to the
lane's queues (or to any job type) the lane prefetches nothing (worker/pool.py, Lane._limited):
a prefetched job is `running` and would hold a limited slot while it waits."""
import threading
import time
from collections import deque
from typing import Protocol

from .held import Held


class Taker(Protocol):
    """An executor thread taking prefetched jobs: it answers for each from the hand-over on."""

    def hand(self, held: Held) -> None: ...


class Prefetched:
    MAX_WAIT_SECONDS = 1.0
    PAUSE_SECONDS = 30.0
    HORIZON_SECONDS = 0.1
    MEAN_WEIGHT = 0.2  # of the newest duration in the running mean

    def __init__(self, limit: int, threads: int = 1):
        self.limit = limit
        self.threads = threads
        self.depth = min(1, limit)
        self._mean_seconds: float | None = None  # of this lane's handlers, None until one ran
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self._waiting: deque[tuple[float, Held]] = deque()  # (monotonic time put, held), oldest first
        self._members: set[int] = set()  # id() of each held waiting: owns() in O(1)

    def __len__(self) -> int:
        return len(self._waiting)

    def put_many(self, helds: list[Held]) -> None:
        """Buffer a claim's prefetched jobs, oldest first, under one lock."""
        now = time.monotonic()
        with self._lock:
            for held in helds:
                held.owner = self
                self._waiting.append((now, held))
                self._members.add(id(held))

    def owns(self, held: Held) -> bool:
        """Whether `held` waits here (the watchdog's question, asked of every held job on
        each renewal pass: a set lookup, not a walk of up to JOB_PREFETCH jobs)."""
        with self._lock:
            return id(held) in self._members

    def take(self, to: Taker | None = None) -> tuple[Held | None, bool]:
        """The oldest prefetched job (or None), handed to executor `to` (which answers for it
        from then on: no renewal pass sees it without an owner), and whether the lane should
        refill now."""
        with self._lock:
            if not self._waiting:
                return None, False
            held = self._waiting.popleft()[1]
            if to is not None:
                to.hand(held)
            self._members.discard(id(held))
            if not self._waiting:
                self.depth = min(self.limit, max(1, self.depth * 2))
            return held, len(self._waiting) <= self.depth // 2

    def take_type(self, job_type: str, wanted: int, to: Taker | None = None) -> list[Held]:
        """Up to `wanted` prefetched jobs of `job_type`, oldest first, handed to executor `to`
        (a chunk handler's executor fills its chunk with them before it claims more)."""
        if wanted <= 0:
            return []
        with self._lock:
            out = [held for _, held in self._waiting if held.job.type == job_type][:wanted]
            if out:
                for held in out:
                    if to is not None:
                        to.hand(held)
                taken = {id(held) for held in out}
                self._waiting = deque(item for item in self._waiting if id(item[1]) not in taken)
                self._members -= taken
        return out

    def ran(self, seconds: float) -> None:
        """A thread of this lane ran a job for `seconds` (the running mean the cap follows)."""
        with self._lock:
            mean = self._mean_seconds
            self._mean_seconds = seconds if mean is None else mean + self.MEAN_WEIGHT * (
                seconds - mean)

    def cap(self) -> int:
        """The most jobs worth holding: what the threads start within HORIZON_SECONDS at the
        handlers' mean duration, at least one, at most the limit."""
        mean = self._mean_seconds
        if not mean:
            return self.limit
        return max(1, min(self.limit, int(self.threads * self.HORIZON_SECONDS / mean)))

    def wanted(self, backlog: bool) -> int:
        """How many jobs the next claim should prefetch: refill to `depth` (at most the cap)
        once at or below half of it, and only while the last claim found a backlog."""
        if not backlog or not self.limit:
            return 0
        with self._lock:
            if not self.depth and time.monotonic() >= self._paused_until:
                self.depth = 1
            depth = min(self.depth, self.cap())
            if not depth or len(self._waiting) > depth // 2:
                return 0
            return depth - len(self._waiting)

    def stale(self) -> list[Held]:
        """Take out the jobs that waited longer than MAX_WAIT_SECONDS, halving the depth."""
        now, out = time.monotonic(), []
        with self._lock:
            while self._waiting and now - self._waiting[0][0] > self.MAX_WAIT_SECONDS:
                out.append(self._waiting.popleft()[1])
                self._members.discard(id(out[-1]))
            if out:
                self.depth //= 2
                if not self.depth:
                    self._paused_until = now + self.PAUSE_SECONDS
        return out

    def take_all(self) -> list[Held]:
        with self._lock:
            out = [held for _, held in self._waiting]
            self._waiting.clear()
            self._members.clear()
        return out

    def seconds_until_stale(self) -> float | None:
        """How long until the oldest prefetched job is due for release (None: none waits)."""
        with self._lock:
            if not self._waiting:
                return None
            return max(0.0, self._waiting[0][0] + self.MAX_WAIT_SECONDS - time.monotonic())
