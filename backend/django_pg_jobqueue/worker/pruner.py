"""The pruner: deletes finished jobs (and their events) past their retention, in batches.

Runs inside every `run_job_workers` process every JOB_PRUNE_INTERVAL_SECONDS (0: off), and
on demand with `manage.py prune_jobs`. Several at once only share the work: batches pick
rows with SKIP LOCKED. Retention per final status: JOB_RETENTION_SUCCEEDED / _FAILED /
_CANCELLED (see services/pruning.py). Each run (as each `prune_jobs`) first creates the
`job_events` partitions JOB_EVENTS_PARTITIONS_AHEAD ahead and drops whole partitions whose
events are all past retention (services/partitions.py), then deletes jobs row by row."""
import logging

from .. import conf
from ..engine import Engine, default_engine
from .base import ServiceThread

log = logging.getLogger("django_pg_jobqueue.pruner")


class Pruner(ServiceThread):
    def __init__(self, interval: float | None = None, batch_size: int | None = None,
                 engine: Engine | None = None):
        super().__init__("pruner", log)
        self.engine = engine or default_engine()
        c = conf.get()
        self.interval = interval or c.PRUNE_INTERVAL_SECONDS
        self.batch_size = batch_size or c.PRUNE_BATCH_SIZE
        self.total: dict[str, int] = {}

    @staticmethod
    def enabled() -> bool:
        return conf.get().PRUNE_INTERVAL_SECONDS > 0

    def run_once(self) -> dict[str, int]:
        counts = self.engine.prune_by_retention(batch_size=self.batch_size,
                                                should_stop=self.stopping.is_set)
        for key, n in counts.items():
            self.total[key] = self.total.get(key, 0) + n
        if any(counts.values()):
            log.info("pruned finished jobs past retention: %s", counts)
        return counts
