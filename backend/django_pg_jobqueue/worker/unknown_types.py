"""The job types a worker process found it has no handler for, and stops claiming for a while.

A rolling deploy runs old and new code side by side: a producer on the new code enqueues a
type that an old worker does not know. The old worker gives such a job back without charging
its attempt (services.release_unknown_type) and, for JOB_UNKNOWN_TYPE_SKIP_SECONDS, leaves
that type out of its claims (`claim(exclude_types=...)`), so that a worker that knows the type
gets it. Then it looks again: at most one such job per type, process and period.

Why not claim only the types a worker knows: that filter would be in every claim, and a
backlog of a type no running worker knows would sit at the head of the claim order for every
claimer to walk past; leaving a type out only while it is unknown costs the claim nothing the
rest of the time (docs/how-to/deploy.md has the measurement).
"""
import threading
import time


class UnknownTypes:
    """Types to leave out of this process's claims, each until its deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}

    def skip(self, job_type: str, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self._until[job_type] = time.monotonic() + seconds

    def current(self) -> list[str]:
        """The types to leave out now (expired ones forgotten)."""
        if not self._until:
            return []
        now = time.monotonic()
        with self._lock:
            for name in [n for n, t in self._until.items() if t <= now]:
                del self._until[name]
            return sorted(self._until)
