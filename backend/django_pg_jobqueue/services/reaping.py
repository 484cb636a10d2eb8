"""reap: running jobs whose lease expired go back to queued (with backoff) or to failed; those
that never left a prefetch buffer go back to queued uncharged (sql.REAP)."""
import logging

from .. import conf, middleware, sql
from ..db import queue_connection
from .claiming import _claimed
from .finishing import after_ended
from .workers import count_reaped

log = logging.getLogger("django_pg_jobqueue.reaper")


def reap(*, limit: int = 500) -> dict[str, int]:
    """Requeue or fail every running job whose lease expired; return counts by new status
    (`released`: requeued uncharged, as it never started: its lease expired in a prefetch
    buffer).

    Safe to run from many processes at once: rows are taken with SKIP LOCKED and the
    expiry is re-checked in the UPDATE. Each expired attempt is then told to JOB_ERROR_HOOKS,
    in the process that reaped it, once: its job as it was claimed, an
    AttemptFailed(reason "lease_expired"), and "queued" or "failed" (a job whose cancel was
    requested ends cancelled, and a job released unstarted had no attempt: neither is a
    failure).
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
        count_reaped([row[:3] for row in rows])  # the lost workers' history says so
        finished = [row[0] for row in rows if row[1] not in ("queued", "released")]
        if finished:  # failed for good or cancelled: the jobs waiting for them next
            after_ended(finished)  # and their batches, if they were the last
        for row in rows:
            job_id, status, locked_by, error = row[:4]
            counts[status] = counts.get(status, 0) + 1
            if status == "released":
                log.warning("lease expired job=%s worker=%s before any thread started it -> "
                            "queued, uncharged", job_id, locked_by)
                continue
            log.warning("lease expired job=%s worker=%s -> %s", job_id, locked_by, status)
            if status in ("queued", "failed"):
                middleware.report_failure(_claimed([row[4:]])[0], None, status,
                                          reason="lease_expired", error=error)
        if len(rows) < limit:
            return counts
