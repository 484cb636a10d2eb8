"""Cursor feeds of job events that never skip one.

- One job's events: every statement that writes them locks the job's row, so their ids
  follow their commit order, and `id > after` is exact.
- All events (the global feed): ids do not follow commit order across jobs, so the feed
  follows transaction ids instead, and holds back what is still in flight (sql.EVENTS_AFTER).
  A position in it is an event's (tx_id, id); this module reads one database's events after a
  position, or where a feed starts (the latest ones, sql.EVENTS_LATEST). merged.events_feed
  keeps one position per database of JOB_SHARDS.

Both promise every written event exactly once, in commit order. A job's start is no event of
its own (history v2): the claim writes none, and the event that ends the attempt carries it
(data.started_at, data.lease_token, its worker_id). A poller sees a job start only when that
attempt ends; the job row (status, started_at, locked_by) says what runs now.
"""

from . import sql
from .db import queue_connection
from .models import HistoryEvent

# An event's place in the global feed: (its tx_id, its id). The tx_id is None when only the id
# is known (an old `after` whose event was pruned): then the feed goes on by id.
Position = tuple[int | None, int]


def position_of(event_id: int) -> Position:
    """The feed position of event `event_id` (an `after` given as an id): its transaction id
    with it, or the id alone when the event is gone."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.EVENT_TX_ID, [event_id])
        row = cur.fetchone()
    return (row[0] if row else None, event_id)


def rows_after(position: Position, *, limit: int) -> list[Position]:
    """This database's events after `position`, in commit order, up to `limit`: their
    (tx_id, id)."""
    after_tx, after = position
    cursor = sql.EVENTS_AFTER_CURSOR if after_tx is not None else sql.EVENTS_AFTER_ID_CURSOR
    statement = sql.EVENTS_AFTER.format(stored=cursor.format(**sql.EVENTS_STORED_POSITION),
                                        kept=cursor.format(**sql.EVENTS_KEPT_POSITION))
    with queue_connection().cursor() as cur:
        cur.execute(statement,
                    {"after": after, "after_tx": after_tx, "limit": limit})
        return [(tx_id, event_id) for event_id, tx_id in cur.fetchall()]


def latest_rows(*, limit: int) -> list[Position]:
    """Where a feed starts: this database's latest `limit` events in commit order (oldest
    first), under the same horizon as rows_after, so that going on after the last of them
    skips nothing."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.EVENTS_LATEST, {"limit": limit})
        return [(tx_id, event_id) for event_id, tx_id in cur.fetchall()]


def event_ids_after(after: int, *, limit: int, job_id: int | None = None) -> list[int]:
    """Ids of the events after event `after`, in commit order, up to `limit`."""
    if job_id is not None:
        return list(HistoryEvent.objects.filter(job_id=job_id, id__gt=after).order_by("id")
                    .values_list("id", flat=True)[:limit])
    return [event_id for _, event_id in rows_after(position_of(after), limit=limit)]
