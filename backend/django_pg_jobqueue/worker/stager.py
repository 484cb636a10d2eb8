"""The stager: wakes the workers of queues whose delayed jobs and retries became due.

An enqueue sends its own NOTIFY at commit; a job that becomes runnable later (enqueued with a
delay, or a retry after its backoff) sends none. Idle workers therefore used to poll every
second to find them; now they back off (JOB_POLL_INTERVAL_MAX_SECONDS) and the maintenance
leader alone looks, every JOB_POLL_INTERVAL_SECONDS, for queues with jobs that became due since
its last look, and notifies each such queue once (sql.NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS): one
statement a second for the whole database instead of one per idle process. Runs only on the
leader (worker/leader.py)."""
import logging
from datetime import datetime

from .. import conf
from ..engine import Engine, default_engine
from .base import ServiceThread

log = logging.getLogger("django_pg_jobqueue.stager")


class Stager(ServiceThread):
    def __init__(self, interval: float | None = None, engine: Engine | None = None):
        super().__init__("stager", log)
        self.engine = engine or default_engine()
        self.interval = interval or conf.get().POLL_INTERVAL_SECONDS
        self.since: datetime | None = None  # the database clock at the last pass
        self.notified = 0

    def run_once(self) -> int:
        """Notify the queues with jobs that became due since the last pass; how many queues.
        The first pass looks back two intervals (a new leader covers its predecessor's last
        pass)."""
        self.since, queues = self.engine.notify_newly_due_queues(self.since)
        if queues:
            self.notified += queues
            log.debug("stager: notified %d queue(s) with newly due jobs", queues)
        return queues
