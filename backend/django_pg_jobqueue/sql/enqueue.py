"""New jobs, each with its `created` event (services/enqueuing.py): one job or many, with or
without a key's arbiter and a NOTIFY; the keys that jobs give up when they no longer count;
and the job-creation throttle's counter (services/throttling.py).
"""

# --- enqueue: new jobs with their `created` events (services/enqueuing.py) -------------------
# The channel every wake-up of idle workers is sent on (worker/listener.py LISTENs to it): an
# enqueue's, a retry's, a settle's, the stager's and a resumed queue's.
NOTIFY_CHANNEL = "jobs_enqueued"
# Every job is created with its `created` event in the same statement (the event feed and the
# dashboard start from it; with tracing on, its data carries the producer's trace context) and,
# with LISTEN_NOTIFY on, a NOTIFY per queue that PostgreSQL delivers at commit. All times are
# the transaction's clock, now(). The two statements share these pieces:
_INSERT_INTO_JOBS = """INSERT INTO jobs (type, queue, payload, status, priority, attempts,
                      max_attempts, timeout_seconds, available_at, created_at, updated_at,
                      progress_message, idempotency_key, request_fingerprint,
                      idempotency_expires_at, unique_key, unique_states, retry_policy,
                      concurrency_key, concurrency_key_limit, fairness_key, expires_at,
                      debounce_key)"""


# The payload's searchable text (the job list's `?search=`, SEARCH_TEXT_MATCHES) goes to the
# narrow side table job_search_text in the same statement, once: a payload never changes after
# enqueue, so the claim and the completion, which rewrite the job row, never rewrite its
# trigrams. An empty payload writes no row: its text, `{}`, is two characters, and a text
# search needs at least three (selectors.SEARCH_MIN_TEXT_CHARS), so it could never match.
_SEARCH_TEXT = """search_text AS (
    INSERT INTO job_search_text (job_id, payload_text)
    SELECT id, payload::text FROM ins WHERE payload <> '{{}}'::jsonb
)"""


def _created_events(trace_param: str) -> str:
    return f"""events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'created', 0, '',
           jsonb_build_object('queue', queue, 'priority', priority) || {trace_param}::jsonb, now()
    FROM ins
)"""


# One job (the common case: `enqueue()` from a view or a task): plain VALUES with scalar
# parameters, prepared once per connection.
_INSERT_ONE = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    VALUES (%s::text, %s::text, %s::jsonb, 'queued', %s::smallint, 0, %s::int, %s::int,
            COALESCE(%s::timestamptz, now() + make_interval(secs => %s::float8)), now(), now(),
            '', %s::text, %s::text, now() + make_interval(secs => %s::float8), %s::text,
            %s::jsonb, %s::jsonb, %s::text, %s::smallint, %s::text,
            COALESCE(%s::timestamptz, now() + make_interval(secs => %s::float8)), NULL)
    {on_conflict}
    RETURNING id, queue, priority, payload, available_at, created_at, expires_at
),
""" + _SEARCH_TEXT + """,
""" + _created_events("%s") + """
SELECT id, available_at, created_at, expires_at {notify} FROM ins
"""

# Many jobs: one array per column, expanded in parallel by unnest in input order (WITH
# ORDINALITY, whose order the planner knows: the input is never sorted). No document of rows
# is built for the server to parse, as a JSON one was: the arrays travel in binary
# (`%(name)b`), psycopg packing each element as its column's binary value, and the server
# parses only the payloads (each the JSON text validation encoded, cast to jsonb). A column
# no job of the batch sets comes as NULL, which unnest pads with NULLs to the length of
# `type` (always set): a batch of plain jobs sends five or six arrays, not nineteen, and a
# NULL column reads as `_INSERT_ONE`'s NULL parameter does (no run_at, a delay of 0, no key,
# no deadline). Each combination of columns sent (and of an int column's width: psycopg
# sends a timeout above 32,767 s as int4, below as int2) is its own prepared statement,
# psycopg keying them by their parameters' types, as ENQUEUE_ONE's are: an application's
# few shapes of batch, each prepared once per connection.
_INSERT_MANY = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    SELECT type, queue, payload, 'queued', priority, 0, max_attempts, timeout_seconds,
           COALESCE(run_at, now() + make_interval(secs => COALESCE(delay, 0))), now(), now(),
           '', idempotency_key, fingerprint, now() + make_interval(secs => key_ttl),
           unique_key, unique_states, retry_policy, concurrency_key, concurrency_key_limit,
           fairness_key, COALESCE(expires_at, now() + make_interval(secs => expires_in)), NULL
    FROM unnest(%(type)b::text[], %(queue)b::text[], %(payload)b::jsonb[],
                %(priority)b::smallint[], %(max_attempts)b::int[], %(timeout_seconds)b::int[],
                %(run_at)b::timestamptz[], %(delay)b::float8[], %(idempotency_key)b::text[],
                %(fingerprint)b::text[], %(key_ttl)b::float8[], %(unique_key)b::text[],
                %(unique_states)b::jsonb[], %(retry_policy)b::jsonb[],
                %(concurrency_key)b::text[], %(concurrency_key_limit)b::smallint[],
                %(fairness_key)b::text[], %(expires_at)b::timestamptz[], %(expires_in)b::float8[])
        WITH ORDINALITY AS input(type, queue, payload, priority, max_attempts, timeout_seconds,
                                 run_at, delay, idempotency_key, fingerprint, key_ttl,
                                 unique_key, unique_states, retry_policy, concurrency_key,
                                 concurrency_key_limit, fairness_key, expires_at, expires_in,
                                 n)
    ORDER BY n
    {on_conflict}
    RETURNING id, queue, priority, payload, idempotency_key, available_at, created_at,
              unique_key, expires_at
),
""" + _SEARCH_TEXT + """,
""" + _created_events("%(trace)s") + """
SELECT id, idempotency_key, available_at, created_at, unique_key, expires_at FROM ins
{notify_once}
ORDER BY id
"""
# sql.ENQUEUE_MANY's array parameters, in the statement's order: services/inserting.py sends
# one list (or NULL) under each name.
ENQUEUE_MANY_COLUMNS = ("type", "queue", "payload", "priority", "max_attempts",
                        "timeout_seconds", "run_at", "delay", "idempotency_key", "fingerprint",
                        "key_ttl", "unique_key", "unique_states", "retry_policy",
                        "concurrency_key", "concurrency_key_limit", "fairness_key", "expires_at",
                        "expires_in")

# Only a keyed insert (an idempotency key or a unique key) has an arbiter: ON CONFLICT makes
# every row a speculative insertion (an extra WAL record per row) even when its key is NULL.
# No target: both job_idempotency_key_unique and job_unique_key_unique arbitrate, so that a
# row that collides with either is left out (the caller then finds the job that holds it).
_ON_CONFLICT = "ON CONFLICT DO NOTHING"
_NOTIFY = f", pg_notify('{NOTIFY_CHANNEL}', queue)"
# A batch notifies once per queue, not once per row: PostgreSQL would fold the duplicates at
# commit anyway, but only after paying for each pg_notify call (a few us a row). An
# uncorrelated condition is evaluated once, before the rows are returned.
_NOTIFY_ONCE = f"""WHERE (SELECT count(pg_notify('{NOTIFY_CHANNEL}', queue))
       FROM (SELECT DISTINCT queue FROM ins) AS queues) >= 0"""
# Each statement in its four variants, by (keyed, notify): with or without the arbiter, with or
# without the NOTIFY (JOB_LISTEN_NOTIFY). services/enqueuing.py picks one per insert.
ENQUEUE_ONE = {
    (keyed, notify): _INSERT_ONE.format(on_conflict=_ON_CONFLICT if keyed else "",
                                        notify=_NOTIFY if notify else "")
    for keyed in (False, True) for notify in (False, True)
}
ENQUEUE_MANY = {
    (keyed, notify): _INSERT_MANY.format(on_conflict=_ON_CONFLICT if keyed else "",
                                         notify_once=_NOTIFY_ONCE if notify else "")
    for keyed in (False, True) for notify in (False, True)
}

# --- a debounced job: inserted, or the pending one of its key updated (services/inserting.py) --
# One statement, arbitrated by job_debounce_key_unique (queued rows with a debounce key): the
# first enqueue of a key inserts its job, due after the quiet period; each later one, while
# that job is still queued, replaces its payload (and its deadline) and pushes its start to
# now() + the period instead. Race-safe under any number of producers: PostgreSQL locks the
# conflicting row for the DO UPDATE, so concurrent enqueues of one key update it one after
# the other and the last to commit leaves its payload. A claim that took the row meanwhile
# (status 'running', its debounce key cleared by the claim) no longer conflicts: the DO
# UPDATE waits for it, finds the row gone from the index, and the enqueue inserts a new job.
# Inserted or updated is `xmax = 0` (a fresh row version has no updater). Only a new job gets
# a `created` event and a NOTIFY; an updated payload rewrites its search text.
_DEBOUNCED_ONE = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    VALUES (%(type)s::text, %(queue)s::text, %(payload)s::jsonb, 'queued',
            %(priority)s::smallint, 0, %(max_attempts)s::int, %(timeout_seconds)s::int,
            now() + make_interval(secs => %(period)s::float8), now(), now(), '', NULL, NULL,
            NULL, NULL, NULL, %(retry_policy)s::jsonb, %(concurrency_key)s::text,
            %(concurrency_key_limit)s::smallint, %(fairness_key)s::text,
            COALESCE(%(expires_at)s::timestamptz,
                     now() + make_interval(secs => %(expires_in)s::float8)),
            %(debounce_key)s::text)
    ON CONFLICT (debounce_key) WHERE debounce_key IS NOT NULL AND status = 'queued'
    DO UPDATE SET payload = EXCLUDED.payload, available_at = EXCLUDED.available_at,
                  expires_at = EXCLUDED.expires_at, updated_at = now()
    RETURNING id, queue, priority, payload, available_at, created_at, expires_at,
              xmax = 0 AS inserted
),
search_text AS (
    INSERT INTO job_search_text (job_id, payload_text)
    SELECT id, payload::text FROM ins WHERE payload <> '{{}}'::jsonb
    ON CONFLICT (job_id) DO UPDATE SET payload_text = EXCLUDED.payload_text
),
search_text_emptied AS (
    DELETE FROM job_search_text t USING ins
    WHERE t.job_id = ins.id AND NOT ins.inserted AND ins.payload = '{{}}'::jsonb
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'created', 0, '',
           jsonb_build_object('queue', queue, 'priority', priority, 'debounced', true)
               || %(trace)s::jsonb, now()
    FROM ins WHERE inserted
)
SELECT id, available_at, created_at, expires_at, inserted {notify} FROM ins
"""
_NOTIFY_IF_INSERTED = (f", CASE WHEN inserted THEN pg_notify('{NOTIFY_CHANNEL}', queue) END")
# By notify (JOB_LISTEN_NOTIFY): services/inserting.py picks one.
ENQUEUE_ONE_DEBOUNCED = {
    notify: _DEBOUNCED_ONE.format(notify=_NOTIFY_IF_INSERTED if notify else "")
    for notify in (False, True)
}

# --- unique jobs and expiring idempotency keys (services/enqueuing.py) ----------------------
# Before a keyed insert whose uniqueness has a period, or while idempotency keys expire: the
# jobs that still hold one of these keys but no longer count (enqueued longer ago than the new
# job's period; key past its idempotency_expires_at) give it up, so that the insert that
# follows takes it. Race-safe because the unique indexes still arbitrate the insert: two
# producers may both release the old holder, and then exactly one of them inserts. Guarded by
# the age in the statement itself, never by what the caller read. The old job keeps its
# history; only the key column is cleared (it counts no more, as documented).
RELEASE_UNIQUE_KEYS_IF_OLDER_THAN_PERIOD = """
UPDATE jobs j SET unique_key = NULL
FROM unnest(%(keys)s::text[], %(periods)s::float8[]) AS u(key, period)
WHERE j.unique_key = u.key AND (j.unique_states ? j.status)
  AND j.created_at <= now() - make_interval(secs => u.period)
"""
RELEASE_IDEMPOTENCY_KEYS_IF_EXPIRED = """
UPDATE jobs SET idempotency_key = NULL
WHERE idempotency_key = ANY(%(keys)s::text[]) AND idempotency_expires_at <= now()
"""

# --- the job-creation throttle's counter (services/throttling.py) ------------------------------
# One row per throttled key (scope and user), its sliding window in the row: `slices` holds the
# index of each slice still in the window (now // width, newest first), `counts` the jobs
# charged to it. One row, so that the check and the charge are one atomic statement: the INSERT
# of a new key, or ON CONFLICT the UPDATE of its row, which PostgreSQL runs with the row locked
# and its WHERE evaluated on the newest version: concurrent requests of one user, from any
# number of processes, queue on that lock, and each sees the others' charges, so together they
# never pass the rate. UNLOGGED (migration 0014): a crash empties the counts, as a restarted
# cache would; they are not replicated.
THROTTLE_RESERVE_IF_IT_FITS = """
INSERT INTO job_throttle_windows AS w (key, slices, counts, expires_at)
VALUES (%(key)s, ARRAY[%(slice)s::bigint], ARRAY[%(cost)s::integer],
        now() + make_interval(secs => %(keep_seconds)s))
ON CONFLICT (key) DO UPDATE SET
    (slices, counts) = (
        SELECT array_agg(s ORDER BY s DESC), array_agg(c ORDER BY s DESC)
        FROM (SELECT s, sum(c)::integer AS c
              FROM (SELECT s, c FROM unnest(w.slices, w.counts) AS live(s, c)
                    WHERE s >= %(oldest)s
                    UNION ALL SELECT %(slice)s::bigint, %(cost)s::integer) AS added
              GROUP BY s) AS merged),
    expires_at = EXCLUDED.expires_at
WHERE (SELECT COALESCE(sum(c), 0) FROM unnest(w.slices, w.counts) AS live(s, c)
       WHERE s >= %(oldest)s) + %(cost)s <= %(limit)s
RETURNING true
"""

# Give back what a reservation did not use (its request created fewer jobs than it reserved,
# or none): from the slice it was charged to, if that slice is still in the window.
THROTTLE_GIVE_BACK = """
UPDATE job_throttle_windows
SET counts[array_position(slices, %(slice)s::bigint)] =
        GREATEST(0, counts[array_position(slices, %(slice)s::bigint)] - %(jobs)s)
WHERE key = %(key)s AND %(slice)s::bigint = ANY (slices)
"""

# A refused request's window, for its Retry-After.
THROTTLE_WINDOW = "SELECT slices, counts FROM job_throttle_windows WHERE key = %(key)s"

# Rows whose every slice has left their window (none was charged for a whole period).
THROTTLE_PRUNE_EXPIRED = "DELETE FROM job_throttle_windows WHERE expires_at < now()"
