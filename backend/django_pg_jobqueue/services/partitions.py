"""job_events partitions: create them ahead of time, drop them whole once their time is past.

`job_events` is partitioned by RANGE on created_at (migration 0007): one partition per
JOB_EVENTS_PARTITION_INTERVAL (an hour, a day or a week, aligned on UTC midnight and, for
weeks, on Mondays), plus a DEFAULT partition that takes any row no partition covers, so no
insert ever fails. The worker's maintenance thread (worker/pruner.py) calls
`ensure_partitions()` every run, keeping JOB_EVENTS_PARTITIONS_AHEAD partitions beyond the
current one, and the prune (services/pruning.py) calls `drop_expired_partitions()` before it
deletes jobs row by row, so that the events of most pruned jobs leave with their partition
(one DROP TABLE) instead of one DELETE per row.

When a partition may be dropped: its whole range is older than the shortest retention in
force (JOB_RETENTION_*), and the events in it that belong to jobs still kept (not finished
past their retention) are at most RESCUE_LIMIT: those are copied out and put back (into the
default partition, with their ids and transaction ids), so the timeline of every kept job
stays whole and the feed's order is unchanged. A partition with more kept events waits for
a later run (the kept jobs age past their retention, or are deleted).

A drop and a retry are exclusive (sql.EVENTS_HISTORY_LOCK): a retry that commits first makes
its job kept (queued), and one that comes after the drop finds its job's history gone and is
refused (the job is past its retention, deleted by the prune's batches right after).
"""
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError

from .. import conf, sql
from ..compat import UTC
from ..db import atomic as queue_atomic
from ..db import queue_connection

log = logging.getLogger("django_pg_jobqueue.partitions")

INTERVALS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
# Partition bounds are multiples of the interval from this Monday midnight UTC.
ORIGIN = datetime(2000, 1, 3, tzinfo=UTC)
# At most this many kept events are copied out of a partition to drop it; more, and it waits.
RESCUE_LIMIT = 50_000
# The migration creates partitions back to the oldest event, but never more than this many.
MAX_PARTITIONS_BACK = 400


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime
    end: datetime


def interval(value: str | None = None) -> timedelta:
    name = value or conf.get().EVENTS_PARTITION_INTERVAL
    try:
        return INTERVALS[name]
    except KeyError:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, not {name!r}") from None


def floor(moment: datetime, step: timedelta) -> datetime:
    """The start of the partition that holds `moment`."""
    return ORIGIN + ((moment - ORIGIN) // step) * step


def partition_name(start: datetime, step: timedelta) -> str:
    fmt = "%Y%m%d%H" if step < timedelta(days=1) else "%Y%m%d"
    return "job_events_p" + start.astimezone(UTC).strftime(fmt)


def is_partitioned(cursor=None) -> bool:
    def ask(cur):
        cur.execute(sql.EVENTS_IS_PARTITIONED)
        row = cur.fetchone()
        return bool(row and row[0])

    if cursor is not None:
        return ask(cursor)
    with queue_connection().cursor() as cur:
        return ask(cur)


def partitions(cursor=None) -> list[Partition]:
    """The range partitions of job_events, oldest first (the default one left out)."""
    def ask(cur):
        cur.execute(sql.EVENTS_PARTITIONS)
        return [Partition(name, start, end) for name, start, end in cur.fetchall()]

    if cursor is not None:
        return ask(cursor)
    with queue_connection().cursor() as cur:
        return ask(cur)


def partition_tables(cursor) -> list[str]:
    """Every partition of job_events, the default one included."""
    cursor.execute(sql.EVENTS_ALL_PARTITIONS)
    return [name for (name,) in cursor.fetchall()]


def _guard(cur, name: str) -> None:
    """Give a new partition the history's insert guard (sql.HISTORY_GUARD_TRIGGERS), which a
    statement naming the partition itself fires instead of the parent's; not before migration
    0015 put the guard on the parent (migration 0007 creates partitions too)."""
    cur.execute(sql.HISTORY_GUARD_INSTALLED)
    if cur.fetchone()[0]:
        cur.execute(sql.HISTORY_GUARD_EVENTS_TRIGGER.format(table=name))


def _create(cur, start: datetime, end: datetime, step: timedelta) -> str:
    """Create the partition [start, end), moving into it any rows the default one holds there."""
    name = partition_name(start, step)
    bounds = {"start": start, "end": end}
    cur.execute(sql.EVENTS_DDL_LOCK_TIMEOUT)
    cur.execute(sql.EVENTS_DEFAULT_HAS_RANGE, bounds)
    moving = cur.fetchone()[0]
    if moving:
        cur.execute(sql.EVENTS_TAKE_FROM_DEFAULT, bounds)
    cur.execute(sql.EVENTS_CREATE_PARTITION.format(name=name, start=start.isoformat(),
                                                   end=end.isoformat()))
    _guard(cur, name)
    if moving:
        for statement in sql.EVENTS_PUT_BACK:
            cur.execute(statement)
    return name


def ensure_partitions(*, now: datetime | None = None, ahead: int | None = None,
                      step: str | None = None, since: datetime | None = None,
                      cursor=None) -> list[str]:
    """Create the missing partitions from the one holding `since` (default: now) through
    `ahead` intervals after the current one. Ranges already covered, even by partitions of
    another interval, are left as they are (a changed interval applies from the first range
    not yet covered). Returns the names created. Each partition is its own short transaction
    (unless `cursor` is given: then the caller's), and one whose lock cannot be had within
    2 s is left for the next run."""
    c = conf.get()
    step_td = interval(step)
    ahead = c.EVENTS_PARTITIONS_AHEAD if ahead is None else ahead
    if ahead < 0:
        raise ValueError("ahead must be 0 or more")
    now = now or datetime.now(UTC)
    first = floor(since or now, step_td)
    if since is not None and (floor(now, step_td) - first) / step_td > MAX_PARTITIONS_BACK:
        first = floor(now, step_td) - MAX_PARTITIONS_BACK * step_td
    last_end = floor(now, step_td) + (ahead + 1) * step_td
    created = []

    def run(cur):
        if not is_partitioned(cur):
            return
        cur.execute(sql.EVENTS_PARTITION_TRY_LOCK_ONLY)
        if not cur.fetchone()[0]:
            return  # another process is creating or dropping partitions right now
        existing = partitions(cur)
        start = first
        while start < last_end:
            # To the next boundary of the grid: after a partition of another interval, the
            # first one may be shorter, and the ones after it are aligned again.
            end = floor(start, step_td) + step_td
            # Skip (or trim) what existing partitions already cover.
            overlapping = [p for p in existing if p.start < end and p.end > start]
            if overlapping:
                start = max(p.end for p in overlapping)
                continue
            created.append(_create(cur, start, end, step_td))
            existing.append(Partition(created[-1], start, end))
            start = end

    if cursor is not None:
        run(cursor)
        return created
    # One transaction per partition would be finer; one for the few made per run is enough,
    # and a lock timeout rolls them all back together, to be tried again next run.
    try:
        with queue_atomic(), queue_connection().cursor() as cur:
            run(cur)
    except DatabaseError as exc:  # a lock timeout, mostly: the next run tries again
        log.warning("could not create job_events partitions ahead: %s", exc)
        return []
    if created:
        log.info("created job_events partitions %s", ", ".join(created))
    return created


def _ages() -> dict[str, float | None]:
    c = conf.get()
    out = {}
    for status in ("succeeded", "failed", "cancelled"):
        keep = c.retention(status)
        out[f"age_{status}"] = keep.total_seconds() if keep is not None else None
    return out


def drop_expired_partitions(*, ages: dict[str, float | None] | None = None,
                            now: datetime | None = None, dry_run: bool = False,
                            rescue_limit: int = RESCUE_LIMIT) -> dict[str, int]:
    """Drop the partitions whose range is older than the shortest retention and whose kept
    events (those of jobs not past their retention) number at most `rescue_limit`; those are
    put back first (into the default partition). `ages`: seconds per final status
    ({"succeeded": 604800, ...}; None or left out: kept forever); default JOB_RETENTION_*.
    Returns {"partitions": dropped, "events": events dropped with them, "rescued": events
    put back}."""
    counts = {"partitions": 0, "events": 0, "rescued": 0}
    if not is_partitioned():
        return counts
    if ages is None:
        ages = _ages()
    else:
        ages = {f"age_{s}": ages.get(s) for s in ("succeeded", "failed", "cancelled")}
    known = [a for a in ages.values() if a is not None]
    if not known:
        return counts  # everything is kept forever
    now = now or datetime.now(UTC)
    horizon = now - timedelta(seconds=min(known))

    # A job is past its retention (and not the newest of its periodic schedule): what prune()
    # deletes. NULL (a retention that is off, a job not finished) counts as kept.
    prunable = f"COALESCE(({sql.EVENTS_PRUNABLE_JOB}{sql.KEEP_NEWEST_PERIODIC}), false)"
    for part in partitions():
        if part.end > horizon:
            break  # oldest first: the rest are younger still
        try:
            done = _drop_one(part, prunable, ages, dry_run=dry_run, rescue_limit=rescue_limit)
        except DatabaseError as exc:  # a lock timeout, mostly: the next run tries again
            log.warning("could not drop job_events partition %s: %s", part.name, exc)
            break
        if done is None:
            continue
        if done is False:
            break
        dropped, rescued = done
        counts["partitions"] += 1
        counts["events"] += dropped
        counts["rescued"] += rescued
        if not dry_run:
            log.info("dropped job_events partition %s: %d events (%d kept ones put back)",
                     part.name, dropped, rescued)
    return counts


def _drop_one(part: Partition, prunable: str, ages: dict, *, dry_run: bool,
              rescue_limit: int) -> tuple[int, int] | bool | None:
    """Drop one partition in one transaction: (events dropped, events put back); None when
    it stays (gone already, or too many kept events); False when another process holds the
    partitions' lock."""
    with queue_atomic(), queue_connection().cursor() as cur:
        cur.execute(sql.EVENTS_PARTITION_TRY_LOCK, [part.name])
        locked, exists = cur.fetchone()
        if not locked:
            return False
        if not exists:
            return None
        cur.execute(sql.EVENTS_KEPT_IN_PARTITION.format(partition=part.name,
                                                        prunable=prunable), ages)
        total, kept = cur.fetchone()
        if kept > rescue_limit:
            log.info("job_events partition %s stays: %d of its events belong to jobs still kept",
                     part.name, kept)
            return None
        if dry_run:
            return total - kept, kept
        cur.execute(sql.EVENTS_DDL_LOCK_TIMEOUT)
        # No retry from here to the commit (sql.EVENTS_HISTORY_LOCK): the kept jobs are
        # judged again below, and a job judged past its retention cannot be revived.
        cur.execute(sql.EVENTS_HISTORY_LOCK)
        cur.execute(sql.EVENTS_RESCUE.format(partition=part.name, prunable=prunable), ages)
        kept = cur.rowcount  # judged again just now: a job may have passed its retention
        cur.execute(sql.EVENTS_DROP_PARTITION.format(partition=part.name))
        for statement in sql.EVENTS_PUT_BACK if kept else sql.EVENTS_PUT_BACK[1:]:
            cur.execute(statement)
        return total - kept, kept


def create_for_migration(cursor, step: str | None = None) -> None:
    """Migration 0007: the default partition, and partitions from the oldest event copied
    (at most MAX_PARTITIONS_BACK intervals back: older rows go to the default partition)
    through the ones ahead."""
    cursor.execute(sql.EVENTS_CREATE_DEFAULT_PARTITION)
    cursor.execute(sql.EVENTS_OLDEST_PLAIN)
    oldest = cursor.fetchone()[0]
    ensure_partitions(since=oldest, step=step, cursor=cursor)
