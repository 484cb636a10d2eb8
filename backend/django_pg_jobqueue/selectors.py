"""Selectors: every read the API, the admin and the metrics make. Nothing here writes.

Each list or detail read is a fixed number of queries, whatever the number of rows
(`tests/api/test_api_list.py` and `tests/api/test_api_detail.py` pin them with django_assert_num_queries).
"""
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import BooleanField, Count, Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Now
from django.utils import timezone

from . import arguments, conf, keys, periodic, sql
from .catalogue import declared_queues, key_match, limit_for, queue_exists, rate_limits_in_force
from .db import queue_connection
from .exceptions import BatchNotFound, JobNotFound, QueueNotFound
from .feed import event_ids_after
from .metrics import lost_after, read_rate_use, worker_lost
from .models import (
    AuditLogEntry,
    HistoryEvent,
    Job,
    JobBatch,
    JobSignal,
    LostWorker,
    QueueSetting,
    RateLimit,
    TxNow,
    WorkerOverride,
    WorkerProcess,
)
from .states import (
    BATCH_CALLBACKS,
    PRIORITY_MAX,
    EventKind,
    State,
    Status,
    parse_job_id,
)

DETAIL_EVENTS = 50
# The running jobs a job's detail names as holding its concurrency key, at most.
KEY_HOLDERS = 10
EVENTS_DEFAULT_LIMIT = 100
EVENTS_MAX_LIMIT = 500
# A worker process heartbeats every renew interval (at most 2 s); one that has been silent
# for this long is gone (SIGKILL, a lost host) even though its row is still there.
WORKER_ALIVE_SECONDS = 15
THROUGHPUT_MINUTES = 15
# The job list's text search (`?search=`) needs this many characters: trigrams (text_search).
SEARCH_MIN_TEXT_CHARS = 3


def job_list():
    """All jobs, newest first, without the (long) traceback; the API filters and pages it."""
    return Job.objects.defer("last_traceback", "request_fingerprint").order_by("-id")


def _state_q(state: State) -> Q:
    # The queue's clock: now(), as the statements that set available_at use (models.TxNow).
    if state == State.AVAILABLE:
        return Q(status=Status.QUEUED, available_at__lte=TxNow())
    if state == State.SCHEDULED:
        return Q(status=Status.QUEUED, available_at__gt=TxNow(), attempts=0)
    if state == State.RETRYABLE:
        return Q(status=Status.QUEUED, available_at__gt=TxNow(), attempts__gt=0)
    return Q(status=Status(state.value))


def in_states(states) -> Q:
    """The jobs in any of `states` (State values, see states.State) as a Q for the job list.
    ValueError naming the first unknown one."""
    match = Q()
    for value in states:
        try:
            state = State(value)
        except ValueError:
            raise ValueError(f"state must be one of {', '.join(State)}; got {value!r}") from None
        match |= _state_q(state)
    return match


def _like_pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def text_search(value: str) -> Q:
    """The jobs whose payload (its JSON text) or last error contains `value`,
    case-insensitively, as a Q for the job list: every job, whatever the table's size, served
    by the trigram indexes (sql.SEARCH_TEXT_MATCHES). ValueError if `value` is shorter than
    SEARCH_MIN_TEXT_CHARS once stripped (a trigram index cannot serve a shorter one)."""
    value = value.strip()
    if len(value) < SEARCH_MIN_TEXT_CHARS:
        raise ValueError(f"value must have at least {SEARCH_MIN_TEXT_CHARS} characters")
    pattern = _like_pattern(value)
    return Q(RawSQL(sql.SEARCH_TEXT_MATCHES, (pattern, pattern), output_field=BooleanField()))


def payload_contains(term: str) -> Q:
    """The jobs whose payload contains what `term` names (`customer_id:42`: a payload with
    `"customer_id": 42` among its keys), as a Q for the job list: JSONB containment, served by
    job_search_text_payload_idx (sql.PAYLOAD_CONTAINS). InvalidJobArgument naming `payload`
    for a term arguments.check_payload_filter refuses."""
    contained = arguments.check_payload_filter(term)
    return Q(RawSQL(sql.PAYLOAD_CONTAINS, (json.dumps(contained),), output_field=BooleanField()))


# The filter bar's suggestions (distinct_values): the fields, and how many values at most.
SUGGESTION_FIELDS = ("queue", "type", "concurrency_key")
SUGGESTIONS_DEFAULT_LIMIT = 10
SUGGESTIONS_MAX_LIMIT = 50
# The most index probes one walk makes, per value asked for (sql.DISTINCT_VALUES).
SUGGESTION_STEPS_PER_VALUE = 10


def distinct_values(field: str, *, prefix: str = "", limit: int = SUGGESTIONS_DEFAULT_LIMIT,
                    key_scope: str = "") -> list[str]:
    """The distinct values of `field` (queue, type or concurrency_key) that start with
    `prefix`, in order, at most `limit`: each a probe of the field's index, never a pass over
    the jobs (sql.DISTINCT_VALUES). Concurrency keys are Python's global keys and, with
    `key_scope` (an API user's, keys.user_scope), that user's own keys as they sent them;
    never another user's. ValueError naming `field` or `limit` for another value."""
    if field not in SUGGESTION_FIELDS:
        raise ValueError(f"field must be one of {', '.join(SUGGESTION_FIELDS)}; got {field!r}")
    if not 1 <= limit <= SUGGESTIONS_MAX_LIMIT:
        raise ValueError(f"limit must be from 1 to {SUGGESTIONS_MAX_LIMIT}; got {limit!r}")
    walks = [prefix]
    if field == "concurrency_key":
        walks = [] if prefix.startswith(keys.PREFIX) else [prefix]
        if key_scope:
            walks.append(key_scope + prefix)
    values: set[str] = set()
    with queue_connection().cursor() as cur:
        for start in walks:
            cur.execute(sql.DISTINCT_VALUES[field], {
                "prefix": start, "limit": limit, "steps": limit * SUGGESTION_STEPS_PER_VALUE})
            found = [value for (value,) in cur.fetchall()]
            # A key as its sender wrote it; a queue or type as it is (a queue may hold ':').
            values.update((keys.unscoped(v) or "") if field == "concurrency_key" else v
                          for v in found)
    return sorted(values)[:limit]


def job_get(job_id) -> Job:
    """The job, or JobNotFound (for an id that is not one too)."""
    return _by_id(Job, job_id, JobNotFound)


def _by_id(model, given_id, not_found):
    pk = parse_job_id(given_id)
    row = model.objects.filter(pk=pk).first() if pk is not None else None
    if row is None:
        raise not_found(given_id)
    return row


@dataclass
class JobDetail:
    job: Job
    events: list[HistoryEvent]
    dependencies: list[dict] | None = None  # what it waits for (enqueue(after=...))
    dependants: list[dict] | None = None  # what waits for it


DETAIL_DEPENDANTS = 100  # the most dependants a job's detail lists


def job_links(job: Job) -> tuple[list[dict], list[dict]]:
    """The jobs this one waits for, and (the first DETAIL_DEPENDANTS of) those that wait
    for it: {id, type, status, on_failure}; type and status None for a job no longer kept."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.JOB_LINKS, {"id": job.pk, "limit": DETAIL_DEPENDANTS})
        rows = cur.fetchall()
    links: dict[str, list[dict]] = {"after": [], "before": []}
    for side, job_id, job_type, status, on_failure in rows:
        links[side].append({"id": job_id, "type": job_type, "status": status,
                            "on_failure": on_failure})
    return links["after"], links["before"]


def job_detail(job_id, *, events: int = DETAIL_EVENTS) -> JobDetail:
    """The job and its latest `events` events, oldest first: two queries (more for a queued
    job of a fair or aging queue, fairness_wait, or under a rate limit, rate_limit_wait)."""
    pk = parse_job_id(job_id)
    # With the job, whether its queue is fair or ages its jobs: no query more for the others.
    ordered = QueueSetting.objects.filter(queue=OuterRef("queue")).filter(
        Q(fair=True) | Q(aging_seconds__isnull=False))
    job = (Job.objects.filter(pk=pk).annotate(queue_ordered=Exists(ordered),
                                              rate_limits_set=Exists(RateLimit.objects.all()))
           .first() if pk is not None else None)
    if job is None:
        raise JobNotFound(job_id)
    latest = list(
        HistoryEvent.objects.filter(job_id=job.pk).select_related(None).order_by("-id")[:events]
    )
    for event in latest:
        event.job = job  # the serializer reads job.type / job.status without a query
    latest.reverse()
    # The links cost a query only for a job that has some: one others wait for
    # (has_dependants), or one that waited (its `blocked` event), or one whose history is
    # longer than the events read, which may hide that event.
    dependencies: list[dict] = []
    dependants: list[dict] = []
    if (job.has_dependants or len(latest) >= events
            or any(e.kind == EventKind.BLOCKED for e in latest)):
        dependencies, dependants = job_links(job)
    (job.concurrency_key_running, job.concurrency_key_wait,
     job.concurrency_key_holders) = concurrency_key_wait(job)
    job.fairness_wait = fairness_wait(job)
    job.rate_limit_wait = rate_limit_wait(job)
    job.locked_by_state, job.locked_by_last_seen_at = lease_owner_state(job.locked_by)
    # A query only for a queued job that parked (its `parked` event), or whose history is
    # longer than the events read.
    job.awaiting_signal = None
    if job.status == Status.QUEUED and (len(latest) >= events
                                        or any(e.kind == EventKind.PARKED for e in latest)):
        job.awaiting_signal = awaiting_signal(job)
    return JobDetail(job=job, events=latest, dependencies=dependencies, dependants=dependants)


def awaiting_signal(job: Job) -> str | None:
    """The name of the signal a queued job is parked waiting for (`ctx.wait_for_signal`),
    not sent yet and whose wait has not timed out; None otherwise. One query."""
    return (JobSignal.objects.filter(job_id=job.pk, awaited_at__isnull=False,
                                     sent_at__isnull=True)
            .filter(Q(timeout_at__isnull=True) | Q(timeout_at__gt=Now()))
            .order_by("-awaited_at").values_list("name", flat=True).first())


def lease_owner_state(locked_by: str | None) -> tuple[str | None, datetime | None]:
    """Whether the worker process of a job's lease owner (`<host>-<pid>-<thread>`) is
    "alive" or "lost" (as the workers page says: silent for more than
    metrics.LOST_AFTER_HEARTBEATS of its heartbeat intervals, on the database clock), or
    "unknown" (no row: it has not beaten yet, or its row is gone); with its last heartbeat.
    (None, None) for a job no one holds. One query, only for a held job."""
    if not locked_by:
        return None, None
    process_id = locked_by.rsplit("-", 1)[0]
    row = (WorkerProcess.objects.filter(pk=process_id).annotate(db_now=Now())
           .values_list("heartbeat_at", "db_now", "heartbeat_interval_seconds").first())
    if row is None:
        return "unknown", None
    heartbeat_at, db_now, interval = row
    age = (db_now - heartbeat_at).total_seconds()
    return ("lost" if worker_lost(age, interval) else "alive"), heartbeat_at


def concurrency_key_wait(job: Job) -> tuple[int | None, str, list[int]]:
    """How many jobs with `job`'s concurrency key run now (None: it has no key); for a
    queued job whose key is at its limit, why it waits: "waiting: 1 of 1 running for key
    customer:42" ("" otherwise: a queued job under its limit is claimed by the next free
    worker); and the ids of the running jobs that hold the key (the first KEY_HOLDERS)."""
    if job.concurrency_key is None:
        return None, "", []
    with queue_connection().cursor() as cur:
        cur.execute(sql.KEY_RUNNING_COUNT_AND_HOLDERS,
                    {"key": job.concurrency_key, "holders": KEY_HOLDERS})
        running, holders = cur.fetchone()
    if job.status != Status.QUEUED or running < job.concurrency_key_limit:
        return running, "", list(holders)
    return running, (f"waiting: {running} of {job.concurrency_key_limit} running for key "
                     f"{keys.unscoped(job.concurrency_key)}"), list(holders)


FAIRNESS_COUNT_CAP = 1000  # fairness_wait counts keys and jobs ahead up to this many


def fairness_wait(job: Job) -> str:
    """For a queued job of a fair queue or an aging queue (docs/how-to/fairness.md), how the
    claim orders it: its key's turn ("fair shares: key tenant:a takes turns with 2 other
    keys; 3 of its jobs come first") and its effective priority under aging ("aging:
    counts as priority 7 now: 2, +1 per 30 s due, up to 100"); "" for any other job. One
    query, only for a queued job whose queue is fair or ages its jobs (job_detail annotates
    `queue_ordered`; without it, the query says)."""
    if job.status != Status.QUEUED or not getattr(job, "queue_ordered", True):
        return ""
    params = {"queue": job.queue, "key": job.fairness_key, "priority": job.priority,
              "available_at": job.available_at, "created_at": job.created_at, "id": job.pk,
              "cap": FAIRNESS_COUNT_CAP}
    with queue_connection().cursor() as cur:
        cur.execute(sql.FAIRNESS_WAIT, params)
        row = cur.fetchone()
    if row is None:
        return ""
    fair, aging_seconds, aging_max, weights, now, ahead, others = row
    parts = []
    if fair and job.fairness_key is not None:
        weights = json.loads(weights) if isinstance(weights, str) else weights
        match = key_match(job.fairness_key, weights)
        weight = 1 if match is None else weights[match]  # as sql.CLAIM_FAIR's weighted_groups
        parts.append(f"fair shares: key {keys.unscoped(job.fairness_key)}"
                     + (f" (weight {weight})" if weight != 1 else "") + " takes turns with "
                     f"{_at_least(others)} other key{'s' if others != 1 else ''}; "
                     f"{_at_least(ahead)} of its jobs come first")
    elif fair:
        parts.append("fair shares: the jobs without a fairness key share one turn")
    if aging_seconds is not None:
        cap = PRIORITY_MAX if aging_max is None else aging_max
        waited = max(0.0, (now - job.available_at).total_seconds())
        effective = max(job.priority, min(cap, job.priority + int(waited // aging_seconds)))
        parts.append(f"aging: counts as priority {effective} now: {job.priority}, +1 per "
                     f"{aging_seconds:g} s due, up to {cap}")
    return "; ".join(parts)


def rate_limit_wait(job: Job) -> str:
    """For a queued job that is due, the rate limits that hold it back now (its queue's, its
    type's, its concurrency key's: docs/how-to/rate-limits.md), each with its window's use and
    when the job's weight fits again: "rate limit of type email_send: 20 of 20 started in the
    last 1 s; room for it in 0.4 s"; "" when none does (or it is not queued, or not due).
    Queries only when a limit is declared (JOB_RATE_LIMITS) or set (job_detail annotates
    `rate_limits_set`): the limits in force, then one read of the starts log."""
    settings = conf.get()
    if job.status != Status.QUEUED or not (settings.RATE_LIMITS
                                           or getattr(job, "rate_limits_set", True)):
        return ""
    limits = rate_limits_in_force()
    applying = [(kind, name, limit) for kind, name in (
        ("queue", job.queue), ("type", job.type), ("key", job.concurrency_key))
        if name is not None and (limit := limit_for(kind, name, limits)) is not None]
    if not applying:
        return ""
    shown = {f"{kind}:{name}": f"{kind} {keys.unscoped(name) if kind == 'key' else name}"
             for kind, name, _ in applying}
    with queue_connection().cursor() as cur:
        cur.execute(sql.RATE_WAIT, {
            "scopes": list(shown), "max_starts": [limit[2] for _, _, limit in applying],
            "periods": [float(limit[3]) for _, _, limit in applying],
            "weight": settings.RATE_WEIGHTS.get(job.type, 1)})
        rows = cur.fetchall()
    parts = []
    for scope, max_starts, period, used, frees_at, now in rows:
        if job.available_at > now:
            return ""  # it waits for its time first
        if frees_at is None:
            continue  # room for it in this window
        room = max(0.0, (frees_at - now).total_seconds())
        parts.append(f"rate limit of {shown[scope]}: {used} of {max_starts} started in the last "
                     f"{period:g} s; room for it in {room:.1f} s")
    return "; ".join(parts)


def _at_least(count: int) -> str:
    return f"{count}+" if count >= FAIRNESS_COUNT_CAP else str(count)


@dataclass
class EventPage:
    results: list[HistoryEvent]
    has_more: bool
    next_after: int | None


def _events() -> QuerySet:
    return HistoryEvent.objects.select_related("job").only(
        "id", "job_id", "kind", "attempt", "worker_id", "message", "data", "created_at",
        "job__type", "job__status",
    )


def events_in_order(ids: list[int]) -> list[HistoryEvent]:
    """The events of `ids`, in that order, each with its job's type and status (one query;
    an id whose event is gone is left out)."""
    by_id = {e.id: e for e in _events().filter(id__in=ids)}
    return [by_id[i] for i in ids if i in by_id]


def events_feed(*, job_id: int, after: int | None = None,
                limit: int = EVENTS_DEFAULT_LIMIT) -> EventPage:
    """A cursor feed of one job's events, oldest first: the ones after `after`, up to `limit`.

    Without `after`, the latest `limit` events (still oldest first), so that a poller starts
    from now rather than replaying history. `next_after` is the cursor for the next poll.
    (Every job's events: merged.events_feed.)
    """
    if after is None:
        rows = list(_events().filter(job_id=job_id).order_by("-id")[:limit])
        rows.reverse()
        has_more = False  # these are the newest: nothing after them yet
    else:
        # Commit order, never skipping an event (feed.py); one more id tells has_more.
        ids = event_ids_after(after, limit=limit + 1, job_id=job_id)
        has_more = len(ids) > limit
        rows = events_in_order(ids[:limit])
    next_after = rows[-1].id if rows else after
    return EventPage(results=rows, has_more=has_more, next_after=next_after)


def queued_depth() -> int:
    return Job.objects.queued().count()


def job_by_idempotency_key(key: str) -> Job | None:
    return Job.objects.filter(idempotency_key=key).first()


def known_queues() -> list[str]:
    """Queue names worth offering in filters: every queue that holds jobs (sql.JOB_QUEUE_NAMES,
    a skip scan of an index: one probe per queue, not a pass over the jobs), the declared ones
    (handlers, Tasks backends, schedules), the ones with a setting, and default."""
    names = {"default"} | declared_queues()
    names |= set(QueueSetting.objects.values_list("queue", flat=True))
    with queue_connection().cursor() as cur:
        cur.execute(sql.JOB_QUEUE_NAMES)
        names |= {name for (name,) in cur.fetchall()}
    return sorted(names)


def queues(name: str | None = None) -> list[dict]:
    """Every queue that has jobs or a setting (or just `name`), by name: its pause and
    concurrency limit, and its queued, runnable and running jobs. Two queries: one count
    grouped by queue (a pass over the jobs table, like metrics' counts by status) and the
    settings.

    [{"name", "paused", "concurrency_limit", "fair", "aging_seconds", "aging_max_priority",
      "fairness_weights", "queued", "runnable", "running"}, ...]
    """
    jobs = Job.objects.all() if name is None else Job.objects.filter(queue=name)
    counts = {
        row["queue"]: row
        for row in jobs.values("queue").annotate(
            queued=Count("id", filter=Q(status=Status.QUEUED)),
            runnable=Count("id", filter=Q(status=Status.QUEUED, available_at__lte=Now())),
            running=Count("id", filter=Q(status=Status.RUNNING)),
        ).order_by()
    }
    settings = QueueSetting.objects.all()
    if name is not None:
        settings = settings.filter(queue=name)
    limits = {s.queue: s for s in settings}
    rows = []
    for queue in sorted(counts.keys() | limits.keys()):
        setting, count = limits.get(queue), counts.get(queue, {})
        rows.append({
            "name": queue,
            "paused": setting.paused if setting else False,
            "concurrency_limit": setting.concurrency_limit if setting else None,
            "fair": setting.fair if setting else False,
            "aging_seconds": setting.aging_seconds if setting else None,
            "aging_max_priority": setting.aging_max_priority if setting else None,
            "fairness_weights": setting.fairness_weights if setting else {},
            "queued": count.get("queued", 0),
            "runnable": count.get("runnable", 0),
            "running": count.get("running", 0),
        })
    return rows


# The throughput chart's ranges: name -> (bucket seconds, buckets).
THROUGHPUT_RANGES = {"15m": (60, 15), "1h": (60, 60), "24h": (1800, 48)}


def throughput(*, range: str = "15m", queue: str | None = None, type: str | None = None) -> dict:
    """Succeeded and failed jobs per bucket over `range` ("15m", "1h": per minute; "24h": per
    30 minutes), every bucket present, oldest first; only `queue`'s / `type`'s jobs when given.
    ValueError naming `range` for another value. One query."""
    if range not in THROUGHPUT_RANGES:
        raise ValueError(f"range must be one of {', '.join(THROUGHPUT_RANGES)}; got {range!r}")
    bucket_seconds, buckets = THROUGHPUT_RANGES[range]
    with queue_connection().cursor() as cur:
        cur.execute(sql.THROUGHPUT, {"bucket": timedelta(seconds=bucket_seconds),
                                     "buckets": buckets, "queue": queue, "type": type})
        points = [{"at": at, "succeeded": ok, "failed": bad} for at, ok, bad in cur.fetchall()]
    return {"range": range, "bucket_seconds": bucket_seconds, "queue": queue, "type": type,
            "points": points}


LATENCY_PERCENTILES = ("p50", "p95", "p99")


def latency(*, range: str = "1h", queue: str | None = None, type: str | None = None,
            by_queue: bool = False) -> dict:
    """Wait and run time percentiles (p50, p95, p99, in seconds) per bucket over `range` (as
    throughput's), from the jobs that finished in it (succeeded or failed, their last
    attempt: sql.LATENCY), every bucket present, oldest first; only `queue`'s / `type`'s jobs
    when given. One series for all of them, or with `by_queue` one per queue that finished
    jobs in the range (`queue` names it). ValueError naming `range` for another value. One
    query."""
    if range not in THROUGHPUT_RANGES:
        raise ValueError(f"range must be one of {', '.join(THROUGHPUT_RANGES)}; got {range!r}")
    bucket_seconds, buckets = THROUGHPUT_RANGES[range]
    with queue_connection().cursor() as cur:
        cur.execute(sql.LATENCY, {"bucket": timedelta(seconds=bucket_seconds), "buckets": buckets,
                                  "queue": queue, "type": type, "by_queue": by_queue})
        rows = cur.fetchall()
    series: dict[str | None, list[dict]] = {}
    for name, at, jobs, *figures in rows:
        point: dict[str, Any] = {"at": at, "jobs": jobs}
        for kind, values in (("wait", figures[:3]), ("run", figures[3:])):
            for label, value in zip(LATENCY_PERCENTILES, values):
                point[f"{kind}_{label}_seconds"] = value
        series.setdefault(name, []).append(point)
    return {"range": range, "bucket_seconds": bucket_seconds, "queue": queue, "type": type,
            "by": "queue" if by_queue else None,
            "series": [{"queue": name, "points": points} for name, points in series.items()]}


def queue_detail(name: str) -> dict:
    """One queue for its page: `queue_get(name)`, its jobs counted by every status, and the live
    worker processes that claim from it (they list it, or every queue: "*"), each with how
    many of this queue's jobs it runs. Raises QueueNotFound when the queue does not exist."""
    if not queue_exists(name):
        raise QueueNotFound(name)
    row = dict(queue_get(name))
    counts = {s.value: 0 for s in Status}
    for r in Job.objects.filter(queue=name).values("status").annotate(n=Count("id")).order_by():
        counts[r["status"]] = r["n"]
    row["counts_by_status"] = counts
    cutoff = timezone.now() - timedelta(seconds=WORKER_ALIVE_SECONDS)
    processes = [p for p in WorkerProcess.objects.filter(heartbeat_at__gte=cutoff).order_by("id")
                 if not p.queues or name in p.queues or "*" in p.queues]
    running = list(Job.objects.running().filter(queue=name, locked_by__isnull=False)
                   .values_list("locked_by", flat=True)) if processes else []
    row["workers"] = [{
        "id": p.id, "hostname": p.hostname, "pid": p.pid, "threads": p.threads,
        "queues": p.queues, "all_queues": not p.queues or "*" in p.queues,
        "heartbeat_at": p.heartbeat_at,
        "running_here": sum(1 for w in running if w.startswith(f"{p.id}-")),
    } for p in processes]
    return row


def queue_orders() -> list[dict]:
    """The queues whose claim order is not the plain one, by name: those that are fair, age
    their jobs or have fairness weights, each {"name", "fair", "aging_seconds",
    "aging_max_priority", "fairness_weights"} (manage.py queue_status). One query, of the
    settings only."""
    rows = (QueueSetting.objects.filter(
        Q(fair=True) | Q(aging_seconds__isnull=False) | ~Q(fairness_weights={}))
        .order_by("queue").values("queue", "fair", "aging_seconds", "aging_max_priority",
                                  "fairness_weights"))
    return [{"name": r.pop("queue"), **r} for r in rows]


def queue_get(name: str) -> dict:
    """One queue as `queues()` shows it; a queue without jobs or a setting has zeros."""
    found = queues(name)
    return found[0] if found else {"name": name, "paused": False, "concurrency_limit": None,
                                   "fair": False, "aging_seconds": None,
                                   "aging_max_priority": None, "fairness_weights": {},
                                   "queued": 0, "runnable": 0, "running": 0}


_WHOLE_NUMBER_FIELDS = {"priority": None, "max_attempts": 1, "timeout_seconds": 1}  # name -> minimum


def schedules(now=None) -> list[dict]:
    """`periodic.schedule()`, every value of the type the API declares.

    A settings entry can hold anything (`"priority": "high"`, `"timeout_seconds": "5m"`): such a value
    is shown as null (or empty) and named in the entry's `problems`, which makes it invalid,
    rather than breaking the whole list.
    """
    rows = periodic.schedule(now=now)
    for row in rows:
        problems = row["problems"]

        def refuse(key, empty, problem):
            row[key] = empty
            if not any(p.startswith(problem.split(" must")[0]) for p in problems):
                problems.append(problem)

        for key in ("name", "cron", "timezone"):
            row[key] = str(row[key])
        for key in ("type", "task", "queue"):
            if row[key] is not None and not isinstance(row[key], str):
                refuse(key, None, f"'{key}' must be a string")
        if row["queue"] is not None and not 1 <= len(row["queue"]) <= 100:
            problems.append("'queue' must have 1 to 100 characters")
        if not isinstance(row["payload"], dict):
            refuse("payload", {}, "'payload' must be an object")
        if isinstance(row["args"], tuple):
            row["args"] = list(row["args"])
        if not isinstance(row["args"], list):
            refuse("args", [], "'args' must be a list and 'kwargs' an object")
        if not isinstance(row["kwargs"], dict):
            refuse("kwargs", {}, "'args' must be a list and 'kwargs' an object")
        for key, minimum in _WHOLE_NUMBER_FIELDS.items():
            value = row[key]
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                refuse(key, None, f"'{key}' must be a whole number")
            elif minimum is not None and value < minimum:
                problems.append(f"'{key}' must be at least {minimum}")
        row["valid"] = not problems
    return rows


SCHEDULE_TICKS_DEFAULT_LIMIT = 50
SCHEDULE_TICKS_MAX_LIMIT = 500


def schedule_ticks(name: str, *, limit: int = SCHEDULE_TICKS_DEFAULT_LIMIT) -> list[dict]:
    """Schedule `name`'s jobs, newest first, at most `limit` (one query, served by
    jobs_periodic_schedule_idx): each with its tick's time (None for a run-now job, `manual`
    then) and the job's outcome. ScheduleNotFound for an unknown schedule; ValueError naming
    `limit` outside 1..SCHEDULE_TICKS_MAX_LIMIT.

    [{"tick_at", "manual", "job": {"id", "status", "attempts", "max_attempts", "created_at",
      "started_at", "finished_at", "last_error"}}, ...]
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not (
            1 <= limit <= SCHEDULE_TICKS_MAX_LIMIT):
        raise ValueError(f"limit must be a whole number from 1 to {SCHEDULE_TICKS_MAX_LIMIT}")
    periodic.entry(name)
    prefix = f"{periodic.KEY_PREFIX}:{name}:"
    with queue_connection().cursor() as cur:
        cur.execute(sql.SCHEDULE_JOBS, [name, limit])
        rows = cur.fetchall()
    ticks = []
    for (job_id, key, status, attempts, max_attempts, created_at, started_at, finished_at,
         last_error) in rows:
        when = key[len(prefix):]
        manual = when.startswith(f"{periodic.MANUAL}:")
        try:
            tick_at = None if manual else datetime.fromisoformat(when)
        except ValueError:  # a key of this shape that no enqueuer wrote
            tick_at = None
        ticks.append({"tick_at": tick_at, "manual": manual, "job": {
            "id": job_id, "status": status, "attempts": attempts, "max_attempts": max_attempts,
            "created_at": created_at, "started_at": started_at, "finished_at": finished_at,
            "last_error": last_error}})
    return ticks


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def metrics() -> dict:
    """The figures behind /api/v1/metrics/ and the dashboard, in a fixed number of queries."""
    settings = conf.get()
    counts = {s.value: 0 for s in Status}
    for row in Job.objects.values("status").annotate(n=Count("id")).order_by():
        counts[row["status"]] = row["n"]
    queued = Job.objects.queued()
    by_priority = [
        {"priority": r["priority"], "count": r["n"]}
        for r in queued.values("priority").annotate(n=Count("id")).order_by("-priority")
    ]
    paused = dict(QueueSetting.objects.values_list("queue", "paused"))
    by_queue = [
        {"queue": r["queue"], "count": r["n"], "paused": paused.get(r["queue"], False)}
        for r in queued.values("queue").annotate(n=Count("id")).order_by("queue")
    ]
    with queue_connection().cursor() as cur:
        cur.execute(sql.DASHBOARD_QUEUED)
        oldest_age, runnable, scheduled, retryable = cur.fetchone()
        cur.execute(sql.DASHBOARD_FINISHED)
        (s1, f1, s5, f5, s15, f15, mean, p95, retried, finished) = cur.fetchone()
        cur.execute(sql.DASHBOARD_THROUGHPUT)
        throughput = [
            {"minute": minute, "succeeded": s, "failed": f}
            for minute, s, f in cur.fetchall()
        ]
    return {
        "generated_at": timezone.now(),
        "counts_by_status": counts,
        "queued": {
            "total": counts[Status.QUEUED],
            "runnable": runnable,
            "scheduled": scheduled + retryable,
            "by_priority": by_priority,
            "by_queue": by_queue,
            "max_depth": settings.MAX_QUEUE_DEPTH,
        },
        "counts_by_state": {
            State.AVAILABLE: runnable, State.SCHEDULED: scheduled, State.RETRYABLE: retryable,
            State.RUNNING: counts[Status.RUNNING], State.SUCCEEDED: counts[Status.SUCCEEDED],
            State.FAILED: counts[Status.FAILED], State.CANCELLED: counts[Status.CANCELLED],
        },
        "oldest_runnable_age_seconds": _round(max(oldest_age, 0) if oldest_age is not None else None),
        "finished": {
            "last_1m": {"succeeded": s1, "failed": f1},
            "last_5m": {"succeeded": s5, "failed": f5},
            "last_15m": {"succeeded": s15, "failed": f15},
        },
        "run_time_seconds": {"mean": _round(mean), "p95": _round(p95), "sample_size": finished},
        # The share of jobs finished in the last 15 minutes that needed more than one attempt.
        "retry_rate": _round(retried / finished, 4) if finished else None,
        "throughput": throughput,
        "workers": active_workers(),
    }


def active_workers() -> dict:
    """The overview's workers: every process with a row, `alive` or `lost` by the same rule as
    the workers page (worker_processes), each with the jobs its threads run (a lost one's: what
    it held when it went silent). Only the alive ones count as active and lend their threads."""
    rows = [
        {key: p[key] for key in ("id", "hostname", "pid", "threads", "queues", "state",
                                 "started_at", "heartbeat_at")}
        | {"running_jobs": [{key: j[key] for key in ("id", "type", "worker_id", "started_at",
                                                      "progress_percent")}
                            for j in p["running_jobs"]]}
        for p in sorted(worker_processes(), key=lambda p: p["id"])
    ]
    alive = [r for r in rows if r["state"] == "alive"]
    return {
        "active": len(alive),
        "lost": len(rows) - len(alive),
        "threads": sum(r["threads"] for r in alive),
        # A prefetching process (JOB_PREFETCH) may hold more running jobs than it has threads:
        # the ones under `<process>-prefetch` wait for one of its threads (a thread that takes one
        # is recorded as its owner before the handler runs).
        "busy_threads": sum(min(len(r["running_jobs"]), r["threads"]) for r in alive),
        "processes": rows,
    }


def worker_processes() -> list[dict]:
    """Every worker process with a row, for the workers page and the admin: `alive`, or `lost`
    (silent for more than metrics.LOST_AFTER_HEARTBEATS of its heartbeat intervals; its row is
    kept until the reaper requeued what it held), with its memory, jobs run, stuck handlers,
    and the running jobs each of its threads holds (a lost one's: what it held when it died).
    Ages are measured on the database clock."""
    processes = list(WorkerProcess.objects.annotate(db_now=Now()).order_by("hostname", "id"))
    running = list(
        Job.objects.running().filter(locked_by__isnull=False)
        .values("id", "type", "queue", "locked_by", "started_at", "progress_percent")
        .order_by("id")) if processes else []
    rows = []
    for p in processes:
        prefix = f"{p.id}-"
        age = (p.db_now - p.heartbeat_at).total_seconds()
        rows.append({
            "id": p.id, "hostname": p.hostname, "pid": p.pid,
            "supervisor_pid": p.supervisor_pid, "threads": p.threads, "queues": p.queues,
            "state": "lost" if worker_lost(age, p.heartbeat_interval_seconds) else "alive",
            "lost_in_seconds": round(max(lost_after(p.heartbeat_interval_seconds) - age, 0.0), 3),
            "started_at": p.started_at, "heartbeat_at": p.heartbeat_at,
            "heartbeat_age_seconds": round(max(age, 0.0), 3),
            "heartbeat_interval_seconds": p.heartbeat_interval_seconds,
            "rss_bytes": p.rss_bytes, "jobs_done": p.jobs_done,
            "stuck_handlers": p.stuck_handlers,
            "running_jobs": [
                {"id": j["id"], "type": j["type"], "queue": j["queue"],
                 "worker_id": j["locked_by"], "started_at": j["started_at"],
                 "progress_percent": j["progress_percent"]}
                for j in running if j["locked_by"].startswith(prefix)],
        })
    return rows


LOST_WORKERS_LISTED = 50


def worker_overrides() -> list[WorkerOverride]:
    """Every host's overrides of its queues (services/worker_overrides.py), by host and queue:
    the workers page shows them beside each host's processes."""
    return list(WorkerOverride.objects.order_by("hostname", "queue"))


def lost_workers() -> list[LostWorker]:
    """The worker processes recently forgotten after they went silent and the reaper took their
    jobs back, newest first (at most LOST_WORKERS_LISTED; kept a day: services.workers)."""
    return list(LostWorker.objects.order_by("-forgotten_at", "-id")[:LOST_WORKERS_LISTED])

# The last migration plan found empty, keyed by the migration table's fingerprint (its row
# count and highest id): while the table is unchanged, so is the answer, and the health check
# costs one small query instead of loading every app's migration files (about 8 ms).
_migrations_current_at: list[tuple] = []


def audit_log(*, actor: str | None = None, action: str | None = None,
              target_kind: str | None = None, target: str | None = None):
    """The audit log's entries (services/audit_log.py), newest first, each filter exact when
    given: who (`actor`, "" for code that named no one), what (`action`) and to what
    (`target_kind`, `target`). Each filter has its index (models.AuditLogEntry)."""
    entries = AuditLogEntry.objects.order_by("-id")
    given = {"actor": actor, "action": action, "target_kind": target_kind, "target": target}
    return entries.filter(**{name: value for name, value in given.items() if value is not None})


def pending_migrations() -> list[str]:
    """The migrations of every installed app not yet applied to the queue's database, as
    "app_label.name", in the order `migrate` would apply them (empty when it is current)."""
    from django.db.migrations.executor import MigrationExecutor

    connection = queue_connection()
    with connection.cursor() as cur:
        cur.execute(sql.MIGRATIONS_FINGERPRINT)
        fingerprint = tuple(cur.fetchone())
    if fingerprint in _migrations_current_at:
        return []
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if not plan:
        _migrations_current_at[:] = [fingerprint]
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


# How many of a key limit's keys `rate_limits` lists by name (the busiest).
RATE_KEYS_SHOWN = 10


def rate_limits() -> list[dict]:
    """The rate limits in force (GET rate-limits/): each with whether it was set at run time
    (`set`) or is JOB_RATE_LIMITS's (`declared`), and its use now: `used`, the weight started
    in its sliding window (for a key prefix, its busiest key's), and for a key limit `keys`,
    its busiest keys (up to RATE_KEYS_SHOWN, each {key, used}) and `keys_in_window`, how many
    keys it counts starts for now. One read of the starts log (sql.RATE_USE, as /metrics)."""
    declared = {(r[0], r[1]): r for r in conf.get().declared_rate_limits()}
    limits = rate_limits_in_force()
    with queue_connection().cursor() as cur:
        use = read_rate_use(cur, limits)
    used: dict[tuple[str, str], int] = {}
    keys: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for scope_use in use:
        kind, _, name = scope_use.scope.partition(":")
        if kind == "key":
            keys.setdefault((kind, scope_use.limit), []).append((name, scope_use.used))
        used[(kind, scope_use.limit)] = max(used.get((kind, scope_use.limit), 0), scope_use.used)
    out = []
    for kind, name, m, p in limits:
        row: dict[str, Any] = {
            "kind": kind, "name": name, "max_starts": m, "period_seconds": p,
            "source": "declared" if declared.get((kind, name)) == (kind, name, m, p) else "set",
            "used": used.get((kind, name), 0)}
        if kind == "key":
            busiest = sorted(keys.get((kind, name), []), key=lambda k: (-k[1], k[0]))
            row["keys"] = [{"key": k, "used": u} for k, u in busiest[:RATE_KEYS_SHOWN]]
            row["keys_in_window"] = len(busiest)
        out.append(row)
    return out


# --- batches (services/batches.py) ------------------------------------------------------------
def get_batch(batch_id) -> JobBatch:
    """The batch, or BatchNotFound."""
    return _by_id(JobBatch, batch_id, BatchNotFound)


def batch_progress(batch_id) -> dict[str, Any]:
    """Where a batch is: {"id", "total", "succeeded", "failed", "cancelled", "running",
    "pending" (queued or waiting), "done" (finished members), "finished" (whether its
    callbacks were enqueued), "finished_at", "cancelled_at", "created_at", "callbacks"
    (which are set), "callback_jobs" ({name: job id} once finished)}. Counted from the
    members while it runs; once finished, the counts frozen when it finished. Raises
    BatchNotFound."""
    batch = get_batch(batch_id)
    with queue_connection().cursor() as cur:
        cur.execute(sql.BATCH_STATUS_COUNTS, [batch.id])
        counts = dict(cur.fetchall())
    out: dict[str, Any] = {
        "id": batch.id, "total": batch.total, "created_at": batch.created_at,
        "cancelled_at": batch.cancelled_at, "finished_at": batch.finished_at,
        "finished": batch.finished_at is not None,
        "callbacks": [name for name in BATCH_CALLBACKS if name in batch.callbacks],
        "callback_jobs": batch.callback_jobs or {},
        "pass_results": batch.pass_results,
        "running": counts.get("running", 0),
        "pending": counts.get("queued", 0) + counts.get("waiting", 0),
    }
    if batch.finished_at is not None:
        out.update(succeeded=batch.succeeded, failed=batch.failed, cancelled=batch.cancelled)
    else:
        out.update(succeeded=counts.get("succeeded", 0), failed=counts.get("failed", 0),
                   cancelled=counts.get("cancelled", 0))
    out["done"] = out["succeeded"] + out["failed"] + out["cancelled"]
    return out


def batch_members(batch_id) -> list[Job]:
    """The batch's members, in the order enqueued."""
    return list(Job.objects.filter(batch_id=get_batch(batch_id).id).order_by("id"))
