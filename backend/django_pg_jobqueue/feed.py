"""Cursor feeds of job events that never skip one.

- One job's events: every statement that writes them locks the job's row, so their ids
  follow their commit order, and `id > after` is exact.
- All events (the global feed): ids do not follow commit order across jobs, so the feed
  follows transaction ids instead, and holds back what is still in flight (sql.EVENTS_AFTER).

Both promise every written event exactly once, in commit order. A job's start is no event of
its own (history v2): the claim writes none, and the event that ends the attempt carries it
(data.started_at, data.lease_token, its worker_id). A poller sees a job start only when that
attempt ends; the job row (status, started_at, locked_by) says what runs now.
"""

from . import sql
from .db import queue_connection
from .models import JobEvent


def event_ids_after(after: int, *, limit: int, job_id: int | None = None) -> list[int]:
    """Ids of the events after event `after`, in commit order, up to `limit`."""
    if job_id is not None:
        return list(JobEvent.objects.filter(job_id=job_id, id__gt=after).order_by("id")
                    .values_list("id", flat=True)[:limit])
    with queue_connection().cursor() as cur:
        cur.execute(sql.EVENT_TX_ID, [after])
        row = cur.fetchone()
        cursor = sql.EVENTS_AFTER_CURSOR if row else sql.EVENTS_AFTER_ID_CURSOR
        cur.execute(sql.EVENTS_AFTER.format(cursor=cursor, job_filter=""),
                    {"after": after, "after_tx": row[0] if row else None, "limit": limit})
        return [r[0] for r in cur.fetchall()]
