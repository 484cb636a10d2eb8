"""Test signals: worker events a test waits on instead of polling the database.

Modelled on River's `testsignal`: off by default and free when off (a worker pool built
without `test_signals` keeps `None`, and each place that would signal checks that once per
job or batch); on, each event is kept, so a test never misses one that came before it
started waiting.

    pool = WorkerPool(threads=2, test_signals=TestSignals())
    ...
    pool.test_signals.wait_ended([job.id], "succeeded")   # {job id: status}, or AssertionError

Events, in the process that records them, after the write committed:
- `claimed`: a job id, when the pool holds a job it claimed (for an executor, or into its
  prefetch buffer);
- `prefetched`: a job id, when the pool holds a job it claimed into its prefetch buffer (under
  `<process>-prefetch`: the claim writes no event that would say so);
- `started`: a job id, when an executor starts a job (its handler runs next; a prefetched
  job's start already recorded);
- `ended`: (job id, status) when the pool wrote a job's outcome: "succeeded" or "cancelled"
  (the completer), "queued" (a retry is scheduled), "failed" or "cancelled" (a failure, or
  the renewer's write for a job past its timeout), or "lease_lost" (a write refused because
  the lease was lost);
- `released`: a job id, when the pool gave a job back uncharged (a stale prefetched job, a
  shutdown's, an orphan's);
- each maintenance loop's pass, with what `run_once()` returned: `renewed` (the renewer's
  counts), `reaped` (the reaper's counts, {} when nothing expired), `staged` (how many queues
  the stager woke), `pruned` (the pruner's counts), `ticked` (the periodic enqueuer's counts);
  a pass that raised sends nothing;
- `leading`: True when this process became the maintenance leader, False when it stopped;
- `listening`: True when the LISTEN connection is up, False when it was lost;
- `polled`: a `Poll` each time a lane's claim statement returned: how many jobs it found, and
  whether the LISTEN connection was up when it began (a claim that found nothing is how a
  test knows a lane looked and left a job alone);
- `throttled`: a lane's name each time it waited for the completer to catch up instead of
  claiming (flow control: worker/completer.py).
An expired lease is the reaper's (another process's, perhaps): wait on `reaped`, or on the
database."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import NamedTuple

__all__ = ["Poll", "TestSignal", "TestSignals"]

FINISHED = ("succeeded", "failed", "cancelled")  # the outcomes after which a job never runs again


class Poll(NamedTuple):
    """A lane's claim that returned (`polled`): the jobs it found, and whether notifications
    reached the pool when it began."""
    found: int
    listening: bool


class TestSignal:
    """One kind of event: every value emitted since it was made, and a wait on them."""

    __test__ = False  # not a pytest test class, though its name starts with Test

    def __init__(self, name: str):
        self.name = name
        self._seen: list = []
        self._changed = threading.Condition()

    def emit(self, *values) -> None:
        with self._changed:
            self._seen.extend(values)
            self._changed.notify_all()

    def seen(self) -> list:
        with self._changed:
            return list(self._seen)

    def wait(self, predicate: Callable[[list], object], timeout: float = 10.0,
             message: str = ""):
        """Block until `predicate(every value so far)` is truthy and return it; raise
        AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                answer = predicate(self._seen)
                if answer:
                    return answer
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"timed out after {timeout}s waiting for {message or self.name}; "
                        f"{self.name} so far: {self._seen[-20:]}")
                self._changed.wait(left)


class TestSignals:
    """The worker events a test can wait on (module docstring)."""

    __test__ = False

    def __init__(self):
        self.claimed = TestSignal("claimed")
        self.prefetched = TestSignal("prefetched")
        self.started = TestSignal("started")
        self.ended = TestSignal("ended")
        self.released = TestSignal("released")
        self.renewed = TestSignal("renewed")
        self.reaped = TestSignal("reaped")
        self.staged = TestSignal("staged")
        self.pruned = TestSignal("pruned")
        self.ticked = TestSignal("ticked")
        self.leading = TestSignal("leading")
        self.listening = TestSignal("listening")
        self.polled = TestSignal("polled")
        self.throttled = TestSignal("throttled")
        # A maintenance loop's pass (worker/base.py), by the loop's thread name.
        self._passes = {"renewer": self.renewed, "reaper": self.reaped, "stager": self.staged,
                        "pruner": self.pruned, "periodic": self.ticked}

    def pass_done(self, service: str, result) -> None:
        """A maintenance loop (`service`, its thread's name) finished a pass: `result`."""
        signal = self._passes.get(service)
        if signal is not None:
            signal.emit(result)

    def wait_passes(self, signal: TestSignal, n: int = 1, timeout: float = 10.0,
                    since: int | None = None) -> list:
        """Block until `n` more passes of a maintenance loop's `signal` (e.g. `reaped`) than
        `since` (how many it had: by default, now) were sent; their results. A pass under way
        when this is called counts: ask for 2 for a whole pass that began after."""
        start = len(signal.seen()) if since is None else since
        return signal.wait(lambda seen: seen[start:] if len(seen) >= start + n else None,
                           timeout, f"{n} {signal.name} pass(es)")

    def wait_polls(self, n: int = 1, *, since: int | None = None, empty: bool = False,
                   listening: bool | None = None, timeout: float = 10.0) -> list[Poll]:
        """Block until `n` more lane claims than `since` (how many `polled` had: by default,
        now) returned, counting only those that found nothing when `empty`, and only those
        begun with the LISTEN connection up (or down) when `listening` is given; those claims.
        A claim under way when this is called counts."""
        start = len(self.polled.seen()) if since is None else since

        def counted(seen):
            polls = [p for p in seen[start:] if (not empty or not p.found)
                     and (listening is None or p.listening is listening)]
            return polls if len(polls) >= n else None

        return self.polled.wait(counted, timeout, f"{n} more claim(s)"
                                + (" that found nothing" if empty else ""))

    def wait_claimed(self, job_ids: Iterable[int], timeout: float = 10.0) -> None:
        """Block until every job of `job_ids` was claimed by this pool."""
        wanted = set(job_ids)
        self.claimed.wait(lambda seen: wanted <= set(seen), timeout,
                          f"jobs {sorted(wanted)} to be claimed")

    def wait_released(self, job_ids: Iterable[int], timeout: float = 10.0) -> None:
        """Block until every job of `job_ids` was given back uncharged by this pool."""
        wanted = set(job_ids)
        self.released.wait(lambda seen: wanted <= set(seen), timeout,
                           f"jobs {sorted(wanted)} to be released")

    def wait_state(self, signal: TestSignal, state: bool = True, timeout: float = 10.0) -> None:
        """Block until the latest value of `leading` or `listening` is `state`."""
        signal.wait(lambda seen: bool(seen) and seen[-1] is state, timeout,
                    f"{signal.name} to be {state}")

    def wait_started(self, job_ids: Iterable[int], timeout: float = 10.0) -> None:
        """Block until every job of `job_ids` was started by an executor."""
        wanted = set(job_ids)
        self.started.wait(lambda seen: wanted <= set(seen), timeout,
                          f"jobs {sorted(wanted)} to start")

    def wait_ended(self, job_ids: Iterable[int], status: str | Collection[str] | None = None,
                   timeout: float = 10.0) -> dict[int, str]:
        """Block until every job of `job_ids` ended with `status` (one, or any of several;
        any, if None): the statuses each ended with (the latest, for a job that ran more than
        once)."""
        wanted = set(job_ids)
        accepted = {status} if isinstance(status, str) else status

        def ended(seen):
            latest = {job_id: s for job_id, s in seen if job_id in wanted
                      and (accepted is None or s in accepted)}
            return latest if set(latest) == wanted else None

        return self.ended.wait(ended, timeout,
                               f"jobs {sorted(wanted)} to end" + (f" {status}" if status else ""))

    def wait_finished(self, job_ids: Iterable[int], timeout: float = 10.0) -> dict[int, str]:
        """Block until every job of `job_ids` ended for good (succeeded, failed or cancelled,
        not a retry's "queued"): the status each ended with."""
        return self.wait_ended(job_ids, FINISHED, timeout)
