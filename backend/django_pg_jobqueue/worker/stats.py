"""In-process counters of a worker pool (printed at exit, read by tests and /metrics), the
pool's test signals (worker/signals.py), sent from the same calls when a test asked for them,
and the once-a-second summary of what the pool finished (the `django_pg_jobqueue.summary`
logger, at INFO, silent unless the project's LOGGING turns it on)."""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

from ..logformat import SUMMARY_LOGGER

if TYPE_CHECKING:
    from .signals import TestSignals

# The attempts that ended here with an outcome this process wrote, in the summary's order.
# Not `claimed` (started, maybe never finished: a killed process claimed jobs it never ran to
# the end), `lease_lost` (another process owns the outcome) or `released` (given back).
FINISHED = ("succeeded", "retry_scheduled", "failed", "cancelled", "snoozed")
SUMMARY_SECONDS = 1.0
summary_log = logging.getLogger(SUMMARY_LOGGER)


class PoolStats:
    def __init__(self, signals: TestSignals | None = None, clock=time.monotonic):
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.signals = signals  # None (the default): no signal is sent, nothing is kept
        self._summarized: Counter[str] = Counter()  # the counts the last summary line covered
        self._clock = clock  # the summary's (tests pass their own)
        self._summarized_at = clock()

    def _inc(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def claimed(self, job) -> None:
        self._inc("claimed")

    def started(self, job) -> None:
        """Its handler runs next (a prefetched job's start recorded): the test signal."""
        if self.signals is not None:
            self.signals.started.emit(job.id)

    def completed(self, done) -> None:
        """A completion batch's (job id, status, run seconds) rows, counted under one lock."""
        with self._lock:
            self.counts.update(status for _, status, _ in done)
        if self.signals is not None:
            self.signals.ended.emit(*((job_id, status) for job_id, status, _ in done))
        self.log_summary()

    def failed(self, job, status) -> None:
        self._inc("retry_scheduled" if status == "queued" else status)
        if self.signals is not None:
            self.signals.ended.emit((job.id, status))
        self.log_summary()

    def parked(self, job, status: str) -> None:
        """A durable wait parked the job (`parked`), or a cancel won over it (`cancelled`)."""
        self._inc(status)
        if self.signals is not None:
            self.signals.ended.emit((job.id, status))

    def lease_lost(self, job) -> None:
        self._inc("lease_lost")
        if self.signals is not None:
            self.signals.ended.emit((job.id, "lease_lost"))

    def released(self, n: int) -> None:
        self._inc("released", n)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)

    def finished(self) -> int:
        """The attempts this pool ran to an outcome it wrote (the workers' `jobs_done`)."""
        with self._lock:
            return sum(self.counts[k] for k in FINISHED)

    def log_summary(self, *, final: bool = False) -> str | None:
        """One INFO line on `django_pg_jobqueue.summary` with what finished since the last
        line, at most once every SUMMARY_SECONDS and only when something did: a line a second
        at any rate, where a line per job would cost more than the jobs at thousands a
        second. Called after each outcome, by the renewer's pass (which brings out the rest
        of a burst) and, `final`, when the pool stops (whatever the time since the last
        line). Returns the line, or None."""
        if not summary_log.isEnabledFor(logging.INFO):
            return None
        now = self._clock()
        with self._lock:
            seconds = now - self._summarized_at
            if seconds < SUMMARY_SECONDS and not final:
                return None
            new = {k: self.counts[k] - self._summarized[k] for k in FINISHED}
            if not any(new.values()):
                return None
            self._summarized = Counter({k: self.counts[k] for k in FINISHED})
            self._summarized_at = now
        line = f"finished in the last {seconds:.1f}s: " + ", ".join(
            f"{n} {k}" for k, n in new.items() if n)
        summary_log.info("%s", line, extra={"finished": new})
        return line
