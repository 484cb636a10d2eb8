"""reap: running jobs whose lease expired go back to queued (with backoff) or to failed."""
import logging

from .. import conf, sql
from ..db import queue_connection

log = logging.getLogger("django_pg_jobqueue.reaper")


def reap(*, limit: int = 500) -> dict[str, int]:
    """Requeue or fail every running job whose lease expired; return counts by new status.

    Safe to run from many processes at once: rows are taken with SKIP LOCKED and the
    expiry is re-checked in the UPDATE.
    """
    c = conf.get()
    counts: dict[str, int] = {}
    while True:
        with queue_connection().cursor() as cur:
            cur.execute(sql.REAP, {
                "limit": limit, "retry_base": c.RETRY_BASE_SECONDS,
                "retry_max": c.RETRY_MAX_SECONDS, "retry_jitter": c.RETRY_JITTER,
            })
            rows = cur.fetchall()
        for job_id, status, locked_by in rows:
            counts[status] = counts.get(status, 0) + 1
            log.warning("lease expired job=%s worker=%s -> %s", job_id, locked_by, status)
        if len(rows) < limit:
            return counts
