"""Where a lane's next claim starts: at the head of the claim order, or past what it already
claimed (sql.CLAIM_SEEK), while claims from the head are slow.

A claim from the head walks jobs_claim_order_idx from its start. Normally the entries it
steps over are few (vacuum removes those of claimed jobs, and a scan marks the dead ones it
meets), and the head claim is the exact order. While a snapshot is held open somewhere
(docs/how-to/troubleshooting.md), neither can happen, and every claim steps over every job
claimed since: its cost grows with the snapshot's age. Then the lane claims from the first
job of its previous claim instead, which the index finds by descent.

A claim from that key cannot see a job of the key's priority that sorts before it (requeued
or released keeping its available_at, a run_at in the past, a row another claim skipped and
rolled back): so the lane seeks only for SEEK_SECONDS after a head claim that took longer than
SLOW_SECONDS, and then claims from the head again, which either finds the head fast (the
snapshot is gone: back to head claims) or slow (more seeking). Such a job waits longer than it
would have by at most the time until that next head claim, and only while claims are slow.

The head claim itself grows with the snapshot's age (30 ms a few minutes into one at 1,000
jobs/s), and the jobs that arrive while it runs wait for it. So the seeking lasts longer the
slower the last head claim was: HEAD_SPACING times its duration (head claims then take about
1 % of the lane's time), at least SEEK_SECONDS and at most SEEK_MAX_SECONDS."""
from __future__ import annotations

import time


class ClaimSeek:
    SLOW_SECONDS = 0.010  # a head claim slower than this starts seeking (a fast one: 0.1-1 ms)
    SEEK_SECONDS = 1.0  # how long a lane seeks at least before it claims from the head again
    SEEK_MAX_SECONDS = 10.0  # ... and at most
    HEAD_SPACING = 100  # ... else this many times the last head claim's duration

    def __init__(self) -> None:
        self.key: tuple | None = None  # (priority, available_at, created_at, id)
        self._until = 0.0  # monotonic time until which claims seek (0: they do not)

    def after(self) -> tuple | None:
        """The key the next claim starts from, or None: from the head."""
        if self.key is None or not self._until:
            return None
        if time.monotonic() >= self._until:
            self._until = 0.0  # due for a head claim, which decides again
            return None
        return self.key

    def claimed(self, jobs: list, seconds: float, sought: bool) -> None:
        """A claim (from the key if `sought`) took `seconds` and got `jobs`, in claim order."""
        if jobs:
            first = jobs[0]
            self.key = (first.priority, first.available_at, first.created_at, first.id)
        if not sought and seconds > self.SLOW_SECONDS:
            self._until = time.monotonic() + min(
                self.SEEK_MAX_SECONDS, max(self.SEEK_SECONDS, seconds * self.HEAD_SPACING))
