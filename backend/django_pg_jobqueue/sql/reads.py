"""Read models: a job's concurrency key holders and its dependency lists, the global event
feed, the queues that hold jobs, the job list's text search, a schedule's jobs, throughput,
a job's trace context, the /metrics figures, the dashboard's metrics, queue_status and the
health check (selectors.py, feed.py, metrics.py, tracing.py, management/commands).
"""

# --- a job's detail: its key's running jobs, what it waits for and what waits for it ---------
# Why a queued job waits (selectors.py): how many jobs with its concurrency key run now, and
# the first %(holders)s of them (by id), the jobs it waits for (the job page names them).
KEY_RUNNING_COUNT_AND_HOLDERS = """
SELECT count(*), coalesce((array_agg(id ORDER BY id))[1:%(holders)s], '{}')
FROM jobs WHERE status = 'running' AND concurrency_key = %(key)s
"""

# Why a queued job of a fair or aging queue waits (selectors.fairness_wait), one index probe
# each on jobs_fair_claim_order_idx: its queue's settings (its keys' weights among them), the
# database's now(), how many jobs
# of its fairness key (at its priority) come before it in due order (at most %(cap)s counted),
# and how many other keys of its queue have a job queued (at most %(cap)s counted).
FAIRNESS_WAIT = """
SELECT qs.fair, qs.aging_seconds, qs.aging_max_priority, qs.fairness_weights, now(),
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs WHERE status = 'queued' AND queue = %(queue)s
               AND fairness_key = %(key)s AND priority = %(priority)s
               AND (available_at, created_at, id) < (%(available_at)s, %(created_at)s, %(id)s)
            LIMIT %(cap)s) ahead),
       (SELECT count(*) FROM (
            SELECT DISTINCT fairness_key FROM jobs WHERE status = 'queued' AND queue = %(queue)s
               AND fairness_key IS NOT NULL AND fairness_key IS DISTINCT FROM %(key)s
            LIMIT %(cap)s) others)
FROM job_queue_settings qs WHERE qs.queue = %(queue)s
"""

# The job detail's two lists in one round trip: what it waits for ('after'), and the first
# %(limit)s of what waits for it ('before'). Each side walks one index of job_dependencies.
JOB_LINKS = """
(SELECT 'after', e.depends_on_id, d.type, d.status, e.on_failure
 FROM job_dependencies e LEFT JOIN jobs d ON d.id = e.depends_on_id
 WHERE e.job_id = %(id)s ORDER BY e.depends_on_id)
UNION ALL
(SELECT 'before', e.job_id, d.type, d.status, e.on_failure
 FROM job_dependencies e LEFT JOIN jobs d ON d.id = e.job_id
 WHERE e.depends_on_id = %(id)s ORDER BY e.job_id LIMIT %(limit)s)
"""

# --- the global event feed, in commit order ---------------------------------------------------
# Event ids come from a sequence, taken when the row is inserted, but transactions commit in
# another order: a poller that saw id 101 may never see 100 if 100 committed later. So each
# event also records its transaction id (job_events.tx_id, a column default), and the feed
# orders by (tx_id, id) and only returns events of transactions older than every transaction
# still in progress (the snapshot's xmin): any event not yet visible belongs to a transaction
# at or after xmin, so it sorts after everything returned. The price: one long write
# transaction on the server holds the feed back until it ends.
# The history is kept in two places (migration 0032): job_events' rows, and the outcomes kept
# on job rows (outcome_event_id, outcome_tx: the event's id and transaction id). The feed reads
# each on its own index, in order, up to the page's size, and merges the two; it does not read
# the view job_history, over whose UNION ALL PostgreSQL 15 sorts every kept outcome rather
# than walk its index when most jobs have one (docs/explanation/performance.md). A kept outcome
# written out into job_events (a retry) keeps its id and tx_id, in one statement: a snapshot
# sees it in one place or the other, at the same position.
# Each row: the event's id and tx_id (the cursor's position: feed.py, merged.events_feed).
# {stored} and {kept}: the cursor's condition on each side (EVENTS_AFTER_CURSOR or
# EVENTS_AFTER_ID_CURSOR, formatted with that side's columns).
_HORIZON = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
EVENTS_AFTER = """
SELECT id, tx_id FROM (
    (SELECT e.id, e.tx_id FROM job_events e
     WHERE e.tx_id < HORIZON AND {stored}
     ORDER BY e.tx_id, e.id LIMIT %(limit)s)
    UNION ALL
    (SELECT j.outcome_event_id, j.outcome_tx FROM jobs j
     WHERE j.outcome_tx < HORIZON AND {kept}
     ORDER BY j.outcome_tx, j.outcome_event_id LIMIT %(limit)s)
) AS feed
ORDER BY tx_id, id
LIMIT %(limit)s
""".replace("HORIZON", _HORIZON)
EVENTS_AFTER_CURSOR = "({tx}, {id}) > (%(after_tx)s, %(after)s)"
# The `after` event was pruned (or never existed): fall back to ids.
EVENTS_AFTER_ID_CURSOR = "{id} > %(after)s"
# The columns each side of EVENTS_AFTER formats its cursor with.
EVENTS_STORED_POSITION = {"tx": "e.tx_id", "id": "e.id"}
EVENTS_KEPT_POSITION = {"tx": "j.outcome_tx", "id": "j.outcome_event_id"}

# Where a feed starts (no cursor): the latest %(limit)s events in the same order and under the
# same horizon as EVENTS_AFTER, so that the position after them skips nothing still in
# flight (the newest ids, taken instead, could be ahead of a transaction that commits later).
# A backward walk of job_events_tx_order_idx and of jobs_outcome_feed_idx, merged, then the
# rows turned back to oldest first.
EVENTS_LATEST = """
SELECT latest.id, latest.tx_id FROM (
    (SELECT e.id, e.tx_id FROM job_events e
     WHERE e.tx_id < HORIZON
     ORDER BY e.tx_id DESC, e.id DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT j.outcome_event_id, j.outcome_tx FROM jobs j
     WHERE j.outcome_tx < HORIZON
     ORDER BY j.outcome_tx DESC, j.outcome_event_id DESC LIMIT %(limit)s)
    ORDER BY 2 DESC, 1 DESC
    LIMIT %(limit)s) latest
ORDER BY latest.tx_id, latest.id
""".replace("HORIZON", _HORIZON)

# The transaction id of the feed's `after` event (feed.py): the cursor's first half.
EVENT_TX_ID = "SELECT tx_id FROM job_history WHERE id = %s"

# --- the queues that hold jobs: every distinct `queue`, for the admin's filter ---------------
# A skip scan written out (PostgreSQL has none before 18's for this shape): each step asks
# jobs_queue_status_idx (queue, status) for the first queue name after the previous one, so
# the cost is one index probe per queue, not a pass over the jobs table.
JOB_QUEUE_NAMES = """
WITH RECURSIVE names(queue) AS (
    (SELECT queue FROM jobs ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM jobs j WHERE j.queue > n.queue ORDER BY j.queue LIMIT 1)
    FROM names n WHERE n.queue IS NOT NULL
)
SELECT queue FROM names WHERE queue IS NOT NULL
"""

# --- search: the job list's text search, over every job ------------------------------------
# The payload's JSON text or the last error contains the pattern, case-insensitively. The
# payload's text is not read from `jobs` but from the side table job_search_text, written once
# at enqueue (ENQUEUE_ONE's search_text, migration 0016), so that the claim and the completion,
# which rewrite the job row, no longer rewrite a trigram index of its payload. The subquery is
# served by job_search_text_trgm_idx and runs once (an InitPlan): its job ids become an array,
# and `id = ANY(array)` is an index condition on the primary key, so PostgreSQL answers the
# whole expression with a BitmapOr of the primary key and jobs_last_error_trgm_idx (the last
# error stays on `jobs`: that index is partial, a job without an error has no entry). Written
# `id IN (subquery)` instead, inside the OR it would be a hashed SubPlan tested on every row of
# a pass over `jobs`. It reads the jobs that hold the pattern's trigrams, not the table (a
# pattern needs 3 characters for that: selectors.SEARCH_MIN_TEXT_CHARS). Its pitfall: every
# payload that matches is gathered (an array of ids in memory) before the list's other filters
# apply, so text that most payloads hold costs a pass over job_search_text even when
# `status=failed` leaves few jobs (docs/explanation/performance.md). A job whose payload
# is `{}` has no row there and needs none: no 3-character pattern matches the 2 characters of
# its text. A boolean expression embedded in the list's ORM query (RawSQL), OR-ed with the id
# and key lookups there; positional parameters: the ILIKE pattern twice.
SEARCH_TEXT_MATCHES = (
    "(id = ANY (ARRAY(SELECT job_id FROM job_search_text WHERE payload_text ILIKE %s))"
    " OR last_error ILIKE %s)"
)

# --- the payload filter: jobs whose payload contains a JSON object --------------------------
# `?payload=customer_id:42` (arguments.check_payload_filter) as `payload @> '{"customer_id": 42}'`,
# read from the side table's copy of the payload: job_search_text_payload_idx (migration 0026),
# a GIN jsonb_path_ops index on `payload_text::jsonb`, serves the containment. Not an index on
# `jobs.payload`: every claim and completion rewrites the job row (status is indexed, so neither
# is a HOT update) and would write the payload's GIN entries again each time, as the trigram
# index did before migration 0016 (docs/explanation/performance.md); the side table's row is
# written once, at enqueue. A job whose payload is `{}` has no row and needs none: no filter
# names an empty object. AND-ed with the list's other filters as a semi-join (`id IN`), so the
# planner may start from either side. A boolean expression for the list's ORM query (RawSQL);
# its one parameter: the object's JSON text.
PAYLOAD_CONTAINS = (
    "id IN (SELECT job_id FROM job_search_text WHERE payload_text::jsonb @> %s::jsonb)"
)

# --- the filter bar's suggestions: distinct queues, types and concurrency keys by prefix -------
# A skip scan as JOB_QUEUE_NAMES, from the first value at or after the prefix: each step is one
# probe of the column's index (jobs_queue_status_idx, jobs_type_status_idx,
# jobs_concurrency_key_idx) for the next distinct value, so the cost is at most %(steps)s probes
# whatever the table holds. The walk stops after %(limit)s values with the prefix or %(steps)s
# values in all: under a collation other than "C" the values with a prefix need not be next to
# each other in the index's order (punctuation is weighed last), so it walks on past a value
# without it, up to the bound. For concurrency keys it also skips the keys of API users
# (`api:<user id>:...`, keys.py) in one probe, never returns one (the reader's own are looked
# up apart, under their scope), and keeps to the keyed rows of the partial index.
_VALUES_WALK = """
WITH RECURSIVE walk(value, step, found) AS (
    (SELECT {column}, 1, ({matches})::int FROM jobs
     WHERE {column} >= %(prefix)s{keyed} ORDER BY {column} LIMIT 1)
    UNION ALL
    SELECT next.value, w.step + 1, w.found + ({next_matches})::int
    FROM walk w, LATERAL (
        SELECT j.{column} AS value FROM jobs j
        WHERE j.{column} > {after}{keyed_j} ORDER BY j.{column} LIMIT 1
    ) next
    WHERE w.step < %(steps)s AND w.found < %(limit)s
)
SELECT value FROM walk WHERE {final_matches} ORDER BY value LIMIT %(limit)s
"""


def _values_walk(column: str) -> str:
    keyed = column == "concurrency_key"
    # A value the walk returns: it has the prefix and, for a key, it is not an API user's
    # unless the prefix names that user's scope.
    matches = ("starts_with({v}, %(prefix)s) AND (starts_with(%(prefix)s, 'api:') "
               "OR NOT starts_with({v}, 'api:'))" if keyed else "starts_with({v}, %(prefix)s)")
    return _VALUES_WALK.format(
        column=column,
        matches=matches.format(v=column),
        next_matches=matches.format(v="next.value"),
        final_matches=matches.format(v="value"),
        keyed=" AND concurrency_key IS NOT NULL" if keyed else "",
        keyed_j=" AND j.concurrency_key IS NOT NULL" if keyed else "",
        # Past every `api:` key in one probe: "api;" is the first text after them (";"
        # follows ":"), unless the prefix is in an API user's scope.
        after=("CASE WHEN starts_with(w.value, 'api:') AND NOT starts_with(%(prefix)s, 'api:')"
               " THEN 'api;' ELSE w.value END" if keyed else "w.value"),
    )


DISTINCT_VALUES = {column: _values_walk(column) for column in ("queue", "type", "concurrency_key")}

# --- periodic schedules: each schedule's jobs ------------------------------------------------
# A schedule's jobs, newest first: its ticks' and its run-now jobs (their idempotency keys are
# `periodic:<name>:<tick>` and `periodic:<name>:manual:<id>`). jobs_periodic_schedule_idx
# (migration 0012) holds (schedule name, id) for periodic jobs only, so this reads one
# schedule's entries (a backward scan that stops at the limit, or, when the planner expects few,
# a bitmap scan of them and a sort), never the other jobs. The predicate repeats the index's
# own (LIKE 'periodic:%') literally, so the planner may use the partial index.
SCHEDULE_JOBS = """
SELECT id, idempotency_key, status, attempts, max_attempts, created_at, started_at,
       finished_at, last_error
FROM jobs
WHERE idempotency_key LIKE 'periodic:%%' AND split_part(idempotency_key, ':', 2) = %s
ORDER BY split_part(idempotency_key, ':', 2) DESC, id DESC
LIMIT %s
"""

# The buckets of a chart's range (THROUGHPUT, LATENCY): `range` holds the first and last
# bucket's starts, %(buckets)s buckets of %(bucket)s ending with the one now falls in.
_LAST_BUCKET = "date_bin(%(bucket)s::interval, now(), timestamptz '2000-01-01')"
_FIRST_BUCKET = f"({_LAST_BUCKET} - (%(buckets)s - 1) * %(bucket)s::interval)"
_BUCKET_RANGE = f"""WITH range AS (
    SELECT {_FIRST_BUCKET} AS first_bucket, {_LAST_BUCKET} AS last_bucket
),
"""
# The finished jobs of the range, written as the expression itself, not as a column of
# `range`: the planner estimates a condition on a stable expression (now()) from the column's
# statistics, and so reads a recent range from jobs_status_finished_idx, where a join to
# `range` left it to guess (a third of the table) and, on PostgreSQL 15, scan the table.
_IN_RANGE = f"j.finished_at >= {_FIRST_BUCKET}"

# --- throughput: succeeded and failed per bucket, for a range, a queue and a type -------------
# Every bucket of the range is present (zeros too), oldest first; a bucket is named by its
# start. jobs_status_finished_idx (status, finished_at) serves the range: the cost is the
# range's finished jobs, not the table. NULL queue / type: every one.
THROUGHPUT = """
""" + _BUCKET_RANGE + """per_bucket AS (
    SELECT date_bin(%(bucket)s::interval, j.finished_at, timestamptz '2000-01-01') AS bucket,
           count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE j.status = 'failed') AS failed
    FROM jobs j
    WHERE j.status IN ('succeeded', 'failed') AND """ + _IN_RANGE + """
      AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
      AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
    GROUP BY 1
)
SELECT b.bucket, coalesce(p.succeeded, 0), coalesce(p.failed, 0)
FROM range r, generate_series(r.first_bucket, r.last_bucket, %(bucket)s::interval) AS b(bucket)
LEFT JOIN per_bucket p ON p.bucket = b.bucket
ORDER BY b.bucket
"""

# --- latency: wait and run time percentiles per bucket, for a range, a queue and a type ------
# Each finished job (succeeded or failed) that ran is one sample, in the bucket of its
# finished_at, from its last attempt: its wait, started_at - available_at (from when it was due
# to its claim, as its `claimed` event's wait_seconds says), and its run, finished_at -
# started_at. p50, p95 and p99 by percentile_cont (interpolated between samples), and the
# samples' count. Every bucket of the range is present (NULL percentiles without samples),
# oldest first, named by its start, as THROUGHPUT's. jobs_status_finished_idx (status,
# finished_at) serves the range: the cost is the range's finished jobs, not the table. NULL
# queue / type: every one. %(by_queue)s true: one series per queue that has samples in the
# range (its name first in each row), else one for all (NULL first).
LATENCY = """
""" + _BUCKET_RANGE + """samples AS (
    SELECT CASE WHEN %(by_queue)s THEN j.queue END AS series,
           date_bin(%(bucket)s::interval, j.finished_at, timestamptz '2000-01-01') AS bucket,
           greatest(extract(epoch FROM j.started_at - j.available_at), 0) AS wait,
           greatest(extract(epoch FROM j.finished_at - j.started_at), 0) AS run
    FROM jobs j
    WHERE j.status IN ('succeeded', 'failed') AND """ + _IN_RANGE + """
      AND j.started_at IS NOT NULL
      AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
      AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
),
per_bucket AS (
    SELECT series, bucket, count(*) AS jobs,
           percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY wait) AS wait,
           percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY run) AS run
    FROM samples GROUP BY series, bucket
),
series AS (
    SELECT DISTINCT series FROM per_bucket
    UNION SELECT NULL WHERE NOT %(by_queue)s
)
SELECT s.series, b.bucket, coalesce(p.jobs, 0),
       p.wait[1], p.wait[2], p.wait[3], p.run[1], p.run[2], p.run[3]
FROM series s CROSS JOIN range r
CROSS JOIN generate_series(r.first_bucket, r.last_bucket, %(bucket)s::interval) AS b(bucket)
LEFT JOIN per_bucket p ON p.series IS NOT DISTINCT FROM s.series AND p.bucket = b.bucket
ORDER BY s.series, b.bucket
"""

# --- tracing: the producer's trace context, read back from the job's created event --------
# (tracing.py). The first `created` event of the job, by its index (job_id, id).
CREATED_EVENT_TRACE = """
SELECT data FROM job_history WHERE job_id = %s AND kind = 'created' ORDER BY id LIMIT 1
"""

# --- metrics: the figures of GET /metrics (metrics.py), in one read-only transaction ------
# Its statement timeout, transaction-local (%s: milliseconds, as text).
STATEMENT_TIMEOUT_LOCAL = "SELECT set_config('statement_timeout', %s, true)"
METRICS_JOBS_BY_QUEUE_STATUS = "SELECT queue, status, count(*) FROM jobs GROUP BY queue, status"

METRICS_QUEUED_BY_QUEUE = """
SELECT queue, count(*), count(*) FILTER (WHERE available_at <= now()),
       extract(epoch FROM now() - min(available_at) FILTER (WHERE available_at <= now()))
FROM jobs WHERE status = 'queued' GROUP BY queue
"""

# Queued jobs a worker without a handler for their type gave back (a rolling deploy in
# progress, or a type no worker has): the queued rows only, like the depth above.
METRICS_WAITING_FOR_HANDLER = """
SELECT type, count(*) FROM jobs
WHERE status = 'queued' AND unknown_type_at IS NOT NULL GROUP BY type
"""

METRICS_WORKERS = """
SELECT id, hostname, pid, threads, queues, extract(epoch FROM now() - heartbeat_at),
       extract(epoch FROM now() - started_at), stuck_handlers, heartbeat_interval_seconds
FROM job_workers ORDER BY id
"""

METRICS_QUEUE_SETTINGS = "SELECT queue, paused, concurrency_limit FROM job_queue_settings ORDER BY queue"

# The claims of the window (`jobqueue_claimed_recent`, the claim wait's histogram), kind
# 'claimed': the claim writes no event (history v2, sql.attempt_start), so an attempt's start
# is read from the event of its outcome (data.started_at, data.wait_seconds: available_at ->
# start), or for an attempt still running from its job row; and from the `claimed` events
# written before, whose wait is in their data too. An attempt that started in the window
# counts once, wherever its start is kept (but twice in the window of an upgrade, for an
# attempt claimed before it and ended after); one that started before does not. Outcomes are
# read through the BRIN index on created_at (an attempt's outcome is written after its start,
# so one that started in the window ended in it); running jobs through jobs_running_idx.
_RECENT_STARTS = """
    SELECT job_id, 'claimed' AS kind, worker_id, (data->>'wait_seconds')::float8 AS wait,
           NULL::float8 AS run
    FROM job_history
    WHERE created_at > now() - make_interval(secs => %(window)s)
      AND data ? 'started_at'
      AND (data->>'started_at')::timestamptz > now() - make_interval(secs => %(window)s)
    UNION ALL
    SELECT job_id, kind, worker_id, (data->>'wait_seconds')::float8, NULL
    FROM job_history
    WHERE created_at > now() - make_interval(secs => %(window)s) AND kind = 'claimed'
    UNION ALL
    SELECT id, 'claimed', locked_by, extract(epoch FROM started_at - available_at), NULL
    FROM jobs
    WHERE status = 'running' AND started_at > now() - make_interval(secs => %(window)s)"""


def metrics_window(run_buckets, wait_buckets) -> str:
    """The recent events' counts and histograms by (type, kind), one cumulative bucket
    per bound of run_buckets / wait_buckets (numbers, written into the statement)."""
    def buckets(expr, bounds):
        return ", ".join(f"count(*) FILTER (WHERE {expr} <= {b})" for b in bounds)

    return f"""
WITH recent AS (
    SELECT job_id, kind, worker_id, NULL::float8 AS wait, (data->>'run_seconds')::float8 AS run
    FROM job_history
    WHERE created_at > now() - make_interval(secs => %(window)s)
      AND kind IN ('succeeded', 'failed', 'retry_scheduled', 'cancelled',
                   'lease_expired', 'retried', 'released', 'snoozed', 'expired')
    UNION ALL{_RECENT_STARTS}
),
measured AS (
    SELECT j.type, r.kind, r.worker_id, r.wait, r.run
    FROM recent r JOIN jobs j ON j.id = r.job_id
)
SELECT type, kind, count(*), count(*) FILTER (WHERE worker_id IS NOT NULL),
       count(run), coalesce(sum(run), 0), {buckets("run", run_buckets)},
       count(wait), coalesce(sum(wait), 0), {buckets("wait", wait_buckets)}
FROM measured GROUP BY type, kind ORDER BY type, kind
"""

# --- the dashboard's metrics (selectors.metrics, GET /api/v1/metrics/) --------------------
# Finished in the last 1, 5 and 15 minutes, run time mean and p95, retried jobs (over 15 min).
DASHBOARD_FINISHED = """
SELECT
    count(*) FILTER (WHERE status = 'succeeded' AND finished_at >= now() - interval '1 minute'),
    count(*) FILTER (WHERE status = 'failed' AND finished_at >= now() - interval '1 minute'),
    count(*) FILTER (WHERE status = 'succeeded' AND finished_at >= now() - interval '5 minutes'),
    count(*) FILTER (WHERE status = 'failed' AND finished_at >= now() - interval '5 minutes'),
    count(*) FILTER (WHERE status = 'succeeded'),
    count(*) FILTER (WHERE status = 'failed'),
    avg(extract(epoch FROM finished_at - started_at)) FILTER (WHERE started_at IS NOT NULL),
    percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at))
        FILTER (WHERE started_at IS NOT NULL),
    count(*) FILTER (WHERE attempts > 1),
    count(*)
FROM jobs
WHERE status IN ('succeeded', 'failed') AND finished_at >= now() - interval '15 minutes'
"""

# Succeeded and failed per minute over the last 15 minutes, every minute present (zeros too).
DASHBOARD_THROUGHPUT = """
WITH per_minute AS (
    SELECT date_trunc('minute', finished_at) AS minute,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed
    FROM jobs
    WHERE status IN ('succeeded', 'failed')
      AND finished_at >= date_trunc('minute', now()) - interval '14 minutes'
    GROUP BY 1
)
SELECT m.minute, coalesce(p.succeeded, 0), coalesce(p.failed, 0)
FROM generate_series(date_trunc('minute', now()) - interval '14 minutes',
                     date_trunc('minute', now()), interval '1 minute') AS m(minute)
LEFT JOIN per_minute p ON p.minute = m.minute
ORDER BY m.minute
"""

# The queued jobs: the age of the oldest one a worker may claim now (due, and its queue not
# paused: a paused queue's backlog waits on purpose and raises no alarm), and the queued
# states (states.State): available (due now, paused queues included: the jobs are due),
# scheduled (due later, never attempted), retryable (due later, attempted before).
DASHBOARD_QUEUED = """
SELECT extract(epoch FROM now() - min(j.available_at)
                   FILTER (WHERE j.available_at <= now() AND s.queue IS NULL)),
       count(*) FILTER (WHERE j.available_at <= now()),
       count(*) FILTER (WHERE j.available_at > now() AND j.attempts = 0),
       count(*) FILTER (WHERE j.available_at > now() AND j.attempts > 0)
FROM jobs j LEFT JOIN job_queue_settings s ON s.queue = j.queue AND s.paused
WHERE j.status = 'queued'
"""

# --- manage.py queue_status ------------------------------------------------------------------
# Events of one kind (%s) over the last 1, 5 and 15 minutes; a cancel counts only when a
# worker wrote it (a running job's), not an operator's cancel of a queued one.
QUEUE_STATUS_EVENTS_RECENT = """
SELECT count(*) FILTER (WHERE created_at > now() - interval '1 minute'),
       count(*) FILTER (WHERE created_at > now() - interval '5 minutes'),
       count(*)
FROM job_history
WHERE created_at > now() - interval '15 minutes' AND kind = %s
  AND (kind <> 'cancelled' OR worker_id IS NOT NULL)
"""
# The running jobs of each worker process, by the process id prefix of locked_by.
QUEUE_STATUS_RUNNING_BY_PROCESS = """
SELECT w.id, j.id, j.type, extract(epoch FROM now() - j.started_at)
FROM jobs j JOIN job_workers w ON j.locked_by LIKE w.id || '-%'
WHERE j.status = 'running'
ORDER BY w.id, j.started_at
"""

# --- the health check: has the migration table changed since the plan was last empty? ---------
# (selectors.pending_migrations) Applying or unapplying a migration adds or deletes a row.
MIGRATIONS_FINGERPRINT = "SELECT count(*), coalesce(max(id), 0) FROM django_migrations"

# --- JOB_READ_DATABASE: how far a streaming replica is behind its primary (db.read_target) ----
# Caught up (everything received is replayed): 0, however long ago the primary last wrote;
# otherwise the age of the last replayed transaction. Not in recovery (the alias names a
# primary): 0.
REPLICA_LAG = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0.0
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
    ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0.0)::float8
END
"""
