"""In-process counters of a worker pool (printed at exit, read by tests and /metrics)."""
import threading
from collections import Counter


class PoolStats:
    def __init__(self):
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def _inc(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def claimed(self, job) -> None:
        self._inc("claimed")

    def completed(self, done) -> None:
        """A completion batch's (job id, status, run seconds) rows, counted under one lock."""
        with self._lock:
            self.counts.update(status for _, status, _ in done)

    def failed(self, job, status) -> None:
        self._inc("retry_scheduled" if status == "queued" else status)

    def lease_lost(self, job) -> None:
        self._inc("lease_lost")

    def released(self, n: int) -> None:
        self._inc("released", n)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)
