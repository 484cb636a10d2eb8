"""The reaper: requeues (or fails) running jobs whose lease expired, and ends queued jobs past
their expires_at.

Runs inside every `run_job_workers` process, and once with `manage.py reap_jobs`. Several at
once do no harm: the statement takes rows with SKIP LOCKED and re-checks the expiry. After each
pass it forgets the worker processes that are gone and hold nothing. All through the engine."""
import logging
import time

from .. import conf
from ..engine import Engine, default_engine
from ..metrics import WORKER_ALIVE_SECONDS
from .base import Backoff, ServiceThread

log = logging.getLogger("django_pg_jobqueue.reaper")


class Reaper(ServiceThread):
    def __init__(self, interval: float | None = None, engine: Engine | None = None):
        super().__init__("reaper", log)
        self.engine = engine or default_engine()
        self.interval = interval or conf.get().REAPER_INTERVAL_SECONDS
        self.total: dict[str, int] = {}
        self.hold_until = 0.0

    def on_connection_error(self) -> None:
        # After an outage every lease looks expired on the database clock, though most
        # workers are healthy and about to renew (their own reconnect backoff is capped at
        # Backoff.cap). Reaping at once would re-run every in-flight job, so wait until
        # they had the chance to, but never longer than one lease.
        c = conf.get()
        renew_interval = max(0.2, min(c.LEASE_SECONDS / 3, 2.0))
        hold = min(c.LEASE_SECONDS, Backoff().cap + 2 * renew_interval)
        self.hold_until = time.monotonic() + hold

    def run_once(self) -> dict[str, int]:
        if time.monotonic() < self.hold_until:
            log.debug("reaper holding off after reconnecting")
            return {}
        counts = self.engine.reap()
        # The expiry sweep rides on it too: queued jobs past their expires_at, which the
        # claim passes over, end cancelled with their `expired` event (services/expiring.py).
        expired = self.engine.expire_overdue()
        if expired:
            counts["expired"] = expired
        # The dependency sweep rides on the reaper's interval: waiting jobs that no
        # completion settled (services/dependencies.py).
        for status in self.engine.settle_waiting().values():
            counts[f"waiting_{status}"] = counts.get(f"waiting_{status}", 0) + 1
        # So does the batches' sweep: batches whose last member's settle was missed.
        finished = len(self.engine.settle_batches())
        if finished:
            counts["batches_finished"] = finished
        # A lost worker's row stays (the workers page shows it lost, with what it held)
        # until it has been silent past the liveness window and the reap freed its jobs.
        self.engine.forget_lost_workers(silent_seconds=WORKER_ALIVE_SECONDS)
        for status, n in counts.items():
            self.total[status] = self.total.get(status, 0) + n
        if counts:
            log.info("reaped expired leases: %s", counts)
        return counts
