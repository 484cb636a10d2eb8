"""One console over every database of the queue (JOB_DATABASE and each shard of JOB_SHARDS):
the job list merged in its order and paged with a cursor (keyset.py), the overview's figures
summed, the queues, the workers and the rate limits of every database in one list.

Each database is read in turn (fanout.each); one that does not answer is reported with its
error and the others still answer. With JOB_SHARDS empty nothing here runs (the API reads
JOB_DATABASE alone, as before) but the event feed, which reads its one database through here
with the same statements.
"""
from dataclasses import dataclass, field
from typing import Any

from django.db import OperationalError
from django.db.models import QuerySet
from django.utils import timezone

from . import conf, db, feed, keyset, selectors, shards
from .fanout import Answer, databases, each, on


@dataclass
class JobPage:
    rows: list
    count: int  # the jobs matching the filters, summed over the databases that answered
    next_cursor: str | None
    databases: list[dict] = field(default_factory=list)


def job_page(queryset: QuerySet, *, limit: int, cursor: str | None = None) -> JobPage:
    """A page of `queryset` (filtered and ordered, not yet evaluated) over every database,
    merged in its order: its first page, or the one after `cursor`. Two statements a
    database: its rows after its position (one more than `limit`) and its count. Raises
    keyset.BadCursor for a cursor that is not this list's."""
    order = keyset.Order.parse(list(queryset.query.order_by) or ["-id"])
    positions = keyset.decode(cursor, order, databases()) if cursor else {}
    queryset = queryset.order_by(*order.order_by())

    def read():
        position = positions.get(db.home_alias())
        rows = queryset.filter(order.after(position)) if position else queryset
        return list(rows[:limit + 1]), queryset.count()

    answers = each(read)
    streams = {a.alias: a.value[0] for a in answers if a.up}
    page = keyset.merge(order, streams, limit, positions)
    return JobPage(
        rows=[row for _, row in page.rows],
        count=sum(a.value[1] for a in answers if a.up),
        next_cursor=keyset.encode(order, page.positions) if page.more else None,
        databases=[a.state() | {"count": a.value[1] if a.up else None} for a in answers])


def queues() -> tuple[list[dict], list[Answer]]:
    """Every database's queues, by name; a queue found in two (while it moves between
    shards) is one row with its counts summed and the settings of the database JOB_SHARDS
    names for it."""
    answers = each(selectors.queues)
    rows: dict[str, dict] = {}
    for answer in answers:
        for row in answer.value or []:
            seen = rows.get(row["name"])
            if seen is None:
                rows[row["name"]] = dict(row)
                continue
            home = shards.alias_for_queue(row["name"]) == answer.alias
            merged = dict(row) if home else seen
            for key in ("queued", "runnable", "running"):
                merged[key] = seen[key] + row[key]
            rows[row["name"]] = merged
    return [rows[name] for name in sorted(rows)], answers


def workers() -> tuple[list[dict], list[Answer]]:
    """Every database's worker processes, each with its database's alias (`shard`)."""
    answers = each(selectors.worker_processes)
    rows = [row | {"shard": a.alias} for a in answers if a.up for row in a.value]
    rows.sort(key=lambda r: (r["hostname"], r["id"]))
    return rows, answers


def rate_limits() -> tuple[list[dict], list[Answer]]:
    """Every database's rate limits in force (selectors.rate_limits), each with its
    database's alias (`shard`) and its use there: each database's claims count their own
    window (services/rate_limits.py). A queue's limit is listed in the database that holds
    the queue, and elsewhere only where it was set at run time (left there by a queue that
    moved: it still binds the jobs that database holds); a type's or a key's in each."""
    answers = each(selectors.rate_limits)
    rows = [row | {"shard": a.alias} for a in answers if a.up for row in a.value
            if row["kind"] != "queue" or row["source"] == "set"
            or shards.alias_for_queue(row["name"]) == a.alias]
    return rows, answers


def _add(into: dict, more: dict, keys) -> None:
    for key in keys:
        into[key] += more[key]


def metrics() -> dict:
    """The overview's figures (selectors.metrics) over every database: counts and depths
    summed, the oldest runnable job the oldest of all, the mean run time weighted by each
    database's sample and the p95 the highest of theirs (an upper bound: percentiles do not
    add), the retry rate over all the finished jobs, throughput summed by minute, the
    workers of all; `shards` says which answered."""
    answers = each(selectors.metrics)
    up = _answering(answers)
    out = _copy(up[0])
    for more in up[1:]:
        _add(out["counts_by_status"], more["counts_by_status"], more["counts_by_status"])
        _add(out["counts_by_state"], more["counts_by_state"], more["counts_by_state"])
        _add(out["queued"], more["queued"], ("total", "runnable", "scheduled"))
        for window in ("last_1m", "last_5m", "last_15m"):
            _add(out["finished"][window], more["finished"][window], ("succeeded", "failed"))
        ages = [a for a in (out["oldest_runnable_age_seconds"],
                            more["oldest_runnable_age_seconds"]) if a is not None]
        out["oldest_runnable_age_seconds"] = max(ages) if ages else None
        _add(out["workers"], more["workers"], ("active", "lost", "threads", "busy_threads"))
        out["workers"]["processes"] += more["workers"]["processes"]
    by_priority: dict[int, int] = {}
    by_queue: dict[str, dict] = {}
    throughput: dict[Any, dict] = {}
    for value in up:
        for row in value["queued"]["by_priority"]:
            by_priority[row["priority"]] = by_priority.get(row["priority"], 0) + row["count"]
        for row in value["queued"]["by_queue"]:
            seen = by_queue.setdefault(row["queue"], {**row, "count": 0})
            seen["count"] += row["count"]
            seen["paused"] = seen["paused"] or row["paused"]
        for row in value["throughput"]:
            seen = throughput.setdefault(row["minute"], {**row, "succeeded": 0, "failed": 0})
            seen["succeeded"] += row["succeeded"]
            seen["failed"] += row["failed"]
    out["queued"]["by_priority"] = [{"priority": p, "count": n}
                                    for p, n in sorted(by_priority.items(), reverse=True)]
    out["queued"]["by_queue"] = [by_queue[q] for q in sorted(by_queue)]
    out["throughput"] = [throughput[m] for m in sorted(throughput)]
    samples = [(v["run_time_seconds"], v["retry_rate"]) for v in up]
    total = sum(run["sample_size"] for run, _ in samples)
    out["run_time_seconds"] = {
        "mean": (round(sum(run["mean"] * run["sample_size"] for run, _ in samples
                           if run["mean"] is not None) / total, 3) if total else None),
        "p95": max((run["p95"] for run, _ in samples if run["p95"] is not None), default=None),
        "sample_size": total}
    out["retry_rate"] = (round(sum((rate or 0) * run["sample_size"] for run, rate in samples)
                               / total, 4) if total else None)
    out["generated_at"] = timezone.now()
    out["shards"] = [a.state() for a in answers]
    return out


def _answering(answers: list[Answer]) -> list:
    """The values of the databases that answered; OperationalError (a 503) when none did."""
    up = [a.value for a in answers if a.up]
    if not up:
        raise OperationalError("no database of the queue answered: "
                               + "; ".join(f"{a.alias}: {a.error}" for a in answers))
    return up


def _newest(points: dict, keep: int) -> list:
    """The newest `keep` of `points` (by bucket start), oldest first: two databases read a
    moment apart may straddle a bucket's boundary, and the range keeps its length."""
    return [points[at] for at in sorted(points)[-keep:]]


def throughput(**query) -> dict:
    """selectors.throughput over every database: each bucket's succeeded and failed summed
    (the buckets are aligned, date_bin from one origin); `shards` says which answered."""
    answers = each(lambda: selectors.throughput(**query))
    up = _answering(answers)
    points: dict[Any, dict] = {}
    for value in up:
        for point in value["points"]:
            seen = points.setdefault(point["at"], {**point, "succeeded": 0, "failed": 0})
            seen["succeeded"] += point["succeeded"]
            seen["failed"] += point["failed"]
    keep = max(len(value["points"]) for value in up)
    return {**up[0], "points": _newest(points, keep), "shards": [a.state() for a in answers]}


LATENCY_FIGURES = tuple(f"{kind}_{p}_seconds" for kind in ("wait", "run")
                        for p in selectors.LATENCY_PERCENTILES)


def latency(**query) -> dict:
    """selectors.latency over every database: in each bucket the jobs (samples) summed and
    each percentile the highest of the databases that finished jobs in it, an upper bound
    (percentiles do not add; exact when one database finished all of the bucket's jobs);
    with `by_queue`, a series per queue over all of them. `shards` says which answered."""
    answers = each(lambda: selectors.latency(**query))
    up = _answering(answers)
    series: dict[Any, dict[Any, dict]] = {}
    keep = 0
    for value in up:
        for one in value["series"]:
            keep = max(keep, len(one["points"]))
            points = series.setdefault(one["queue"], {})
            for point in one["points"]:
                seen = points.get(point["at"])
                if seen is None:
                    points[point["at"]] = dict(point)
                    continue
                seen["jobs"] += point["jobs"]
                for name in LATENCY_FIGURES:
                    figures = [f for f in (seen[name], point[name]) if f is not None]
                    seen[name] = max(figures) if figures else None
    # One series named None (without by_queue), or one per queue name.
    ordered = sorted(series, key=lambda name: name or "")
    return {**up[0], "series": [{"queue": name, "points": _newest(series[name], keep)}
                                for name in ordered],
            "shards": [a.state() for a in answers]}


def _copy(value: Any) -> Any:
    """A copy of nested dicts and lists (their leaves shared), so that sums leave the first
    database's answer as it was."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@dataclass
class FeedPage:
    results: list  # JobEvents, each with `shard`: its database's alias
    has_more: bool
    next_after: int | None  # JOB_DATABASE's position: an event id (the cursor before shards)
    next_cursor: str
    shards: list[dict] | None  # each database's state; None without JOB_SHARDS


# Every database's events merged by time (ties by id); each database's own stay in its
# commit order, positions (tx_id, id) of its feed (feed.py).
EVENT_ORDER = keyset.Order.parse(["created_at", "id"])


def _feed_position(event) -> tuple:
    return (event.tx_id, event.id)


def events_feed(*, after: int | None = None, cursor: str | None = None,
                limit: int) -> FeedPage:
    """Every database's events after `cursor` (feed positions, one a database: keyset's
    encode_feed), merged by time, up to `limit`; without one, the latest `limit` of them all.
    `after`, an event id, is JOB_DATABASE's feed alone (the cursor before shards). Each
    database's feed follows its commit order and holds back what is in flight there
    (feed.py), so no event is skipped or shown twice across polls, whatever the writers do; a
    database that does not answer keeps its position, and one the cursor does not name (added
    to JOB_SHARDS, or down when the feed started) starts at its latest `limit` events. Two
    statements a database (its positions, its events), and one to find `after`'s place.
    Raises keyset.BadCursor for a cursor the feed did not give; OperationalError when no
    database answered."""
    home = conf.get().DATABASE
    if after is not None:
        positions: dict[str, tuple] = {home: (None, after)}
        answers = [on(home, lambda: _feed_read(feed.position_of(after), limit))]
    else:
        given = {} if cursor is None else keyset.decode_feed(cursor)
        positions = {alias: given[alias] for alias in databases() if alias in given}
        answers = each(lambda: _feed_read(positions.get(db.home_alias()), limit))
    _answering(answers)
    streams = {a.alias: a.value[1] for a in answers if a.up}
    for answer in answers:
        if answer.up and answer.value[0] is not None:
            positions[answer.alias] = answer.value[0]
    if after is None and cursor is None:
        # The start: the latest `limit` of all, each database going on after its latest.
        page = keyset.merge(EVENT_ORDER, streams, sum(map(len, streams.values())), positions,
                            position=_feed_position)
        rows, more = page.rows[-limit:], False
    else:
        page = keyset.merge(EVENT_ORDER, streams, limit, positions, position=_feed_position)
        rows, more = page.rows, page.more
    for alias, event in rows:
        event.shard = alias
    at_home = page.positions.get(home)
    return FeedPage(
        results=[event for _, event in rows], has_more=more,
        next_after=at_home[1] if at_home else None,
        next_cursor=keyset.encode_feed(page.positions),
        shards=[a.state() for a in answers] if conf.get().SHARDS else None)


def _feed_read(position: tuple | None, limit: int) -> tuple[tuple | None, list]:
    """This database's events after `position`, one more than `limit` (oldest first, each
    with its `tx_id`), and the position they follow. Without a position: its latest `limit`,
    and the position just before the first of them (nothing then: before everything)."""
    if position is None:
        rows = feed.latest_rows(limit=limit)
        position = (rows[0][0], rows[0][1] - 1) if rows else (0, 0)
    else:
        rows = feed.rows_after(position, limit=limit + 1)
    tx_ids = {event_id: tx_id for tx_id, event_id in rows}
    events = selectors.events_in_order([event_id for _, event_id in rows])
    for event in events:
        event.tx_id = tx_ids[event.id]
    return position, events
