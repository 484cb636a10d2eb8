"""Test signals: worker events a test waits on instead of polling the database.

Modelled on River's `testsignal`: off by default and free when off (a worker pool built
without `test_signals` keeps `None`, and each place that would signal checks that once per
job or batch); on, each event is kept, so a test never misses one that came before it
started waiting.

    pool = WorkerPool(threads=2, test_signals=TestSignals())
    ...
    pool.test_signals.wait_ended([job.id], "succeeded")   # {job id: status}, or AssertionError

Events, in the process that records them, after the write committed:
- `started`: a job id, when an executor starts a job (its handler runs next);
- `ended`: (job id, status) when the pool wrote a job's outcome: "succeeded" or "cancelled"
  (the completer), "queued" (a retry is scheduled), "failed" or "cancelled" (a failure), or
  "lease_lost" (a write refused because the lease was lost).
A timeout (the renewer) and an expired lease (the reaper) are not signalled: wait for those
on the database."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

__all__ = ["TestSignal", "TestSignals"]


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
        self.started = TestSignal("started")
        self.ended = TestSignal("ended")

    def wait_started(self, job_ids: Iterable[int], timeout: float = 10.0) -> None:
        """Block until every job of `job_ids` was started by an executor."""
        wanted = set(job_ids)
        self.started.wait(lambda seen: wanted <= set(seen), timeout,
                          f"jobs {sorted(wanted)} to start")

    def wait_ended(self, job_ids: Iterable[int], status: str | None = None,
                   timeout: float = 10.0) -> dict[int, str]:
        """Block until every job of `job_ids` ended with `status` (any, if None): the
        statuses each ended with (the latest, for a job that ran more than once)."""
        wanted = set(job_ids)

        def ended(seen):
            latest = {job_id: s for job_id, s in seen if job_id in wanted
                      and (status is None or s == status)}
            return latest if set(latest) == wanted else None

        return self.ended.wait(ended, timeout,
                               f"jobs {sorted(wanted)} to end" + (f" {status}" if status else ""))
