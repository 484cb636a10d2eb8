"""The reaper: requeues (or fails) running jobs whose lease expired.

Runs inside every `run_job_workers` process, and once with `manage.py reap_jobs`. Several at
once do no harm: the statement takes rows with SKIP LOCKED and re-checks the expiry."""
import logging

from .. import conf, services
from .base import ServiceThread

log = logging.getLogger("jobs.reaper")


class Reaper(ServiceThread):
    def __init__(self, interval: float | None = None):
        super().__init__("reaper", log)
        self.interval = interval or conf.get().REAPER_INTERVAL_SECONDS
        self.total: dict[str, int] = {}

    def run_once(self) -> dict[str, int]:
        counts = services.reap()
        for status, n in counts.items():
            self.total[status] = self.total.get(status, 0) + n
        if counts:
            log.info("reaped expired leases: %s", counts)
        return counts
