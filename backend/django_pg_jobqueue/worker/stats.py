"""In-process counters of a worker pool (printed at exit, read by tests and /metrics), and
the pool's test signals (worker/signals.py), sent from the same calls when a test asked for
them."""
from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .signals import TestSignals


class PoolStats:
    def __init__(self, signals: TestSignals | None = None):
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.signals = signals  # None (the default): no signal is sent, nothing is kept

    def _inc(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def claimed(self, job) -> None:
        self._inc("claimed")
        if self.signals is not None:
            self.signals.started.emit(job.id)

    def completed(self, done) -> None:
        """A completion batch's (job id, status, run seconds) rows, counted under one lock."""
        with self._lock:
            self.counts.update(status for _, status, _ in done)
        if self.signals is not None:
            self.signals.ended.emit(*((job_id, status) for job_id, status, _ in done))

    def failed(self, job, status) -> None:
        self._inc("retry_scheduled" if status == "queued" else status)
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
