"""GET /metrics: the queue in Prometheus text format, computed from the database at scrape time.

Why from the database. The API runs as several gunicorn processes and the workers as several
processes on several hosts; in-process counters would each see a slice, and would reset on
every restart. Every figure here is read from `jobs`, `job_events`, `job_workers` and
`job_queue_settings` when Prometheus scrapes, so any process answers the same, correct
values, however many there are.

What is exposed (all gauges; "recent" means the last JOB_METRICS_WINDOW_SECONDS, 300 s by
default, itself exposed as `jobqueue_metrics_window_seconds`):
- jobqueue_jobs{queue,status}                  jobs in the table by status and queue
- jobqueue_queue_depth{queue}                  queued jobs (runnable now or scheduled)
- jobqueue_queue_runnable{queue}               queued jobs whose available_at has passed
- jobqueue_queue_depth_limit                   JOB_MAX_QUEUE_DEPTH (absent when off)
- jobqueue_oldest_runnable_age_seconds{queue}  how long the oldest runnable job has waited
- jobqueue_workers_alive, jobqueue_worker_threads_alive   from job_workers heartbeats
- jobqueue_workers_lost, jobqueue_stuck_handlers           the same rows: silent ones, stuck handlers
- jobqueue_queue_paused{queue}, jobqueue_queue_concurrency_limit{queue}   job_queue_settings
- jobqueue_rate_limit_max_starts{scope}, jobqueue_rate_limit_period_seconds{scope},
  jobqueue_rate_limit_used{scope}              each rate limit in force and its window's use
                                               (job_rate_limits, JOB_RATE_LIMITS, job_rate_starts)
- jobqueue_waiting_for_handler{type}           queued jobs a worker without a handler for
                                               their type gave back (docs/how-to/deploy.md)
- jobqueue_processed_recent{type,outcome}      attempts that ended: succeeded, failed,
                                               retry_scheduled, cancelled
- jobqueue_claimed_recent{type}, jobqueue_lease_expired_recent{type},
  jobqueue_retries_scheduled_recent{type}, jobqueue_retried_recent{type} (by an operator),
  jobqueue_released_recent{type}, jobqueue_snoozed_recent{type},
  jobqueue_expired_recent{type} (queued jobs not started by their expires_at, ended unrun)
- jobqueue_run_seconds_recent{type,outcome}    gauge histogram: handler run time
- jobqueue_claim_wait_seconds_recent{type}     gauge histogram: available_at -> claimed
- jobqueue_shard_up{shard}                      with JOB_SHARDS only: 1 when the database answered
With JOB_SHARDS, every family is read from each database (JOB_DATABASE and every shard) and
each sample carries a `shard` label naming its database (`sum without (shard) (...)` adds
them up); a database that does not answer is left out and its jobqueue_shard_up is 0
(fanout.each). Without JOB_SHARDS, the labels are as listed, with no `shard`.
The windowed figures are gauges, not counters: events are pruned with their jobs, so no
count derived from them could only grow. Use them as they are (`jobqueue_processed_recent /
jobqueue_metrics_window_seconds` is a rate per second), not with rate().

Cost. Six short queries (eight under rate limits), run under SET LOCAL statement_timeout
(JOB_METRICS_STATEMENT_TIMEOUT_MS); a scrape that would take longer answers 503. The depth
and age queries read only queued rows (the claim's partial index); the window query reads
the window's events through the BRIN index on job_events.created_at and joins each to its
job; `jobqueue_jobs` counts the whole table, which is what retention keeps bounded (on a
table of several million rows it is the one that costs, about a second per few million).

prometheus_client (the `metrics` extra) is imported only to serve GET /metrics: `snapshot()`,
which `manage.py queue_status` prints, needs nothing beyond the core install.
"""
import functools
import hmac
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import DatabaseError
from django.http import HttpResponse

from . import conf, fanout, sql
from .db import atomic as queue_atomic
from .db import queue_connection, read_target

# The classic text format, which every Prometheus version reads (generate_latest writes it).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# A worker process heartbeats every lease renewal interval (at most 2 s); one silent for
# longer than this is gone, even though its row is still there.
WORKER_ALIVE_SECONDS = 15

# A worker process silent for more than this many of its own heartbeat intervals is lost: the
# workers page and the admin show it so (with what it held), and jobqueue_workers_lost counts
# it, until the reaper has requeued its jobs and forgotten its row (worker/reaper.py).
LOST_AFTER_HEARTBEATS = 2


def lost_after(heartbeat_interval_seconds: float) -> float:
    """The silence after which a process with this heartbeat interval is lost."""
    return LOST_AFTER_HEARTBEATS * heartbeat_interval_seconds


def worker_lost(heartbeat_age_seconds: float, heartbeat_interval_seconds: float) -> bool:
    return heartbeat_age_seconds > lost_after(heartbeat_interval_seconds)


RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
               120.0, 300.0, 600.0, 1800.0, 3600.0)
WAIT_BUCKETS = RUN_BUCKETS

OUTCOMES = ("succeeded", "failed", "retry_scheduled", "cancelled")
COUNTED_KINDS = {
    "claimed": "jobqueue_claimed_recent",
    "lease_expired": "jobqueue_lease_expired_recent",
    "retry_scheduled": "jobqueue_retries_scheduled_recent",
    "retried": "jobqueue_retried_recent",
    "released": "jobqueue_released_recent",
    "snoozed": "jobqueue_snoozed_recent",
    "expired": "jobqueue_expired_recent",
}

@dataclass
class Histogram:
    buckets: list[int]  # cumulative, one per bound
    count: int = 0
    sum: float = 0.0

    def add(self, count: int, total: float, buckets) -> None:
        self.count += count
        self.sum += float(total)
        self.buckets = [a + b for a, b in zip(self.buckets, buckets)] if self.buckets \
            else list(buckets)


@dataclass
class Worker:
    id: str
    hostname: str
    pid: int
    threads: int
    queues: list
    heartbeat_age_seconds: float
    uptime_seconds: float
    stuck_handlers: int = 0
    heartbeat_interval_seconds: float = 2.0

    @property
    def alive(self) -> bool:
        return self.heartbeat_age_seconds <= WORKER_ALIVE_SECONDS

    @property
    def lost(self) -> bool:
        return worker_lost(self.heartbeat_age_seconds, self.heartbeat_interval_seconds)


@dataclass
class Snapshot:
    window_seconds: float
    jobs: dict = field(default_factory=dict)          # (queue, status) -> n
    depth: dict = field(default_factory=dict)         # queue -> queued
    runnable: dict = field(default_factory=dict)      # queue -> runnable now
    oldest_age: dict = field(default_factory=dict)    # queue -> seconds
    max_queue_depth: int | None = None
    workers: list = field(default_factory=list)
    queue_settings: list = field(default_factory=list)  # (queue, paused, limit)
    events: dict = field(default_factory=dict)        # (type, kind) -> n
    processed: dict = field(default_factory=dict)     # (type, outcome) -> n
    run: dict = field(default_factory=dict)           # (type, outcome) -> Histogram
    wait: dict = field(default_factory=dict)          # type -> Histogram
    waiting_for_handler: dict = field(default_factory=dict)  # type -> queued, given back
    # (scope, max_starts, period_seconds, weight used in its window) per rate limit in force
    rate_use: list = field(default_factory=list)
    # JOB_READ_DATABASE's alias, whether the reads go there now, and its lag (None: not
    # configured; lag None: it does not answer)
    read_replica: tuple[str, bool, float | None] | None = None

    @property
    def workers_alive(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]


def snapshot(*, window_seconds: float | None = None) -> Snapshot:
    """Read every figure in one short read-only transaction, under a statement timeout."""
    c = conf.get()
    window = float(window_seconds or c.METRICS_WINDOW_SECONDS)
    snap = Snapshot(window_seconds=window, max_queue_depth=c.MAX_QUEUE_DEPTH)
    if c.READ_DATABASE:  # checked at most once a second per process, as the reads check it
        target = read_target()
        snap.read_replica = (c.READ_DATABASE, target.alias is not None, target.lag)
    with queue_atomic(), queue_connection().cursor() as cur:
        cur.execute(sql.STATEMENT_TIMEOUT_LOCAL,
                    [str(int(c.METRICS_STATEMENT_TIMEOUT_MS))])
        cur.execute(sql.METRICS_JOBS_BY_QUEUE_STATUS)
        snap.jobs = {(q, s): n for q, s, n in cur.fetchall()}
        cur.execute(sql.METRICS_QUEUED_BY_QUEUE)
        for queue, depth, runnable, age in cur.fetchall():
            snap.depth[queue], snap.runnable[queue] = depth, runnable
            snap.oldest_age[queue] = max(float(age), 0.0) if age is not None else 0.0
        cur.execute(sql.METRICS_WAITING_FOR_HANDLER)
        snap.waiting_for_handler = dict(cur.fetchall())
        cur.execute(sql.METRICS_WORKERS)
        snap.workers = [Worker(r[0], r[1], r[2], r[3], r[4] if isinstance(r[4], list) else [],
                               float(r[5]), float(r[6]), int(r[7]), float(r[8]))
                        for r in cur.fetchall()]
        cur.execute(sql.METRICS_QUEUE_SETTINGS)
        snap.queue_settings = cur.fetchall()
        cur.execute(sql.METRICS_RATE_LIMITS)
        snap.rate_use = read_rate_use(cur, c.rate_limits_in_force(cur.fetchall()))
        cur.execute(sql.metrics_window(RUN_BUCKETS, WAIT_BUCKETS), {"window": window})
        n_run = len(RUN_BUCKETS)
        for row in cur.fetchall():
            type_, kind, n, by_worker, run_n, run_sum = row[:6]
            run_buckets = row[6:6 + n_run]
            wait_n, wait_sum = row[6 + n_run:8 + n_run]
            wait_buckets = row[8 + n_run:]
            snap.events[(type_, kind)] = n
            if kind in OUTCOMES:
                # An operator's cancel of a queued job is not an attempt that ended.
                done = by_worker if kind == "cancelled" else n
                if done:
                    snap.processed[(type_, kind)] = done
            if run_n:
                snap.run.setdefault((type_, kind), Histogram([])).add(run_n, run_sum, run_buckets)
            if wait_n:
                snap.wait.setdefault(type_, Histogram([])).add(wait_n, wait_sum, wait_buckets)
    return snap


class QueueCollector:
    """A prometheus_client collector: every scrape reads a fresh snapshot."""

    def __init__(self, window_seconds: float | None = None):
        self.window_seconds = window_seconds

    def describe(self):
        return []  # do not collect at registration time

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        started = time.monotonic()
        if conf.get().SHARDS:
            yield from _by_shard(fanout.each(
                lambda: list(families(snapshot(window_seconds=self.window_seconds)))))
        else:
            yield from families(snapshot(window_seconds=self.window_seconds))
        yield GaugeMetricFamily("jobqueue_scrape_duration_seconds",
                                "Time this scrape spent reading the database.",
                                value=time.monotonic() - started)


def _by_shard(answers):
    """Each database's families as one family a name, each sample labelled with its
    database's `shard`, and jobqueue_shard_up for every database."""
    from prometheus_client.core import Metric

    merged: dict[str, Metric] = {}
    for answer in answers:
        for family in answer.value or []:
            into = merged.get(family.name)
            if into is None:
                into = merged[family.name] = Metric(family.name, family.documentation,
                                                    family.type)
            into.samples += [s._replace(labels={**s.labels, "shard": answer.alias})
                             for s in family.samples]
    yield from merged.values()
    yield _gauge("jobqueue_shard_up", "1 when the database (JOB_DATABASE or a shard of "
                 "JOB_SHARDS) answered this scrape, 0 when it was left out.", ["shard"],
                 [((a.alias,), 1 if a.up else 0) for a in answers])


def _gauge(name, doc, labels=(), samples=()):
    from prometheus_client.core import GaugeMetricFamily

    fam = GaugeMetricFamily(name, doc, labels=list(labels))
    for label_values, value in samples:
        fam.add_metric(list(label_values), value)
    return fam


def _histogram(name, doc, labels, bounds, items):
    from prometheus_client.core import GaugeHistogramMetricFamily

    fam = GaugeHistogramMetricFamily(name, doc, labels=list(labels))
    for label_values, h in items:
        buckets = [(str(b), n) for b, n in zip(bounds, h.buckets)] + [("+Inf", h.count)]
        fam.add_metric(list(label_values), buckets, gsum_value=h.sum)
    return fam


def families(snap: Snapshot):
    queues = sorted({q for q, _ in snap.jobs} | set(snap.depth))
    yield _gauge("jobqueue_jobs", "Jobs in the table, by queue and status.", ["queue", "status"],
                 sorted(snap.jobs.items()))
    yield _gauge("jobqueue_queue_depth", "Queued jobs (runnable now or scheduled), by queue.",
                 ["queue"], [((q,), snap.depth.get(q, 0)) for q in queues])
    yield _gauge("jobqueue_queue_runnable", "Queued jobs whose available_at has passed.",
                 ["queue"], [((q,), snap.runnable.get(q, 0)) for q in queues])
    if snap.max_queue_depth is not None:
        yield _gauge("jobqueue_queue_depth_limit",
                     "JOB_MAX_QUEUE_DEPTH: producers get 503 beyond this many queued jobs.",
                     samples=[((), snap.max_queue_depth)])
    yield _gauge("jobqueue_oldest_runnable_age_seconds",
                 "Seconds the oldest runnable job has waited since its available_at (0: none).",
                 ["queue"], [((q,), round(snap.oldest_age.get(q, 0.0), 3)) for q in queues])
    alive = snap.workers_alive
    yield _gauge("jobqueue_workers_alive",
                 f"Worker processes with a heartbeat in the last {WORKER_ALIVE_SECONDS}s.",
                 samples=[((), len(alive))])
    yield _gauge("jobqueue_worker_threads_alive", "Executor threads of the live worker processes.",
                 samples=[((), sum(w.threads for w in alive))])
    yield _gauge("jobqueue_workers_lost",
                 f"Worker processes silent for more than {LOST_AFTER_HEARTBEATS} heartbeat "
                 f"intervals, kept (and shown as lost) until their jobs are requeued.",
                 samples=[((), sum(1 for w in snap.workers if w.lost))])
    yield _gauge("jobqueue_stuck_handlers",
                 "Handlers running past their job's timeout plus JOB_TIMEOUT_GRACE_SECONDS, "
                 "in the worker processes not lost.",
                 samples=[((), sum(w.stuck_handlers for w in snap.workers if not w.lost))])
    yield _gauge("jobqueue_queue_paused", "1 when the queue is paused (job_queue_settings).",
                 ["queue"], [((q,), 1 if paused else 0) for q, paused, _ in snap.queue_settings])
    yield _gauge("jobqueue_queue_concurrency_limit",
                 "Most jobs of the queue running at once, across all workers.", ["queue"],
                 [((q,), lim) for q, _, lim in snap.queue_settings if lim is not None])
    yield _gauge("jobqueue_rate_limit_max_starts",
                 "A rate limit: most starts (weights summed) in any sliding period, by scope "
                 "(queue:<name>, type:<name>, key:<key>).", ["scope"],
                 [((r.scope,), r.max_starts) for r in snap.rate_use])
    yield _gauge("jobqueue_rate_limit_period_seconds", "A rate limit's period, by scope.",
                 ["scope"], [((r.scope,), r.period_seconds) for r in snap.rate_use])
    yield _gauge("jobqueue_rate_limit_used",
                 "The weight of the starts in a rate limit's window now, by scope (a key's: "
                 "while it has starts in the longest period).", ["scope"],
                 [((r.scope,), r.used) for r in snap.rate_use])
    if snap.read_replica is not None:
        replica, used, lag = snap.read_replica
        yield _gauge("jobqueue_read_replica_in_use",
                     "1 while the API's and dashboard's reads go to JOB_READ_DATABASE; 0 while it "
                     "is left aside (down, or more than JOB_READ_MAX_LAG_SECONDS behind).",
                     ["alias"], [((replica,), 1 if used else 0)])
        yield _gauge("jobqueue_read_replica_lag_seconds",
                     "How far JOB_READ_DATABASE's replay is behind the primary (absent while it "
                     "does not answer).", ["alias"],
                     [((replica,), lag)] if lag is not None else [])
    yield _gauge("jobqueue_waiting_for_handler",
                 "Queued jobs that a worker without a handler for their type gave back: they "
                 "wait for a worker that has one.", ["type"],
                 sorted(((t,), n) for t, n in snap.waiting_for_handler.items()))
    yield _gauge("jobqueue_metrics_window_seconds",
                 "The sliding window of the *_recent metrics (JOB_METRICS_WINDOW_SECONDS).",
                 samples=[((), snap.window_seconds)])
    yield _gauge("jobqueue_processed_recent",
                 "Attempts that ended in the window, by type and outcome.", ["type", "outcome"],
                 sorted(snap.processed.items()))
    for kind, name in COUNTED_KINDS.items():
        yield _gauge(name, f"'{kind}' events in the window, by job type.", ["type"],
                     sorted(((t,), n) for (t, k), n in snap.events.items() if k == kind))
    yield _histogram("jobqueue_run_seconds_recent",
                     "Handler run time of the attempts that ended in the window.",
                     ["type", "outcome"], RUN_BUCKETS, sorted(snap.run.items()))
    yield _histogram("jobqueue_claim_wait_seconds_recent",
                     "Time from available_at to the claim, for jobs claimed in the window.",
                     ["type"], WAIT_BUCKETS, sorted(((t,), h) for t, h in snap.wait.items()))


@functools.cache
def _registry():
    """The registry GET /metrics serves, made on the first scrape (prometheus_client is the
    `metrics` extra: nothing else here needs it)."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector())
    return registry


def metrics_view(request):
    """GET /metrics. Public unless JOB_METRICS_TOKEN is set: then `Authorization: Bearer`."""
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse("method not allowed\n", status=405, content_type="text/plain")
        response["Allow"] = "GET, HEAD"
        return response
    token = conf.get().METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                                  token.encode()):
            response = HttpResponse("a bearer token is required (JOB_METRICS_TOKEN)\n",
                                    status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    try:
        from prometheus_client import generate_latest
    except ImportError:
        return HttpResponse("GET /metrics needs prometheus_client: "
                            "pip install 'django-pg-jobqueue[metrics]'\n", status=501,
                            content_type="text/plain")
    try:
        body = generate_latest(_registry())
    except DatabaseError as exc:
        return HttpResponse(f"metrics unavailable: {type(exc).__name__}: {exc}\n".encode(),
                            status=503, content_type="text/plain")
    return HttpResponse(body, content_type=CONTENT_TYPE)


class RateUse(NamedTuple):
    """A scope's use of its rate limit now: `scope` ("queue:emails", "key:customer:42"),
    `limit` (the name of the limit it counts against: for a key, the exact name or the
    prefix it matched), the limit's `max_starts` and `period_seconds`, and `used`."""

    scope: str
    limit: str
    max_starts: int
    period_seconds: float
    used: int


def read_rate_use(cur, limits) -> list[RateUse]:
    """The weight each scope used in its sliding window now (sql.RATE_USE), for every queue or
    type limit of `limits` (rate_limits_in_force's rows) and every key with a start in the
    longest period; [] without limits."""
    if not limits:
        return []
    cur.execute(sql.RATE_USE, {
        "rate_kinds": [r[0] for r in limits], "rate_names": [r[1] for r in limits],
        "rate_max": [r[2] for r in limits], "rate_periods": [r[3] for r in limits],
        "longest": max(r[3] for r in limits)})
    return [RateUse(s, n, int(m), float(p), int(u)) for s, n, m, p, u in cur.fetchall()]
