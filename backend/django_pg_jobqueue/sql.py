"""Every hand-written SQL statement of the package, each named and commented (tests/test_layout.py
finds any written elsewhere, migrations aside): the hot path first, then the rest.

Every statement that moves a job is a single statement: a guarded UPDATE and the INSERT of
its event, joined by a CTE, so the state change and its record commit together in one
round trip. Worker writes are fenced: they match `status = 'running' AND lease_token = <the
token this claim stamped>`, never the status alone, because after a lease expires the reaper
may requeue the job and another worker claim it: the row is `running` again, under a new
token. All times come from the database clock, `now()`.
"""
from .states import PREFETCH_WORKER_SUFFIX, RETRYABLE_BY_OPERATOR

JOB_COLUMNS = (
    "id, type, queue, payload, priority, attempts, max_attempts, lease_token, timeout_seconds, "
    "available_at, created_at, started_at, lease_expires_at, locked_by"
)

# Backoff for the attempt just spent: base * 2^attempts, with +/- jitter, capped. The same
# expression serves handler failures and expired leases.
BACKOFF_SECONDS = (
    "LEAST(%(retry_max)s::float8, %(retry_base)s::float8 * power(2, {attempts})"
    " * (1 + %(retry_jitter)s::float8 * (2 * random() - 1)))"
)

# The delay before the next attempt under a retry policy (retries.py): {policy} is the policy's
# JSON shape or NULL (the settings' exponential backoff above), {attempts} the attempts spent,
# {function_delay} what a function policy returned (SQL: a parameter or NULL; NULL falls back
# to the settings' backoff). A list of delays takes its attempts-th item (its last once spent);
# an exponential policy's unset fields take the settings' values, its factor 2. The exponent
# is capped so that a large factor cannot overflow float8 (LEAST caps the delay anyway).
def retry_delay_seconds(policy: str, attempts: str, function_delay: str) -> str:
    backoff = BACKOFF_SECONDS.format(attempts=attempts)
    return f"""CASE
             WHEN {policy} ? 'delays_seconds' THEN
                 ({policy}->'delays_seconds'->>(LEAST({attempts},
                     jsonb_array_length({policy}->'delays_seconds')) - 1))::float8
                 * (1 + COALESCE(({policy}->>'jitter')::float8, 0) * (2 * random() - 1))
             WHEN {policy} ? 'function' THEN COALESCE({function_delay}::float8, {backoff})
             WHEN {policy} IS NOT NULL THEN
                 LEAST(COALESCE(({policy}->>'max_seconds')::float8, %(retry_max)s::float8),
                       COALESCE(({policy}->>'base_seconds')::float8, %(retry_base)s::float8)
                       * power(COALESCE(({policy}->>'factor')::float8, 2), LEAST({attempts}, 300))
                       * (1 + COALESCE(({policy}->>'jitter')::float8, %(retry_jitter)s::float8)
                              * (2 * random() - 1)))
             ELSE {backoff} END"""


# Whether a policy gives up on the exception at once: it matches give_up_on, or the policy has
# retry_on and it matches none of it. %(error_classes)s: the names the exception answers to
# (retries.exception_names), NULL for a failure without one (then no rule applies).
POLICY_GIVES_UP = """COALESCE(%(error_classes)s::text[] IS NOT NULL AND (
               COALESCE({policy}->'give_up_on' ?| %(error_classes)s::text[], false)
               OR ({policy} ? 'retry_on'
                   AND NOT {policy}->'retry_on' ?| %(error_classes)s::text[])), false)"""

# What a failed attempt becomes (FAIL: the handler failed; REAP: the lease expired): a cancel
# requested meanwhile wins, then a retry while attempts are left, else failed for good.
# {job}: the jobs row's alias and a dot, or nothing; {retryable}: a condition joined to the
# attempts check, ending in AND (a retry only if it holds too: FAIL) or in OR (a requeue
# whatever the attempts: REAP's never-started jobs), or nothing. The same choice is written once for both statements.
NEXT_STATUS = (
    "CASE WHEN {job}cancel_requested_at IS NOT NULL THEN 'cancelled'\n"
    "                WHEN {retryable}{job}attempts < {job}max_attempts THEN 'queued'\n"
    "                ELSE 'failed' END AS next_status,"
)
# The columns that decision moves, in the UPDATE of jobs j FROM decision d (d.next_status,
# d.delay: the backoff above): a retry becomes due after its backoff, anything else finishes.
SET_NEXT_STATUS = """    SET status = d.next_status,
        available_at = CASE WHEN d.next_status = 'queued'
                            THEN now() + make_interval(secs => d.delay) ELSE j.available_at END,
        finished_at = CASE WHEN d.next_status = 'queued' THEN NULL ELSE now() END,
        unknown_type_at = NULL,  -- a worker knew its type: it no longer waits for one
"""

# --- claim ---------------------------------------------------------------------------------
# Pick runnable rows in claim order and lock them, skipping rows other claimers hold: no two
# workers ever get the same row, and none waits on another. The inner SELECT walks the partial
# index jobs_claim_order_idx in order and stops after LIMIT rows. Pitfall: the outer UPDATE
# must not re-evaluate the ORDER BY (it does not need to: the worker ids are assigned by the
# row number the picked CTE computed, in claim order, and the final SELECT orders by it).
# Paused queues are skipped inside the claim, and queues with a concurrency limit are claimed
# under a transaction-scoped advisory lock (see services/claiming.py), so limits hold across
# every worker process.
#
# Second pitfall: that plan depends on the planner believing there are many queued rows.
# With statistics older than the backlog (a table filled since its last ANALYZE, or never
# analysed: autovacuum off or behind), it estimates a handful, and a bitmap scan of every
# queued row plus a sort, or a scan of jobs_queue_status_idx plus a sort, costs less on paper
# than the ordered index scan: each claim then reads and sorts the whole backlog (measured:
# the drain at a fifth of its speed until ANALYZE). No index or CTE shape takes that choice
# away from the planner, so the claim runs under CLAIM_PLANNER_SETTINGS (services/claiming.py:
# pinned to a dispatcher's session, else transaction-local), and tests/test_plans.py EXPLAINs
# it on unanalysed tables.
CLAIM_PLANNER_SETTINGS = (
    # Sorting all candidates is never what the claim wants: the index gives the order.
    ("enable_sort", "off"),
    ("enable_bitmapscan", "off"),
    ("enable_seqscan", "off"),
    # The UPDATE finds the picked rows by primary key, one by one: a generic plan (prepared
    # statements) estimates LIMIT $n at a tenth of the table and would hash-join a seq scan.
    ("enable_hashjoin", "off"),
    ("enable_mergejoin", "off"),
    # Pitfall of the above: a disabled plan node still exists (the final ORDER BY n is a
    # sort), costed at 1e10, far past jit_above_cost: without this, each claim would spend a
    # second and a half compiling itself (measured).
    ("jit", "off"),
)
# One round trip: the settings (returning the values they replace), and for a claim under
# concurrency limits the advisory lock. Transaction-local: they end with the claim's own
# transaction; inside a caller's transaction, CLAIM_PLANNER_RESTORE puts the old values back.
CLAIM_PREAMBLE = "SELECT " + ", ".join(
    f"current_setting('{name}'), set_config('{name}', '{value}', true)"
    for name, value in CLAIM_PLANNER_SETTINGS)
CLAIM_PREAMBLE_LIMITED = CLAIM_PREAMBLE + ", pg_advisory_xact_lock(%(lock_key)s)"
# A worker's dispatcher sets them once for its session instead (services/claiming.py,
# pin_claim_planner_settings): its connection runs nothing but claims and releases, so the
# claim stays one round trip. Never behind a transaction pooler, whose server sessions other
# clients share.
CLAIM_PLANNER_SESSION = "SELECT " + ", ".join(
    f"set_config('{name}', '{value}', false)" for name, value in CLAIM_PLANNER_SETTINGS)
# Put back before the dispatcher gives its connection back to the worker's shared pool
# (db.worker_connection): the completer, renewer, reaper and pruner borrow from it too, and
# their statements must plan with the server's settings.
CLAIM_PLANNER_UNPIN = "SELECT " + ", ".join(
    f"set_config('{name}', (SELECT reset_val FROM pg_settings WHERE name = '{name}'), false)"
    for name, _ in CLAIM_PLANNER_SETTINGS)
CLAIM_PLANNER_RESTORE = "SELECT " + ", ".join(
    f"set_config('{name}', (%(values)s::text[])[{i + 1}], true)"
    for i, (name, _) in enumerate(CLAIM_PLANNER_SETTINGS))

_CLAIM_TAIL = """claimed AS (
    UPDATE jobs j
    SET status = 'running',
        locked_by = %(worker_ids)s::jsonb ->> (picked.n - 1)::int,  -- a JSON array of ids
        lease_token = gen_random_uuid(),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        started_at = now(),
        updated_at = now(),
        attempts = j.attempts + 1,
        progress_percent = NULL,
        progress_message = ''
    FROM picked
    WHERE j.id = picked.id
    RETURNING j.id, j.type, j.queue, j.payload, j.priority, j.attempts, j.max_attempts,
              j.lease_token, j.timeout_seconds, j.available_at, j.created_at, j.started_at,
              j.lease_expires_at, j.locked_by, picked.n
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, 'claimed', attempts, locked_by, '',
           jsonb_build_object('lease_token', lease_token,
                              'wait_seconds', round(extract(epoch FROM now() - available_at)::numeric, 4)),
           now()
    FROM claimed
)
SELECT * FROM claimed ORDER BY n  -- claim order: the i-th row went to the i-th worker id
"""

CLAIM = """
WITH picked AS (
    SELECT id, row_number() OVER () AS n
    FROM (
        SELECT id FROM jobs
        WHERE status = 'queued' AND available_at <= now() {queue_filter}
          AND concurrency_key IS NULL  -- keyed jobs: CLAIM_KEYED only
          AND NOT EXISTS (
              SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
        ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS locked
),
""" + _CLAIM_TAIL

# --- complete (batched; each row still fenced by its own lease token) -----------------------
# The NOTIFY that wakes producers waiting for outcomes (waiting.py): one per statement, on
# its own channel, the ids of the jobs that reached an outcome in its payload, comma-separated.
# A payload over NOTIFY's 8000 bytes would fail the statement: past OUTCOMES_PAYLOAD_CHARS it
# is "*", which wakes every waiter of each listening process to read its job again. {rows}:
# a relation with an `id` column, the jobs that finished; none sends nothing.
OUTCOMES_CHANNEL = "jobs_finished"
OUTCOMES_PAYLOAD_CHARS = 7900
OUTCOMES_NOTIFY = f"""SELECT pg_notify('{OUTCOMES_CHANNEL}',
               CASE WHEN length(ids) <= {OUTCOMES_PAYLOAD_CHARS} THEN ids ELSE '*' END)
    FROM (SELECT string_agg(id::text, ',') AS ids FROM {{rows}}) AS finished
    WHERE ids IS NOT NULL"""

# A cancel requested while the handler ran wins: the job ends cancelled, its result kept.
# The batch comes as one JSON array of [id, lease token, worker id, result] rows.
COMPLETE_MANY = """
WITH input AS (
    SELECT (e->>0)::bigint AS id, (e->>1)::uuid AS token, e->>2 AS worker_id, e->3 AS result
    FROM jsonb_array_elements(%(batch)s::jsonb) AS e  -- [[id, token, worker_id, result], ...]
),
free AS (  -- as RENEW_MANY: a row another transaction holds is skipped, and comes back busy
    SELECT j.id FROM jobs j JOIN input ON j.id = input.id
    WHERE j.status = 'running' AND j.lease_token = input.token
    ORDER BY j.id
    FOR NO KEY UPDATE OF j SKIP LOCKED
),
done AS (
    UPDATE jobs j
    SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'succeeded' ELSE 'cancelled' END,
        result = input.result,
        finished_at = now(), updated_at = now(),
        progress_percent = CASE WHEN j.cancel_requested_at IS NULL THEN 100 ELSE j.progress_percent END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
    FROM input JOIN free ON free.id = input.id
    WHERE j.id = input.id AND j.status = 'running' AND j.lease_token = input.token
    RETURNING j.id, j.status, j.attempts, input.token, input.worker_id,
              extract(epoch FROM now() - j.started_at) AS run_seconds, j.has_dependants
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, status, attempts, worker_id, '',
           jsonb_build_object('lease_token', token, 'run_seconds', round(run_seconds::numeric, 4)),
           now()
    FROM done
),
notified AS (  -- one NOTIFY for the batch, its finished ids in the payload (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="done") + """
)
-- run_seconds as float8: a numeric comes back a Decimal, whose loading doubled the cost of
-- reading this statement's rows in the worker (the event keeps its rounded numeric).
SELECT id, status, run_seconds::float8, has_dependants FROM done  -- dependants: settle them next
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
UNION ALL
SELECT j.id, 'busy', NULL, false FROM jobs j JOIN input ON j.id = input.id  -- retry these alone
WHERE j.status = 'running' AND j.lease_token = input.token AND j.id NOT IN (SELECT id FROM free)
"""

# --- fail: retry with backoff, or fail for good ----------------------------------------------
# The retry policy is the row's own (set at enqueue), else the type's (%(policy)s, sent by the
# worker from its registry), else the settings' (NULL). The policy may give up at once on
# the exception (POLICY_GIVES_UP); the event records which policy decided and why.
FAIL = """
WITH target AS (
    SELECT id, attempts, max_attempts, cancel_requested_at, started_at,
           COALESCE(retry_policy, %(policy)s::jsonb) AS policy
    FROM jobs
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
    FOR UPDATE
),
verdict AS (
    SELECT *, """ + POLICY_GIVES_UP.format(policy="policy") + """ AS gives_up
    FROM target
),
decision AS (
    SELECT id, attempts, started_at, policy, gives_up,
           """ + NEXT_STATUS.format(job="", retryable="NOT %(permanent)s AND NOT gives_up AND ") + """
           """ + retry_delay_seconds("policy", "attempts", "%(function_delay)s") + """ AS delay
    FROM verdict
),
upd AS (
    UPDATE jobs j
""" + SET_NEXT_STATUS + """        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
        last_error = %(error)s, last_traceback = %(traceback)s, updated_at = now()
    FROM decision d
    WHERE j.id = d.id
    RETURNING j.id, j.status, j.attempts, d.delay, d.policy, d.gives_up,
              extract(epoch FROM now() - d.started_at) AS run_seconds, j.has_dependants
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id,
           CASE status WHEN 'queued' THEN 'retry_scheduled' ELSE status END,
           attempts, %(worker_id)s, %(error)s,
           jsonb_build_object(
               'lease_token', %(token)s::text, 'permanent', %(permanent)s OR gives_up,
               'reason', CASE WHEN gives_up AND NOT %(permanent)s THEN 'retry_policy'
                              ELSE %(reason)s END,
               'traceback', %(traceback)s::text,  -- each attempt's; the row keeps the last only
               'run_seconds', round(run_seconds::numeric, 4),
               'retry_policy', policy,
               'delay_seconds', CASE WHEN status = 'queued' THEN round(delay::numeric, 3) END),
           now()
    FROM upd
),
notified AS (  -- an outcome (failed for good, cancelled) wakes its waiters (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status <> 'queued') AS o") + """
)
SELECT id, status, attempts, CASE WHEN status = 'queued' THEN delay END AS delay_seconds,
       gives_up, has_dependants
FROM upd
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""

# --- release / snooze: back to queued without charging the attempt ---------------------------
REQUEUE_UNCHARGED = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(worker_ids)s::text[])
        AS u(id, token, worker_id)
),
upd AS (
    UPDATE jobs j
    SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        attempts = CASE WHEN j.cancel_requested_at IS NULL THEN j.attempts - 1 ELSE j.attempts END,
        available_at = now() + make_interval(secs => %(delay_seconds)s),
        finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE now() END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM input
    WHERE j.id = input.id AND j.status = 'running' AND j.lease_token = input.token
    RETURNING j.id, j.status, j.attempts, input.token, input.worker_id
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, CASE status WHEN 'queued' THEN %(kind)s ELSE 'cancelled' END,
           CASE status WHEN 'queued' THEN attempts + 1 ELSE attempts END,
           worker_id, %(message)s,
           jsonb_build_object('lease_token', token, 'delay_seconds', %(delay_seconds)s), now()
    FROM upd
)
SELECT id, status FROM upd
"""

# --- release a job whose type this worker does not know (a rolling deploy) ------------------
# Back to queued without charging the attempt, fenced by the lease token like every worker
# write, for a worker that knows the type; unknown_type_at keeps when the first worker gave
# it back. Once that is %(give_up_seconds)s ago (NULL: never), the job fails for good instead,
# with %(error)s: no worker knew its type for that long (a removed type, a typo'd producer).
RELEASE_UNKNOWN_TYPE = """
WITH target AS (
    SELECT id, cancel_requested_at, COALESCE(unknown_type_at, now()) AS since
    FROM jobs
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
    FOR UPDATE
),
decision AS (
    SELECT id, since,
           CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN since <= now() - make_interval(secs => %(give_up_seconds)s::float8) THEN 'failed'
                ELSE 'queued' END AS next_status
    FROM target
),
upd AS (
    UPDATE jobs j
    SET status = d.next_status,
        attempts = CASE WHEN d.next_status = 'queued' THEN j.attempts - 1 ELSE j.attempts END,
        available_at = CASE WHEN d.next_status = 'queued'
                            THEN now() + make_interval(secs => %(delay_seconds)s::float8)
                            ELSE j.available_at END,
        finished_at = CASE WHEN d.next_status = 'queued' THEN NULL ELSE now() END,
        last_error = CASE WHEN d.next_status = 'failed' THEN %(error)s ELSE j.last_error END,
        unknown_type_at = d.since,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM decision d
    WHERE j.id = d.id
    RETURNING j.id, j.status, j.attempts, d.since
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, CASE status WHEN 'queued' THEN 'released' ELSE status END,
           CASE status WHEN 'queued' THEN attempts + 1 ELSE attempts END, %(worker_id)s,
           CASE status WHEN 'failed' THEN %(error)s ELSE %(message)s END,
           jsonb_build_object('lease_token', %(token)s::text, 'reason', 'unknown_type',
                              'unknown_type_at', since, 'permanent', status = 'failed',
                              'delay_seconds', CASE WHEN status = 'queued'
                                                    THEN %(delay_seconds)s::float8 END),
           now()
    FROM upd
)
SELECT id, status FROM upd
"""

# --- Django tasks' jobs typed by their task's path (migration 0009) --------------------------
# Finished jobs only: a worker of the previous release, still running while the migration
# does, never claims those, but it would fail a queued one whose type it does not know (queued
# and running `django_task` jobs keep that type and still run). Paths longer than a type
# holds keep `django_task`, as new ones do.
TASK_JOBS_TYPED_BY_PATH = """
UPDATE jobs SET type = payload->>'task'
WHERE type = 'django_task' AND status IN ('succeeded', 'failed', 'cancelled')
  AND jsonb_typeof(payload->'task') = 'string' AND length(payload->>'task') BETWEEN 1 AND 100
"""
# Backwards: every task's job as `django_task` again, which the previous release runs.
TASK_JOBS_TYPED_DJANGO_TASK = """
UPDATE jobs SET type = 'django_task'
WHERE jsonb_typeof(payload->'task') = 'string' AND type = payload->>'task'
  AND payload ? 'backend'
"""

# --- renew: extend every lease a worker process holds, in one statement ----------------------
# Rows that do not come back were lost (reaped, cancelled and finished, or reclaimed): the
# worker must stop their handlers. The row also tells whether a cancel was requested and
# whether the job's own timeout has passed, both on the database clock.
# A row another transaction holds a lock on (an enqueue naming the job in `after` until it
# commits, an operator's open transaction) is skipped, not waited for: one locked row must not
# hold up the renewal of every other lease of the process. It comes back `busy` (still this
# lease's, not renewed); the renewer then waits for it alone, with RENEW_MANY_WAITING under a
# lock_timeout.
RENEW_MANY = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS u(id, token)
),
free AS (
    SELECT j.id FROM jobs j JOIN input ON j.id = input.id
    WHERE j.status = 'running' AND j.lease_token = input.token
    ORDER BY j.id
    FOR NO KEY UPDATE OF j SKIP LOCKED
),
renewed AS (
    UPDATE jobs j
    SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s), updated_at = now()
    FROM free
    WHERE j.id = free.id
    RETURNING j.id,
              j.cancel_requested_at IS NOT NULL AS cancel_requested,
              (j.timeout_seconds IS NOT NULL
               AND now() >= j.started_at + make_interval(secs => j.timeout_seconds)) AS timed_out
)
SELECT id, cancel_requested, timed_out, false AS busy FROM renewed
UNION ALL
SELECT j.id, false, false, true FROM jobs j JOIN input ON j.id = input.id
WHERE j.status = 'running' AND j.lease_token = input.token AND j.id NOT IN (SELECT id FROM free)
"""
# The leases RENEW_MANY found locked, waited for (the caller bounds the wait with
# LOCK_TIMEOUT_LOCAL). While it waits it holds the row's place in the lock queue, so the reaper
# (SKIP LOCKED) cannot take the job between the other transaction's end and this renewal, even
# when the lease ran out meanwhile: the lease is fenced by its token, not by the clock.
RENEW_MANY_WAITING = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS u(id, token)
)
UPDATE jobs j
SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s), updated_at = now()
FROM input
WHERE j.id = input.id AND j.status = 'running' AND j.lease_token = input.token
RETURNING j.id,
          j.cancel_requested_at IS NOT NULL AS cancel_requested,
          (j.timeout_seconds IS NOT NULL
           AND now() >= j.started_at + make_interval(secs => j.timeout_seconds)) AS timed_out,
          false AS busy
"""
# The bound of the wait for a row lock in this transaction (RENEW_MANY_WAITING).
LOCK_TIMEOUT_LOCAL = "SELECT set_config('lock_timeout', %s, true)"

# --- progress and log: fenced like every worker write ----------------------------------------
PROGRESS = """
WITH upd AS (
    UPDATE jobs
    SET progress_percent = %(percent)s, progress_message = %(message)s, updated_at = now()
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
    RETURNING id, attempts
)
INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
SELECT id, 'progress', attempts, %(worker_id)s, %(message)s,
       jsonb_build_object('percent', %(percent)s), now()
FROM upd
RETURNING id
"""

# FOR SHARE: the job row's lock orders this event against the job's other events (which all
# come from statements that lock the row), so a job's event ids follow its commit order and
# a per-job feed polled with ?after=<id> never skips one.
LOG = """
INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
SELECT id, 'log', attempts, %(worker_id)s, %(message)s, %(data)s::jsonb, now()
FROM jobs
WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
FOR SHARE
RETURNING id
"""

# A refused worker write leaves a trace: the stale result is discarded, but recorded. One
# statement for every refusal of one kind a worker met at once (a renewal pass, a completion
# batch): after a stall, thousands of leases can be lost together, and an insert per job
# would keep the renewer from its next pass long enough to lose the next thousands (the
# soak's metastable churn). FOR SHARE as LOG, in id order (two such statements lock alike);
# a job deleted meanwhile is skipped.
LEASES_LOST = """
INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
SELECT j.id, 'lease_lost', l.attempt, l.worker_id, %(message)s::text,
       jsonb_build_object('lease_token', l.token, 'refused', %(action)s::text), now()
FROM (SELECT (e->>0)::bigint AS id, e->>1 AS token, e->>2 AS worker_id, (e->>3)::int AS attempt
      FROM jsonb_array_elements(%(batch)s::jsonb) AS e) l  -- [[id, token, worker_id, attempt]]
JOIN jobs j ON j.id = l.id
ORDER BY j.id
FOR SHARE OF j
"""

# --- reap: requeue (or fail) running jobs whose lease expired ---------------------------------
# SKIP LOCKED again, so several reapers (one per worker process) never block one another,
# and the guard is repeated in the UPDATE so that a lease renewed meanwhile is left alone.
#
# A job whose lease expired while it was still owned by a prefetch buffer (`locked_by` ends
# in PREFETCH_WORKER_SUFFIX: no executor adopted it, ADOPT_PREFETCHED_IF_RUNNING) never
# started: its process died with it in the buffer. It goes back to queued uncharged (its
# attempt given back, due at once, no error recorded, a `released` event with reason
# `unstarted`), never failed; a cancel requested meanwhile still wins. Read from the row this
# statement locked, so an adoption racing the reaper either committed first (the job started:
# charged as usual) or finds the job no longer running (and its handler never runs).
_UNSTARTED = f"e.locked_by LIKE '%%{PREFETCH_WORKER_SUFFIX}'"
REAP = """
WITH expired AS (
    SELECT id, locked_by, lease_token, lease_expires_at
    FROM jobs
    WHERE status = 'running' AND lease_expires_at < now()
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
decision AS (
    SELECT e.id, e.locked_by, e.lease_token, e.lease_expires_at,
           """ + _UNSTARTED + """ AS unstarted,
           """ + NEXT_STATUS.format(job="j.", retryable=_UNSTARTED + " OR ") + """
           CASE WHEN """ + _UNSTARTED + """ THEN 0
                ELSE """ + retry_delay_seconds("j.retry_policy", "j.attempts", "NULL") + """ END AS delay
    FROM expired e JOIN jobs j ON j.id = e.id
),
upd AS (
    UPDATE jobs j
""" + SET_NEXT_STATUS + """        attempts = CASE WHEN d.unstarted AND d.next_status = 'queued'
                        THEN j.attempts - 1 ELSE j.attempts END,
        last_error = CASE WHEN d.unstarted AND d.next_status = 'queued' THEN j.last_error
                          ELSE 'lease expired: worker ' || d.locked_by || ' stopped renewing it'
                     END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM decision d
    WHERE j.id = d.id AND j.status = 'running' AND j.lease_expires_at < now()
    RETURNING j.id, j.status, j.attempts, d.locked_by, d.lease_token, d.delay, j.last_error,
              j.type, j.queue, j.payload, j.priority, j.max_attempts, j.timeout_seconds,
              j.available_at, j.created_at, j.started_at, d.lease_expires_at,
              d.unstarted AND j.status = 'queued' AS released
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, 'released', attempts + 1, locked_by,
           'lease expired while prefetched, before any thread started it; requeued uncharged',
           jsonb_build_object('lease_token', lease_token, 'reason', 'unstarted'), now()
    FROM upd WHERE released
    UNION ALL
    SELECT id, 'lease_expired', attempts, locked_by,
           'lease expired; ' || CASE status WHEN 'queued' THEN 'requeued' ELSE status END,
           jsonb_build_object('lease_token', lease_token, 'next_status', status,
                              'delay_seconds', CASE WHEN status = 'queued'
                                                    THEN round(delay::numeric, 3) END),
           now()
    FROM upd WHERE NOT released
)
SELECT id, CASE WHEN released THEN 'released' ELSE status END, locked_by, last_error,
       -- the attempt that expired, as claimed (services.ClaimedJob's fields, in its order),
       -- for the error hooks
       id, type, queue, payload, priority, attempts, max_attempts, lease_token, timeout_seconds,
       available_at, created_at, started_at, lease_expires_at, locked_by
FROM upd
"""

NOTIFY_CHANNEL = "jobs_enqueued"
# One queue's wake-up outside an enqueue or a retry (services.resume_queue), at commit
# (%s: the channel, the queue).
NOTIFY_QUEUE = "SELECT pg_notify(%s, %s)"

# --- enqueue: new jobs with their `created` events (services/enqueuing.py) -------------------
# Every job is created with its `created` event in the same statement (the event feed and the
# dashboard start from it; with tracing on, its data carries the producer's trace context) and,
# with LISTEN_NOTIFY on, a NOTIFY per queue that PostgreSQL delivers at commit. All times are
# the transaction's clock, now(). The two statements share these pieces:
_INSERT_INTO_JOBS = """INSERT INTO jobs (type, queue, payload, status, priority, attempts,
                      max_attempts, timeout_seconds, available_at, created_at, updated_at,
                      progress_message, idempotency_key, request_fingerprint,
                      idempotency_expires_at, unique_key, unique_states, retry_policy,
                      concurrency_key, concurrency_key_limit)"""


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
            %s::jsonb, %s::jsonb, %s::text, %s::smallint)
    {on_conflict}
    RETURNING id, queue, priority, payload, available_at, created_at
),
""" + _SEARCH_TEXT + """,
""" + _created_events("%s") + """
SELECT id, available_at, created_at {notify} FROM ins
"""

# Many jobs: one JSON array of row objects (a key left out is NULL), expanded in input order.
# One jsonb parameter is far cheaper to send than ten parallel arrays (psycopg dumps arrays
# element by element in Python), and the payloads travel as JSON inside it, encoded once.
_INSERT_MANY = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    SELECT type, queue, payload, 'queued', priority, 0, max_attempts, timeout_seconds,
           COALESCE(run_at, now() + make_interval(secs => COALESCE(delay, 0))), now(), now(),
           '', idempotency_key, fingerprint, now() + make_interval(secs => key_ttl),
           unique_key, unique_states, retry_policy, concurrency_key, concurrency_key_limit
    FROM ROWS FROM (jsonb_to_recordset(%(rows)s::jsonb) AS (
            type text, queue text, payload jsonb, priority smallint, max_attempts int,
            timeout_seconds int, run_at timestamptz, delay float8, idempotency_key text,
            fingerprint text, key_ttl float8, unique_key text, unique_states jsonb,
            retry_policy jsonb, concurrency_key text, concurrency_key_limit smallint))
        WITH ORDINALITY AS input(type, queue, payload, priority, max_attempts, timeout_seconds,
                                 run_at, delay, idempotency_key, fingerprint, key_ttl,
                                 unique_key, unique_states, retry_policy, concurrency_key,
                                 concurrency_key_limit, n)
    ORDER BY n
    {on_conflict}
    RETURNING id, queue, priority, payload, idempotency_key, available_at, created_at,
              unique_key
),
""" + _SEARCH_TEXT + """,
""" + _created_events("%(trace)s") + """
SELECT id, idempotency_key, available_at, created_at, unique_key FROM ins
{notify_once}
ORDER BY id
"""

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

# --- job dependencies (services/dependencies.py) ----------------------------------------------
# A job enqueued after=[...] is inserted queued, then, in the same transaction (no worker can
# see it before), made `waiting` with its edges; the claim reads queued rows only, so waiting
# jobs cost the claim nothing. Then each dependency's row is locked (and marked has_dependants)
# in id order, its status read: that lock orders the enqueue against the dependency's
# completion. Either the completion commits first (the enqueue then reads it succeeded and
# unblocks the job at once), or it waits for the enqueue to commit and then sees
# has_dependants, so its worker settles the dependants in a statement that starts after that
# commit and sees the new edges. No wake-up is lost.
# Why not FOR KEY SHARE, which a worker's writes would not wait for: the completion would then
# not wait for the enqueue, and one committed between the enqueue's read and its commit would
# settle before the edges were visible: the job would wait for the reaper's sweep. So the lock
# stays, and is made cheap to hold instead: taken last (after the edges are written), in id
# order, over at most JOB_MAX_AFTER_PER_BATCH rows; and a worker's renewal and completion skip
# a locked row rather than wait for it (RENEW_MANY, COMPLETE_MANY).
LOCK_DEPENDENCIES = """
WITH locked AS (
    SELECT id FROM jobs WHERE id = ANY(%(ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE
)
UPDATE jobs j SET has_dependants = true FROM locked WHERE j.id = locked.id
RETURNING j.id, j.status
"""
# The edges of the new jobs (%(edges)s: a JSON array of {job_id, depends_on_id, on_failure}),
# each new job moved from queued to waiting, with its `blocked` event.
BLOCK_JOBS = """
WITH edges AS (
    INSERT INTO job_dependencies (job_id, depends_on_id, on_failure)
    SELECT e.job_id, e.depends_on_id, e.on_failure
    FROM jsonb_to_recordset(%(edges)s::jsonb) AS e(job_id bigint, depends_on_id bigint, on_failure text)
    ON CONFLICT DO NOTHING
    RETURNING job_id, depends_on_id
),
blocked AS (
    UPDATE jobs j SET status = 'waiting', updated_at = now()
    WHERE j.id IN (SELECT job_id FROM edges) AND j.status = 'queued'
    RETURNING j.id, j.attempts
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT b.id, 'blocked', b.attempts, 'waiting for ' || w.names, jsonb_build_object('after', w.ids), now()
    FROM blocked b
    CROSS JOIN LATERAL (
        SELECT string_agg('job ' || e.depends_on_id, ', ' ORDER BY e.depends_on_id) AS names,
               jsonb_agg(e.depends_on_id ORDER BY e.depends_on_id) AS ids
        FROM edges e WHERE e.job_id = b.id) AS w
)
SELECT id FROM blocked
"""
# Settle waiting jobs: unblock (waiting -> queued, runnable now or at its own later
# available_at) each one whose dependencies all succeeded (or ended failed or cancelled, for
# an edge with on_failure 'run'); cancel each one that waits, with on_failure 'cancel', for a
# job that failed for good, was cancelled or no longer exists, the reason in its `cancelled`
# event. Set-based and idempotent: the guard status = 'waiting' is re-checked on the locked
# row, so two settles of one job (two dependencies finishing at once, the sweep) move it once.
# {candidates}: SETTLE_BY_DEPENDENCY or SETTLE_SWEEP, a query of `id`s of jobs to consider.
SETTLE_WAITING = """
WITH candidates AS ({candidates}),
verdict AS (
    SELECT e.job_id AS id,
           bool_and(coalesce(d.status = 'succeeded', false)
                    OR (e.on_failure = 'run'
                        AND (d.id IS NULL OR d.status IN ('failed', 'cancelled')))) AS ready,
           min(e.depends_on_id) FILTER (
               WHERE e.on_failure = 'cancel'
                 AND (d.id IS NULL OR d.status IN ('failed', 'cancelled'))) AS cause
    FROM job_dependencies e
    LEFT JOIN jobs d ON d.id = e.depends_on_id
    WHERE e.job_id IN (SELECT id FROM candidates)
    GROUP BY e.job_id
),
settled AS (
    UPDATE jobs j
    SET status = CASE WHEN v.cause IS NULL THEN 'queued' ELSE 'cancelled' END,
        finished_at = CASE WHEN v.cause IS NULL THEN NULL ELSE now() END,
        available_at = GREATEST(j.available_at, now()),
        updated_at = now()
    FROM verdict v
    WHERE j.id = v.id AND j.status = 'waiting' AND (v.cause IS NOT NULL OR v.ready)
    RETURNING j.id, j.status, j.attempts, j.queue, v.cause
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT s.id, CASE s.status WHEN 'queued' THEN 'unblocked' ELSE 'cancelled' END, s.attempts,
           CASE WHEN s.status = 'queued' THEN 'every job it waited for finished'
                ELSE 'cancelled: job ' || s.cause || ', which it waited for, '
                     || CASE c.status WHEN 'failed' THEN 'failed'
                                      WHEN 'cancelled' THEN 'was cancelled'
                                      ELSE 'no longer exists' END
           END,
           CASE WHEN s.status = 'queued' THEN '{{}}'::jsonb
                ELSE jsonb_build_object('reason', 'dependency_' || coalesce(c.status, 'missing'),
                                        'dependency_id', s.cause) END,
           now()
    FROM settled s LEFT JOIN jobs c ON c.id = s.cause
),
notified AS (
    SELECT count(pg_notify('""" + NOTIFY_CHANNEL + """', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM settled WHERE status = 'queued') AS q
    WHERE %(notify)s
)
SELECT s.id, s.status, (SELECT queues FROM notified) FROM settled s ORDER BY s.id
"""
# Why a retry refused this job (services.retry): the first job it waits for, and must not
# outlive (on_failure 'cancel'), that failed, was cancelled or is gone (status NULL).
DEPENDENCY_NOT_SUCCEEDING = """
SELECT e.depends_on_id, d.status FROM job_dependencies e LEFT JOIN jobs d ON d.id = e.depends_on_id
WHERE e.job_id = %s AND e.on_failure = 'cancel' AND (d.id IS NULL OR d.status IN ('failed', 'cancelled'))
ORDER BY e.depends_on_id LIMIT 1
"""
# These waiting jobs (%(ids)s), just retried into waiting: a dependency that finished while
# the retry ran is settled at once rather than at the next sweep.
SETTLE_THESE = "SELECT unnest(%(ids)s::bigint[]) AS id"
# The waiting dependants of these jobs (%(ids)s), after they finished.
SETTLE_BY_DEPENDENCY = (
    "SELECT job_id AS id FROM job_dependencies WHERE depends_on_id = ANY(%(ids)s::bigint[])"
)
# The sweep (each worker's reaper): waiting jobs that can be settled now (every job they wait
# for finished or is gone, or one they must not outlive failed or was cancelled), oldest
# first, up to %(limit)s: exactly those SETTLE_WAITING moves, so a full batch always makes
# progress. It catches what no completion settled: a worker that died between its completion
# and the settle, a job the reaper failed or a shutdown cancelled. Walks jobs_waiting_idx:
# its cost is the waiting jobs, not the table.
SETTLE_SWEEP = """
    SELECT w.id FROM jobs w
    WHERE w.status = 'waiting'
      AND (NOT EXISTS (
               SELECT 1 FROM job_dependencies e JOIN jobs d ON d.id = e.depends_on_id
               WHERE e.job_id = w.id AND d.status NOT IN ('succeeded', 'failed', 'cancelled'))
           OR EXISTS (
               SELECT 1 FROM job_dependencies e LEFT JOIN jobs d ON d.id = e.depends_on_id
               WHERE e.job_id = w.id AND e.on_failure = 'cancel'
                 AND (d.id IS NULL OR d.status IN ('failed', 'cancelled'))))
    ORDER BY w.id LIMIT %(limit)s
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

# --- claim under global concurrency limits -------------------------------------------------
# Used instead of CLAIM while any queue (job_queue_settings.concurrency_limit) or job type
# (@handler(concurrency=N)) has a limit. Counting running jobs and claiming more must not
# interleave between claimers, or two processes that each see 1 of 2 slots taken would both
# claim; so services/claiming.py runs this after pg_advisory_xact_lock(CLAIM_LIMIT_LOCK_KEY) in
# the same short transaction: READ COMMITTED gives this statement a snapshot taken after the
# lock, which sees every claim committed before it. Pitfall: the candidate window is locked
# (SKIP LOCKED) for the transaction's few milliseconds, so it is kept to a bounded size.
CLAIM_LIMIT_LOCK_KEY = 7_300_416_001

CLAIM_LIMITED = """
WITH limits AS (
    SELECT * FROM unnest(%(limit_kinds)s::text[], %(limit_names)s::text[], %(limit_values)s::int[])
        AS l(kind, name, max_running)
),
running AS (
    SELECT l.kind, l.name, l.max_running,
           (SELECT count(*) FROM jobs r
             WHERE r.status = 'running'
               AND CASE l.kind WHEN 'queue' THEN r.queue = l.name ELSE r.type = l.name END) AS n
    FROM limits l
),
candidates AS (
    SELECT id, queue, type, priority, available_at, created_at FROM jobs
    WHERE status = 'queued' AND available_at <= now() {queue_filter}
      AND concurrency_key IS NULL  -- keyed jobs: CLAIM_KEYED only
      AND NOT EXISTS (
          SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
      AND NOT EXISTS (
          SELECT 1 FROM running WHERE running.n >= running.max_running
             AND CASE running.kind WHEN 'queue' THEN running.name = jobs.queue
                                   ELSE running.name = jobs.type END)
    ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
    LIMIT %(window)s
    FOR UPDATE SKIP LOCKED
),
ranked AS (
    SELECT c.*,
           row_number() OVER (PARTITION BY c.queue ORDER BY c.priority DESC, c.available_at,
                                                            c.created_at, c.id) AS queue_rank,
           row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.available_at,
                                                           c.created_at, c.id) AS type_rank
    FROM candidates c
),
picked AS (
    SELECT id, row_number() OVER (ORDER BY priority DESC, available_at, created_at, id) AS n
    FROM (
        SELECT r.* FROM ranked r
        LEFT JOIN running q ON q.kind = 'queue' AND q.name = r.queue
        LEFT JOIN running t ON t.kind = 'type' AND t.name = r.type
        WHERE (q.max_running IS NULL OR q.n + r.queue_rank <= q.max_running)
          AND (t.max_running IS NULL OR t.n + r.type_rank <= t.max_running)
        ORDER BY r.priority DESC, r.available_at, r.created_at, r.id
        LIMIT %(limit)s
    ) allowed
),
""" + _CLAIM_TAIL

# --- claim of jobs with a concurrency key ----------------------------------------------------
# A job with a concurrency key runs only while fewer than its concurrency_key_limit jobs with
# that key run, across every worker process and host. The running jobs are the count: every
# way out of running (complete, fail, release, snooze, the reaper after a lease expired, a
# cancel the worker carries out) frees the slot by changing the status, with no counter to
# keep in step. CLAIM and CLAIM_LIMITED never take a keyed job; while keyed jobs wait,
# services/claiming.py claims them first, in a short transaction of two statements:
#
# 1. CLAIM_KEYED_LOCK_KEYS: the keys with a due job waiting and a free slot, in claim order
#    (jobs of a full key are passed over, so a key with a long backlog does not hold back the
#    keys behind it), each locked with pg_try_advisory_xact_lock in the two-int space
#    (KEYED_LOCK_CLASS, hashtext(key)): a key another claimer is claiming right now is
#    skipped, not waited for, so no claimer ever waits on another and no deadlock can form.
# 2. CLAIM_KEYED: only for the keys it holds. Its snapshot is taken after the locks: it sees
#    every claim of those keys committed before (a claimer releases its key locks only after
#    its commit is visible), and no claim of them can commit until this transaction ends. So
#    counting each key's running jobs and claiming up to the limit cannot interleave with
#    another claim of the same key: no read-then-write race, whatever the number of workers.
#    Several jobs of one key in one batch are ranked within the key (key_rank): the n-th is
#    taken only if running + n <= its limit. Under queue or type limits the transaction first
#    takes CLAIM_LIMIT_LOCK_KEY, as CLAIM_LIMITED does, and the same queue and type ranks apply.
# A hash collision between two keys only makes their claims take turns; their limits stay apart.
KEYED_LOCK_CLASS = 730_041_600

CLAIM_KEYED_LOCK_KEYS = """
WITH running AS (
    SELECT concurrency_key AS k, count(*) AS n FROM jobs
    WHERE status = 'running' AND concurrency_key IS NOT NULL
    GROUP BY concurrency_key
),
waiting AS (
    SELECT concurrency_key AS k FROM jobs
    WHERE status = 'queued' AND concurrency_key IS NOT NULL AND available_at <= now() {queue_filter}
      AND NOT EXISTS (
          SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
      AND NOT EXISTS (
          SELECT 1 FROM running WHERE running.k = jobs.concurrency_key
             AND running.n >= jobs.concurrency_key_limit)
    ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
    LIMIT %(window)s
),
keys AS (SELECT DISTINCT k FROM waiting OFFSET 0)  -- OFFSET 0: each key tried once, here
SELECT ARRAY(SELECT k FROM keys WHERE pg_try_advisory_xact_lock(%(lock_class)s::int, hashtext(k)))
"""

CLAIM_KEYED = """
WITH running AS (
    SELECT k, (SELECT count(*) FROM jobs r
               WHERE r.status = 'running' AND r.concurrency_key = k) AS n
    FROM unnest(%(keys)s::text[]) AS k
),
limits AS (
    SELECT * FROM unnest(%(limit_kinds)s::text[], %(limit_names)s::text[], %(limit_values)s::int[])
        AS l(kind, name, max_running)
),
limited_running AS (
    SELECT l.kind, l.name, l.max_running,
           (SELECT count(*) FROM jobs r
             WHERE r.status = 'running'
               AND CASE l.kind WHEN 'queue' THEN r.queue = l.name ELSE r.type = l.name END) AS n
    FROM limits l
),
candidates AS (
    SELECT c.* FROM running, LATERAL (
        SELECT id, queue, type, concurrency_key, concurrency_key_limit, priority, available_at,
               created_at
        FROM jobs
        WHERE status = 'queued' AND concurrency_key = running.k AND available_at <= now()
          {queue_filter}
          AND NOT EXISTS (
              SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
        ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) c
),
ranked AS (
    SELECT c.*,
           row_number() OVER (PARTITION BY c.concurrency_key
                              ORDER BY c.priority DESC, c.available_at, c.created_at, c.id) AS key_rank,
           row_number() OVER (PARTITION BY c.queue ORDER BY c.priority DESC, c.available_at,
                                                            c.created_at, c.id) AS queue_rank,
           row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.available_at,
                                                           c.created_at, c.id) AS type_rank
    FROM candidates c
),
picked AS (
    SELECT id, row_number() OVER (ORDER BY priority DESC, available_at, created_at, id) AS n
    FROM (
        SELECT r.* FROM ranked r
        JOIN running k ON k.k = r.concurrency_key
        LEFT JOIN limited_running q ON q.kind = 'queue' AND q.name = r.queue
        LEFT JOIN limited_running t ON t.kind = 'type' AND t.name = r.type
        WHERE k.n + r.key_rank <= r.concurrency_key_limit
          AND (q.max_running IS NULL OR q.n + r.queue_rank <= q.max_running)
          AND (t.max_running IS NULL OR t.n + r.type_rank <= t.max_running)
        ORDER BY r.priority DESC, r.available_at, r.created_at, r.id
        LIMIT %(limit)s
    ) allowed
),
""" + _CLAIM_TAIL

# Whether any keyed job waits at all (services/claiming.py asks at most once a second per
# process; while none does, claims run CLAIM alone, exactly as without the feature).

# A job's detail: how many jobs of its key run now (selectors.py: why a queued job waits).
# How many jobs with a concurrency key run now, and the first %(holders)s of them (by id): the
# jobs a queued job of that key waits for (the job page names them).
KEY_RUNNING_COUNT_AND_HOLDERS = """
SELECT count(*), coalesce((array_agg(id ORDER BY id))[1:%(holders)s], '{}')
FROM jobs WHERE status = 'running' AND concurrency_key = %(key)s
"""


# --- the global event feed, in commit order ---------------------------------------------------
# Event ids come from a sequence, taken when the row is inserted, but transactions commit in
# another order: a poller that saw id 101 may never see 100 if 100 committed later. So each
# event also records its transaction id (job_events.tx_id, a column default), and the feed
# orders by (tx_id, id) and only returns events of transactions older than every transaction
# still in progress (the snapshot's xmin): any event not yet visible belongs to a transaction
# at or after xmin, so it sorts after everything returned. The price: one long write
# transaction on the server holds the feed back until it ends.
EVENTS_AFTER = """
SELECT e.id FROM job_events e
WHERE e.tx_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
  AND {cursor}
  {job_filter}
ORDER BY e.tx_id, e.id
LIMIT %(limit)s
"""
EVENTS_AFTER_CURSOR = "(e.tx_id, e.id) > (%(after_tx)s, %(after)s)"
# The `after` event was pruned (or never existed): fall back to ids.
EVENTS_AFTER_ID_CURSOR = "e.id > %(after)s"

# --- the history's guard: every event names a job that exists (migration 0015) --------------
# What a foreign key from job_events to jobs promised, checked once per statement instead of
# once per row. A foreign key runs its check for each event row (a trigger call and a
# `SELECT ... FOR KEY SHARE` of the job, which writes a lock into the job row and WAL for it),
# three or more times per job on the hot path: measured at a sixth of PostgreSQL's CPU per
# drained job. These triggers keep the same promise (no event can name a job that does not
# exist, no job can go while it has events) at one query per statement:
# - after an INSERT into job_events: every new event's job exists. A job row this transaction
#   wrote itself (inserted or updated: every statement that moves a job writes its row and its
#   event together) cannot be deleted by another transaction before this one commits (a
#   deleter waits on the row), so only the others are locked FOR KEY SHARE, as the foreign key
#   did (LOG, LEASES_LOST and the rescue of a dropped partition's events name such jobs);
#   locked first, then counted, so a job deleted meanwhile is seen as missing. "Wrote itself"
#   is read from the row's xmin, compared with the transaction's own xid (a row written in a
#   savepoint carries the subtransaction's xid and is locked: correct, only slower).
# - at the commit of a transaction that deleted jobs: none of them has an event left (every
#   deleter of jobs deletes their events in the same transaction: the pruner, operator delete,
#   Django's collector). Deferred, as the foreign key was, so a job may go before its events;
#   a check per deleted row, as before: deletes are retention's path, not the hot one.
# - after a TRUNCATE of jobs: job_events is empty (TRUNCATE jobs, job_events together passes).
# - a job's id and an event's job_id never change.
# The insert guard sits on job_events and on each of its partitions (a statement that names a
# partition fires that partition's statement triggers, not the parent's); both are named
# after the invariant they keep. Violations raise SQLSTATE 23503 (foreign_key_violation), as
# the foreign key did, so callers see an IntegrityError.
HISTORY_GUARD_FUNCTIONS = (
    """
CREATE OR REPLACE FUNCTION job_events_name_existing_jobs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    lo bigint;
    hi bigint;
    written xid;
    missing bigint;
    others bigint;
BEGIN
    -- Each query here costs its planning at every call if it reads the transition table
    -- (measured: a join over it, about 40 us), so the common statement, whose events all
    -- name one job (an enqueue, a fail, a log line), reads it once with a trivial aggregate
    -- and probes jobs with a query planned once per connection.
    SELECT min(job_id), max(job_id) INTO lo, hi FROM new_events;
    IF lo = hi THEN
        SELECT j.xmin INTO written FROM jobs j WHERE j.id = lo;
        IF FOUND AND written <> pg_current_xact_id()::xid THEN
            PERFORM 1 FROM jobs j WHERE j.id = lo FOR KEY SHARE;
        END IF;
        IF NOT FOUND THEN
            missing := lo;
        END IF;
    ELSIF lo IS NOT NULL THEN
        -- Many jobs (a batch): one probe of jobs_pkey per distinct job, in one query
        -- (LATERAL ... LIMIT 1 keeps it a nested loop whatever the sizes; with
        -- enable_seqscan off, even a plan made while jobs was tiny stays on the index).
        SELECT min(n.job_id) FILTER (WHERE j.id IS NULL),
               count(*) FILTER (WHERE j.xmin <> pg_current_xact_id()::xid)
        INTO missing, others
        FROM (SELECT DISTINCT job_id FROM new_events) n
        LEFT JOIN LATERAL (SELECT jobs.id, jobs.xmin FROM jobs WHERE jobs.id = n.job_id
                           LIMIT 1) j ON true;
        IF missing IS NULL AND others > 0 THEN
            PERFORM 1 FROM jobs j
            WHERE j.id IN (SELECT job_id FROM new_events) AND j.xmin <> pg_current_xact_id()::xid
            FOR KEY SHARE OF j;
            SELECT min(n.job_id) INTO missing FROM new_events n
            WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = n.job_id);
        END IF;
    END IF;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'job event names job % which does not exist', missing
            USING ERRCODE = 'foreign_key_violation', TABLE = 'job_events',
                  CONSTRAINT = 'job_event_names_existing_job';
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE OR REPLACE FUNCTION jobs_deleted_without_events() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = OLD.id) THEN
        RAISE EXCEPTION 'job % was deleted but its events were not', OLD.id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs',
                  CONSTRAINT = 'job_deleted_with_its_events';
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE OR REPLACE FUNCTION jobs_truncated_with_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_events) THEN
        RAISE EXCEPTION 'jobs was truncated but job_events was not (TRUNCATE jobs, job_events)'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs',
                  CONSTRAINT = 'job_deleted_with_its_events';
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE OR REPLACE FUNCTION job_history_keys_never_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%.% never changes', TG_TABLE_NAME, TG_ARGV[0]
        USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME,
              CONSTRAINT = 'job_history_keys_never_change';
END $$
""",
)
# {table}: job_events or one of its partitions (names made by services/partitions.py).
HISTORY_GUARD_EVENTS_TRIGGER = (
    'CREATE TRIGGER job_event_names_existing_job AFTER INSERT ON "{table}"'
    " REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT"
    " EXECUTE FUNCTION job_events_name_existing_jobs()"
)
HISTORY_GUARD_TRIGGERS = (
    HISTORY_GUARD_EVENTS_TRIGGER.format(table="job_events"),
    "CREATE CONSTRAINT TRIGGER job_deleted_with_its_events AFTER DELETE ON jobs"
    " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION jobs_deleted_without_events()",
    "CREATE TRIGGER job_truncated_with_its_events AFTER TRUNCATE ON jobs"
    " FOR EACH STATEMENT EXECUTE FUNCTION jobs_truncated_with_events()",
    "CREATE TRIGGER job_id_never_changes BEFORE UPDATE OF id ON jobs FOR EACH ROW"
    " WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION job_history_keys_never_change('id')",
    "CREATE TRIGGER job_event_job_id_never_changes BEFORE UPDATE OF job_id ON job_events"
    " FOR EACH ROW WHEN (OLD.job_id IS DISTINCT FROM NEW.job_id)"
    " EXECUTE FUNCTION job_history_keys_never_change('job_id')",
)
# Whether job_events has the guard (services/partitions.py gives each new partition its own).
HISTORY_GUARD_INSTALLED = (
    "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'job_events'::regclass"
    " AND tgname = 'job_event_names_existing_job')"
)
HISTORY_GUARD_DROP = (
    "DROP TRIGGER IF EXISTS job_event_names_existing_job ON job_events",
    "DROP TRIGGER IF EXISTS job_deleted_with_its_events ON jobs",
    "DROP TRIGGER IF EXISTS job_truncated_with_its_events ON jobs",
    "DROP TRIGGER IF EXISTS job_id_never_changes ON jobs",
    "DROP TRIGGER IF EXISTS job_event_job_id_never_changes ON job_events",
    "DROP FUNCTION IF EXISTS job_events_name_existing_jobs() CASCADE",  # the partitions' too
    "DROP FUNCTION IF EXISTS jobs_deleted_without_events()",
    "DROP FUNCTION IF EXISTS jobs_truncated_with_events()",
    "DROP FUNCTION IF EXISTS job_history_keys_never_change()",
)

# --- operator delete -------------------------------------------------------------------------
# One finished job, guarded in the statement: a queued or running job is never deleted,
# whatever the caller checked before. The row lock this DELETE takes also stops new events
# being written for the job (the history's guard takes a KEY SHARE lock on the job of an
# event whose row the writer did not write itself, and every other writer of events updates
# the row), so the next statement, in the same transaction and with a fresh snapshot, sees
# every one of its events. The guard's check that none is left is deferred to the commit.
# The job's searchable text (job_search_text, which has no foreign key: models.JobSearchText
# says why) goes in the same statement, only if the job did.
DELETE_FINISHED_JOB = """
WITH gone AS (
    DELETE FROM jobs WHERE id = %s AND status IN ('succeeded', 'failed', 'cancelled')
    RETURNING id
),
search_text AS (
    DELETE FROM job_search_text s USING gone WHERE s.job_id = gone.id
),
steps AS (  -- its durable steps (no foreign key: models.JobStep)
    DELETE FROM job_steps s USING gone WHERE s.job_id = gone.id
)
SELECT id FROM gone
"""
DELETE_JOB_EVENTS = "DELETE FROM job_events WHERE job_id = %s"
# After a DELETE that matched nothing: gone, or not finished (and then which status)?
JOB_STATUS = "SELECT status FROM jobs WHERE id = %s"

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

# --- periodic schedules: pause, resume, and each schedule's jobs -----------------------------
# Pause and resume are each one conditional write, so that two operators at once change it
# once: a row is returned only when the state changed (%s: the schedule's name).
PAUSE_SCHEDULE_IF_RUNNING = """
INSERT INTO job_schedule_settings (name, paused, updated_at) VALUES (%s, true, now())
ON CONFLICT (name) DO UPDATE SET paused = true, updated_at = now()
WHERE NOT job_schedule_settings.paused
RETURNING name
"""
RESUME_SCHEDULE_IF_PAUSED = """
UPDATE job_schedule_settings SET paused = false, updated_at = now()
WHERE name = %s AND paused
RETURNING name
"""
# A row (not paused) for each declared schedule that has none yet (%s: the names), so that the
# admin can list every schedule with its pause; an existing row is left as it is.
RECORD_SCHEDULES = """
INSERT INTO job_schedule_settings (name, paused, updated_at)
SELECT name, false, now() FROM unnest(%s::text[]) AS name
ON CONFLICT (name) DO NOTHING
"""
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

# --- migration 0016: the payload's searchable text in a side table ---------------------------
# The table of models.JobSearchText as Django would create it, IF NOT EXISTS: the migration is
# not atomic, so a run interrupted after it is created finds it there when run again.
CREATE_JOB_SEARCH_TEXT = """
CREATE TABLE IF NOT EXISTS job_search_text (
    job_id bigint NOT NULL PRIMARY KEY,
    payload_text text NOT NULL
)
"""

# --- throughput: succeeded and failed per bucket, for a range, a queue and a type -------------
# Every bucket of the range is present (zeros too), oldest first; a bucket is named by its
# start. jobs_status_finished_idx (status, finished_at) serves the range: the cost is the
# range's finished jobs, not the table. NULL queue / type: every one.
THROUGHPUT = """
WITH bounds AS (
    SELECT date_bin(%(bucket)s::interval, now(), timestamptz '2000-01-01') AS last_bucket
),
range AS (
    SELECT last_bucket - (%(buckets)s - 1) * %(bucket)s::interval AS first_bucket, last_bucket
    FROM bounds
),
per_bucket AS (
    SELECT date_bin(%(bucket)s::interval, j.finished_at, timestamptz '2000-01-01') AS bucket,
           count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE j.status = 'failed') AS failed
    FROM jobs j, range r
    WHERE j.status IN ('succeeded', 'failed') AND j.finished_at >= r.first_bucket
      AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
      AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
    GROUP BY 1
)
SELECT b.bucket, coalesce(p.succeeded, 0), coalesce(p.failed, 0)
FROM range r, generate_series(r.first_bucket, r.last_bucket, %(bucket)s::interval) AS b(bucket)
LEFT JOIN per_bucket p ON p.bucket = b.bucket
ORDER BY b.bucket
"""

# --- tracing: the producer's trace context, read back from the job's created event --------
# (tracing.py). The first `created` event of the job, by its index (job_id, id).
CREATED_EVENT_TRACE = """
SELECT data FROM job_events WHERE job_id = %s AND kind = 'created' ORDER BY id LIMIT 1
"""

# --- retry: failed or cancelled -> queued, runnable now: the one statement of every retry -----
# A dropped partition and a retry are exclusive: the drop holds this lock from before it judges
# which jobs are kept until it commits; a retry (services/bulk_retry.py: every retry)
# holds it shared from before it reads the job until it commits, and retries only a job whose
# history still starts with its `created` event. So a retry either commits first (the job is
# queued: kept, its events rescued) or runs after the drop and finds the history gone (the job
# is past its retention and about to be pruned: refused as not found). Never a job queued
# again with only its `retried` event. Other operator writes cannot revive a finished job.
EVENTS_HISTORY_LOCK_KEY = 7_300_416_003
EVENTS_HISTORY_LOCK = f"SELECT pg_advisory_xact_lock({EVENTS_HISTORY_LOCK_KEY})"
EVENTS_HISTORY_LOCK_SHARED = f"SELECT pg_advisory_xact_lock_shared({EVENTS_HISTORY_LOCK_KEY})"
JOB_HAS_HISTORY = (
    "SELECT EXISTS (SELECT 1 FROM job_events WHERE job_id = %s AND kind = 'created')"
)
# The same, for the bulk retry's picked jobs (a condition on `jobs`).
JOB_HAS_HISTORY_CONDITION = (
    "EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = jobs.id AND e.kind = 'created')"
)

# services.retry (one job: the API, the admin, bulk actions), bulk_retry.retry_ids (the ids of
# POST /jobs/retry/) and bulk_retry.retry_matching (the dead letter, by filter) all run it;
# only the `picked` CTE differs. The jobs are locked in id order (no two retries deadlock) and
# the guard is repeated on the locked row. Attempts already spent stay counted; where none are
# left, max_attempts grows by one so that the job may run again. A job enqueued after others
# whose dependencies have not all succeeded goes back to 'waiting' instead (gate, below), to be
# settled again as they finish; one that waits for a failed or cancelled job retried not with
# it is left as it is. Each retried job gets its
# `retried` event ('retried from <status>' || %(suffix)s, %(data)s), and when %(notify)s each
# queue retried into gets one NOTIFY, delivered at commit, as an enqueue's: idle workers claim
# the job at once instead of at their next poll. Returns one row: the last id picked, how many
# were picked, the ids retried (in id order, NULL for none), the queues notified, and the ids
# of those that wait again (NULL for none).
# The statuses an operator may retry, from the state machine: 'cancelled', 'failed'.
_RETRYABLE = ", ".join(f"'{s}'" for s in sorted(RETRYABLE_BY_OPERATOR))
_RETRY_TAIL = """
gate AS (
    -- A picked job enqueued after=[...] goes back to 'waiting' while a job it waits for has
    -- not succeeded (or, for an after_failure='run' edge, not finished): every retried
    -- dependency counts as not finished. It is refused ('dead') while a job it must not
    -- outlive (on_failure 'cancel') is failed, cancelled or gone and not retried with it:
    -- it could only be cancelled again.
    SELECT p.id,
           array_agg(e.depends_on_id ORDER BY e.depends_on_id) FILTER (
               WHERE r.id IS NOT NULL
                  OR NOT (coalesce(d.status = 'succeeded', false)
                          OR (e.on_failure = 'run'
                              AND (d.id IS NULL OR d.status IN ('failed', 'cancelled'))))
           ) AS open_ids,
           bool_or(r.id IS NULL AND e.on_failure = 'cancel'
                   AND (d.id IS NULL OR d.status IN ('failed', 'cancelled'))) AS dead
    FROM picked p
    JOIN job_dependencies e ON e.job_id = p.id
    LEFT JOIN jobs d ON d.id = e.depends_on_id
    LEFT JOIN picked r ON r.id = e.depends_on_id
    GROUP BY p.id
),
retried AS (
    UPDATE jobs j
    SET status = CASE WHEN g.open_ids IS NULL THEN 'queued' ELSE 'waiting' END,
        available_at = now(), updated_at = now(), finished_at = NULL,
        cancel_requested_at = NULL, result = NULL, progress_percent = NULL,
        progress_message = '', max_attempts = GREATEST(j.max_attempts, j.attempts + 1),
        unknown_type_at = NULL  -- a fresh wait for a worker that knows its type
    FROM picked LEFT JOIN gate g ON g.id = picked.id
    WHERE j.id = picked.id AND j.status = picked.status AND j.status IN (""" + _RETRYABLE + """)
      AND g.dead IS NOT TRUE
      -- a unique job whose key another job holds now stays as it is (job_unique_key_unique)
      AND NOT EXISTS (SELECT 1 FROM jobs h
                      WHERE j.unique_key IS NOT NULL AND h.unique_key = j.unique_key
                        AND h.id <> j.id AND (h.unique_states ? h.status))
    RETURNING j.id, j.attempts, j.queue, j.status, picked.status AS retried_from, g.open_ids
),
events AS (
    -- 'retried' (to queued), then for a job that waits again its 'blocked' (queued -> waiting)
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT job_id, kind, attempts, message, data, now() FROM (
        SELECT id AS job_id, 1 AS step, 'retried' AS kind, attempts,
               'retried from ' || retried_from || %(suffix)s AS message, %(data)s::jsonb AS data
        FROM retried
        UNION ALL
        SELECT id, 2, 'blocked', attempts,
               'waiting again for ' || array_to_string(
                   ARRAY(SELECT 'job ' || x FROM unnest(open_ids) AS x), ', '),
               jsonb_build_object('after', to_jsonb(open_ids))
        FROM retried WHERE status = 'waiting'
    ) AS e
    ORDER BY job_id, step
),
notified AS (
    SELECT count(pg_notify('""" + NOTIFY_CHANNEL + """', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM retried WHERE status = 'queued') AS q
    WHERE %(notify)s
)
SELECT (SELECT max(id) FROM picked), (SELECT count(*) FROM picked),
       (SELECT array_agg(id ORDER BY id) FROM retried), (SELECT queues FROM notified),
       (SELECT array_agg(id ORDER BY id) FROM retried WHERE status = 'waiting')
"""
# These jobs (%(ids)s), where they are failed or cancelled, waiting for a lock another session
# holds (an operator's retry is worth the wait; the guard then decides).
RETRY_JOBS = """
WITH picked AS (
    SELECT id, status FROM jobs
    WHERE id = ANY(%(ids)s::bigint[]) AND status IN (""" + _RETRYABLE + """)
      AND """ + JOB_HAS_HISTORY_CONDITION + """
    ORDER BY id
    FOR UPDATE
),""" + _RETRY_TAIL
# The dead letter's bulk retry: one batch of up to %(limit)s failed jobs after %(after_id)s,
# matching {filters} (RETRY_FAILED_FILTERS), SKIP LOCKED: a job an operator or the pruner holds
# is left alone rather than waited for.
RETRY_FAILED_BATCH = """
WITH picked AS (
    SELECT id, status FROM jobs
    WHERE status = 'failed' AND id > %(after_id)s {filters}
      AND """ + JOB_HAS_HISTORY_CONDITION + """
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),""" + _RETRY_TAIL
# {filters} of RETRY_FAILED_BATCH: each an AND clause over one named parameter.
RETRY_FAILED_FILTERS = {
    "type": "AND type = %(type)s",
    "error_contains": "AND strpos(lower(coalesce(last_error, '')), lower(%(error_contains)s)) > 0",
    "finished_after": "AND finished_at >= %(finished_after)s",
    "finished_before": "AND finished_at < %(finished_before)s",
}
# --- queue limits, as claims read them (services/claiming.py, cached a second) -------------

# The two facts a claim reads at most once a second per process (services/claiming.py), in one
# statement: the queues' concurrency limits and whether any job with a concurrency key waits.
# An idle worker's backed-off poll refreshes both: one transaction, not two.
CLAIM_PROBES = """
SELECT (SELECT COALESCE(jsonb_object_agg(queue, concurrency_limit), '{}'::jsonb)
          FROM job_queue_settings WHERE concurrency_limit IS NOT NULL),
       EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND concurrency_key IS NOT NULL)
"""

# --- heartbeat: a worker process's row in job_workers (worker/renewer.py) -----------------
# Upserted after each renewal pass: the first creates the row, the next ones move heartbeat_at
# (metrics and audit_jobs read it to tell live processes from dead ones).
# With it, what the workers page shows of the process: its memory (RSS, bytes), jobs run,
# handlers stuck past their timeout now, its own heartbeat interval (a row silent for two of
# them is shown as lost) and the supervisor that started it (NULL: none).
# A row beaten again: its beat and its figures (the first beat's started_at stays).
_HEARTBEAT_UPDATE = """
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), threads = EXCLUDED.threads,
                               queues = EXCLUDED.queues, rss_bytes = EXCLUDED.rss_bytes,
                               jobs_done = EXCLUDED.jobs_done,
                               stuck_handlers = EXCLUDED.stuck_handlers,
                               heartbeat_interval_seconds = EXCLUDED.heartbeat_interval_seconds,
                               supervisor_pid = EXCLUDED.supervisor_pid
"""
HEARTBEAT = """
INSERT INTO job_workers (id, hostname, pid, threads, queues, started_at, heartbeat_at,
                         rss_bytes, jobs_done, stuck_handlers, heartbeat_interval_seconds,
                         supervisor_pid)
VALUES (%(id)s, %(hostname)s, %(pid)s, %(threads)s, %(queues)s::jsonb, now(), now(),
        %(rss_bytes)s, %(jobs_done)s, %(stuck_handlers)s, %(heartbeat_interval_seconds)s,
        %(supervisor_pid)s)
""" + _HEARTBEAT_UPDATE

# One statement beats for every live child of a supervisor (`run_job_workers --processes N`,
# worker/hostbeat.py): the supervisor upserts each child's row from the figures the child
# wrote into memory it shares with the supervisor after its own renewal pass, so a host of N
# idle children costs one heartbeat transaction per interval, not N. Each row keeps its own
# figures and its own id (`<host>-<child pid>`); a child the supervisor found dead, or whose
# figures went stale (frozen), is simply left out, and its row turns lost like any silent one.
# The arrays are parallel, one element per child; the supervisor's pid is the same for all.
HEARTBEAT_MANY = """
INSERT INTO job_workers (id, hostname, pid, threads, queues, started_at, heartbeat_at,
                         rss_bytes, jobs_done, stuck_handlers, heartbeat_interval_seconds,
                         supervisor_pid)
SELECT u.id, u.hostname, u.pid, u.threads, u.queues::jsonb, now(), now(), u.rss_bytes,
       u.jobs_done, u.stuck_handlers, u.heartbeat_interval_seconds, %(supervisor_pid)s
FROM unnest(%(ids)s::text[], %(hostnames)s::text[], %(pids)s::int[], %(threads)s::int[],
            %(queues)s::text[], %(rss_bytes)s::bigint[], %(jobs_done)s::bigint[],
            %(stuck_handlers)s::int[], %(heartbeat_interval_seconds)s::float8[])
     AS u(id, hostname, pid, threads, queues, rss_bytes, jobs_done, stuck_handlers,
          heartbeat_interval_seconds)
""" + _HEARTBEAT_UPDATE

# The rows of worker processes that stopped gracefully (a lone process removes its own at its
# stop; a supervisor removes its children's once they have exited, after its last beat for
# them, so that no beat of its can bring a stopped child's row back).
REMOVE_STOPPED_WORKERS = "DELETE FROM job_workers WHERE id = ANY(%(ids)s::text[])"

# --- worker health: stuck handlers, prefetched jobs' real owner, lost workers --------------
# A handler still running past its job's timeout plus JOB_TIMEOUT_GRACE_SECONDS (worker/
# stuck.py). Not fenced: the timeout already failed the attempt (the job may be queued again,
# or running elsewhere), and this only notes on the job's timeline that the old attempt's
# handler has not returned (its lease token says which attempt: audit_jobs tells two attempts
# that overlapped by it). FOR SHARE orders it among the job's events, as LEASES_LOST does.
STUCK_HANDLER_EVENT = """
INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
SELECT id, 'log', %(attempt)s, %(worker_id)s, %(message)s,
       jsonb_build_object('stuck', true, 'seconds_past_timeout', %(seconds)s::float8,
                          'lease_token', %(token)s::text), now()
FROM jobs WHERE id = %(id)s
FOR SHARE
"""

# A prefetched job is claimed under `<process>-prefetch` (states.PREFETCH_WORKER_SUFFIX) and
# keeps that owner while it waits in the buffer. The executor thread that takes it has its own
# id recorded here (worker/starter.py: the threads that took one meanwhile, in one statement),
# and waits for the commit before the handler runs: so a job whose lease expires under a
# prefetch id provably never started, and REAP gives it back uncharged. Fenced like every
# worker write; a job that does not come back lost its lease while it waited, and its handler
# must not run.
#
# Its commit does not wait for the WAL flush (synchronous_commit off, for this transaction
# only): the commit is still made, and seen by every reaper, before the handler starts, and
# what it must outlive is the worker, whose death cannot undo it. Only a crash of the database
# server within a fraction of a second (wal_writer_delay) can lose it; then a job that
# started looks unstarted and is given back uncharged once more.
ADOPT_PREFETCHED_IF_RUNNING = """
WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE jobs j SET locked_by = u.worker_id, updated_at = now()
FROM unflushed,
     (SELECT (e->>0)::bigint AS id, (e->>1)::uuid AS token, e->>2 AS worker_id
      FROM jsonb_array_elements(%(batch)s::jsonb) AS e) u  -- [[id, token, worker_id], ...]
WHERE j.id = u.id AND j.status = 'running' AND j.lease_token = u.token
RETURNING j.id
"""

# The jobs a worker process still holds: running under one of its ids (`<process>-<thread>`,
# `<process>-prefetch`; compared by prefix, not LIKE, since a host name may hold `_`). For a
# supervisor settling a child it found dead (services.settle_dead_process), which then writes
# each through the ordinary fail or release, fenced by the lease token read here.
JOBS_HELD_BY_PROCESS = """
SELECT id, lease_token, locked_by, type
FROM jobs
WHERE status = 'running' AND left(locked_by, %(prefix_length)s) = %(prefix)s
ORDER BY id
"""

# A worker process's row is kept while it is lost (silent, shown as lost with what it held)
# and forgotten once it has been silent longer than %(silent_seconds)s and no running job names
# one of its threads any longer (the reaper requeued them). Run by the reaper.
FORGET_LOST_WORKERS = """
DELETE FROM job_workers w
WHERE w.heartbeat_at < now() - make_interval(secs => %(silent_seconds)s)
  AND NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.status = 'running' AND j.locked_by LIKE w.id || '-%%')
"""

# The transaction id of the feed's `after` event (feed.py): the cursor's first half.
EVENT_TX_ID = "SELECT tx_id FROM job_events WHERE id = %s"

# --- the maintenance leader: one lease row per role (worker/leader.py) -----------------------
# Take the lease, or keep it: the row is updated only when this process holds it already or
# its lease has expired on the database clock, so two processes can never both hold it (the
# second UPDATE waits for the first's row lock, then re-checks the condition on the new row
# and matches nothing). A process that does not hold it locks nothing: the UPDATE's WHERE
# fails before any row is locked. The INSERT makes the row the first time (or after a test
# truncated the table); ON CONFLICT DO NOTHING leaves it to the UPDATE's next turn when two
# processes both found no row. Returns the holder's id when this process holds the lease.
TAKE_LEADERSHIP_IF_FREE_OR_MINE = """
WITH renewed AS (
    UPDATE job_leader
       SET holder = %(holder)s,
           elected_at = CASE WHEN holder = %(holder)s THEN elected_at ELSE now() END,
           expires_at = now() + make_interval(secs => %(lease_seconds)s)
     WHERE role = %(role)s AND (holder = %(holder)s OR expires_at < now())
    RETURNING holder
), created AS (
    INSERT INTO job_leader (role, holder, elected_at, expires_at)
    SELECT %(role)s, %(holder)s, now(), now() + make_interval(secs => %(lease_seconds)s)
     WHERE NOT EXISTS (SELECT 1 FROM job_leader WHERE role = %(role)s)
    ON CONFLICT (role) DO NOTHING
    RETURNING holder
)
SELECT holder FROM renewed UNION ALL SELECT holder FROM created
"""

# Give the lease up (a graceful stop): another process takes it at its next heartbeat.
RESIGN_LEADERSHIP = """
UPDATE job_leader SET expires_at = '-infinity' WHERE role = %(role)s AND holder = %(holder)s
"""

# --- the stager: wake the workers of queues whose jobs became due (worker/stager.py) ----------
# Delayed jobs and retries become runnable at `available_at` with no NOTIFY of their own;
# idle workers back off their polling (JOB_POLL_INTERVAL_MAX_SECONDS), so the maintenance
# leader notifies, once per queue, the queues with jobs that became due since its last pass
# (`since`, the last pass's database clock, returned as `now`). Only jobs that were not
# runnable when written count (`available_at > created_at`): a job enqueued to run at once
# sent its own NOTIFY. The claim index orders the
# queued rows by priority first, so this reads the queued rows' index entries: the runnable
# backlog, which is small whenever workers are idle enough to be backing off.
DATABASE_NOW = "SELECT now()"  # the stager's first `since`: the database clock, not the host's

NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS = f"""
SELECT now(), count(pg_notify('{NOTIFY_CHANNEL}', queue))
  FROM (SELECT DISTINCT queue FROM jobs
         WHERE status = 'queued' AND available_at > created_at
           AND available_at > %(since)s AND available_at <= now()) due
"""

# --- metrics: the figures of GET /metrics (metrics.py), in one read-only transaction ------
# Its statement timeout, transaction-local (%s: milliseconds, as text).
STATEMENT_TIMEOUT_LOCAL = "SELECT set_config('statement_timeout', %s, true)"
# A queue connection's session set-up (db.py), once per new connection: its name, and, on a
# direct connection, its limits (behind a transaction pooler they ride in each transaction as
# SET LOCAL instead: a session setting would leak to other clients of the server connection).
SESSION_APPLICATION_NAME = "SELECT set_config('application_name', %s, false)"
SESSION_LIMITS = (
    "SELECT set_config('statement_timeout', %s, false),"
    " set_config('idle_in_transaction_session_timeout', %s, false),"
    " set_config('application_name', %s, false)"
)
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

# The claimed event's wait: from the job's available_at to the claim. available_at is only
# reliable for the job's latest claim (a retry moves it), so older claims of a job that was
# requeued since are left out of the histogram rather than measured wrong.
_WAIT = """CASE WHEN r.kind = 'claimed' AND r.attempt = j.attempts AND j.status <> 'queued'
                 AND r.created_at >= j.available_at
            THEN extract(epoch FROM r.created_at - j.available_at) END"""
_RUN = "CASE WHEN r.kind <> 'claimed' THEN (r.data->>'run_seconds')::float8 END"


def metrics_window(run_buckets, wait_buckets) -> str:
    """The recent events' counts and histograms by (type, kind), one cumulative bucket
    per bound of run_buckets / wait_buckets (numbers, written into the statement)."""
    def buckets(expr, bounds):
        return ", ".join(f"count(*) FILTER (WHERE {expr} <= {b})" for b in bounds)

    return f"""
WITH recent AS (
    SELECT job_id, kind, attempt, worker_id, data, created_at FROM job_events
    WHERE created_at > now() - make_interval(secs => %(window)s)
      AND kind IN ('claimed', 'succeeded', 'failed', 'retry_scheduled', 'cancelled',
                   'lease_expired', 'retried', 'released', 'snoozed')
),
measured AS (
    SELECT j.type, r.kind, r.worker_id, {_WAIT} AS wait, {_RUN} AS run
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
FROM job_events
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

# --- test helpers (testing.py) ---------------------------------------------------------------
# drain's "make every queued job due now", narrowed by AND_TYPE_IN / AND_QUEUE_IN (%s: a list).
MAKE_DUE = "UPDATE jobs SET available_at = now() WHERE status = 'queued' AND available_at > now()"
AND_TYPE_IN = " AND type = ANY(%s::text[])"
AND_QUEUE_IN = " AND queue = ANY(%s::text[])"
# expire_lease: a running job's lease deadline in the past, as if its worker stopped renewing.
EXPIRE_LEASE_IF_RUNNING = (
    "UPDATE jobs SET lease_expires_at = now() - interval '1 second'"
    " WHERE id = %s AND status = 'running'"
)

# --- audit_jobs: invariant checks over the rows and the event history (audit.py) ----------
# {ids}: AUDIT_IDS_FILTER over the statement's id column, or nothing (every job).
AUDIT_IDS_FILTER = " AND {column} = ANY(%s::bigint[])"
AUDIT_LIVE_WORKERS = (
    "SELECT count(*) FROM job_workers WHERE heartbeat_at > now() - interval '60 seconds'"
)
# Running jobs whose lease expired more than %s seconds ago: no reaper runs.
AUDIT_STALE_LEASES = (
    "SELECT id, locked_by, round(extract(epoch FROM now() - lease_expires_at)::numeric, 1)"
    " FROM jobs WHERE status = 'running'"
    " AND lease_expires_at < now() - make_interval(secs => %s){ids} ORDER BY id"
)
# Running jobs whose worker process is alive (heartbeat %s seconds past the job's lease expiry)
# but no longer renews them; locked_by is <process id>-<thread number | prefetch>.
AUDIT_HELD_WITHOUT_EXECUTOR = (
    "SELECT j.id, j.locked_by, w.id,"
    " round(extract(epoch FROM w.heartbeat_at - j.lease_expires_at)::numeric, 1)"
    " FROM jobs j JOIN job_workers w"
    "   ON left(j.locked_by, length(w.id) + 1) = w.id || '-'"
    "  AND substr(j.locked_by, length(w.id) + 2) ~ '^([0-9]+|prefetch)$'"
    " WHERE j.status = 'running'"
    "   AND w.heartbeat_at > now() - interval '60 seconds'"
    "   AND w.heartbeat_at > j.lease_expires_at + make_interval(secs => %s){ids} ORDER BY j.id"
)
# Two attempts of one job that overlapped in time: attempt N's worker still acted on it after
# attempt N+1 was claimed. Events alone can tell only that much: an attempt's run begins at its
# claim (or, prefetched, soon after) and no event marks when its handler returned; but a
# `lease_lost` of attempt N (a renewal, completion, failure or snooze its worker tried, refused:
# it still held the attempt, its handler running or its outcome not yet written) or a stuck
# handler's note (its handler had not returned) with an id after attempt N+1's `claimed`
# means both were under way at once. Not counted: a refusal for a job still waiting in a
# prefetch buffer (its worker id the buffer's) and a refused start (`refused` = `start`):
# those attempts never ran. Event ids order a job's events by commit (see audit.py). One row
# per overlapping pair, with the latest sign of attempt N.
_AUDIT_PREFETCH_ID = f"'{PREFETCH_WORKER_SUFFIX}$'"
AUDIT_OVERLAPPING_ATTEMPTS = """
WITH claims AS (
    SELECT job_id, id, attempt, worker_id, data->>'lease_token' AS token,
           lead(id) OVER w AS next_id, lead(attempt) OVER w AS next_attempt,
           lead(worker_id) OVER w AS next_worker, lead(created_at) OVER w AS next_at
    FROM job_events
    WHERE kind = 'claimed'{ids}
    WINDOW w AS (PARTITION BY job_id ORDER BY id)
)
SELECT DISTINCT ON (c.job_id, c.id)
       c.job_id, c.attempt, c.worker_id, c.next_attempt, c.next_worker, c.next_at,
       e.kind, e.data->>'refused', e.worker_id, e.created_at
FROM claims c
JOIN job_events e
  ON e.job_id = c.job_id AND e.id > c.next_id AND e.data->>'lease_token' = c.token
 AND ((e.kind = 'lease_lost' AND e.data->>'refused' IS DISTINCT FROM 'start'
       AND e.worker_id !~ """ + _AUDIT_PREFETCH_ID + """)
      OR (e.kind = 'log' AND e.data->>'stuck' = 'true'))
WHERE c.next_id IS NOT NULL
ORDER BY c.job_id, c.id, e.id DESC
"""
# Attempts the reaper charged though they never started: a `lease_expired` under a prefetch
# buffer's worker id (since the start of a prefetched job is recorded before its handler runs,
# the reaper gives such a job back uncharged, with a `released` event, instead: sql.REAP).
AUDIT_CHARGED_UNSTARTED = """
SELECT job_id, attempt, worker_id, data->>'next_status', created_at
FROM job_events
WHERE kind = 'lease_expired' AND worker_id ~ """ + _AUDIT_PREFETCH_ID + """{ids}
ORDER BY job_id, id
"""
AUDIT_ATTEMPTS_OVER_MAX = (
    "SELECT id, attempts, max_attempts FROM jobs WHERE attempts > max_attempts{ids} ORDER BY id"
)
# Finished jobs that still hold a lease column, or have no finished_at.
AUDIT_FINISHED_WITH_LOCK = (
    "SELECT id, status, locked_by, lease_token, lease_expires_at, finished_at FROM jobs"
    " WHERE status IN ('succeeded', 'failed', 'cancelled')"
    " AND (locked_by IS NOT NULL OR lease_token IS NOT NULL"
    "      OR lease_expires_at IS NOT NULL OR finished_at IS NULL){ids} ORDER BY id"
)
AUDIT_DOUBLE_SUCCESS = (
    "SELECT job_id, count(*), array_agg(data->>'lease_token' ORDER BY id)"
    " FROM job_events WHERE kind = 'succeeded'{ids}"
    " GROUP BY job_id HAVING count(*) > 1 ORDER BY job_id"
)
# The search's side table against the jobs (models.JobSearchText): a row whose job is gone
# (a delete that bypassed the library's statements), a job with a non-empty payload and no row
# (enqueued by a release before migration 0016 while it ran), or a row whose text is not the
# payload's. One hash join of the two tables; {ids} twice (job ids, then the rows' job ids).
AUDIT_SEARCH_TEXT = """
SELECT coalesce(j.id, s.job_id),
       CASE WHEN j.id IS NULL THEN 'orphan' WHEN s.job_id IS NULL THEN 'missing'
            ELSE 'differs' END
FROM (SELECT id, payload::text AS text FROM jobs WHERE payload <> '{{}}'::jsonb{ids}) j
FULL JOIN (SELECT job_id, payload_text FROM job_search_text WHERE true{ids_s}) s
       ON s.job_id = j.id
WHERE j.id IS NULL OR s.job_id IS NULL OR s.payload_text <> j.text
ORDER BY 1
"""
# The replay: every job and every event, both in job id order, streamed side by side.
AUDIT_REPLAY_JOBS = (
    "SELECT id, status, attempts, lease_token::text FROM jobs WHERE true{ids} ORDER BY id"
)
AUDIT_REPLAY_EVENTS = (
    "SELECT job_id, id, kind, attempt, data->>'lease_token', data->>'next_status'"
    " FROM job_events WHERE true{ids} ORDER BY job_id, id"
)

# --- prune: finished jobs past their retention, with their events (services/pruning.py) ---
# The newest job of each periodic schedule (idempotency key `periodic:<name>:<tick>`) is
# never pruned: its key is how a worker starting up knows that the latest tick already ran
# (periodic.py); without it, a retention shorter than the schedule's period would run
# that tick again on every restart.
KEEP_NEWEST_PERIODIC = r"""
  AND NOT (coalesce(jobs.idempotency_key, '') LIKE 'periodic:%%' AND NOT EXISTS (
      SELECT 1 FROM jobs newer
      WHERE newer.idempotency_key > jobs.idempotency_key
        AND starts_with(newer.idempotency_key,
                        substring(jobs.idempotency_key FROM '^(periodic:.*:)\d{4}-\d\d-\d\dT'))))
"""

# The range scan walks jobs_status_finished_idx (status, finished_at). Oldest first, so that
# an interrupted run has removed the jobs most overdue.
PRUNE_BATCH = """
WITH doomed AS (
    SELECT id FROM jobs
    WHERE status = %(status)s AND finished_at < now() - make_interval(secs => %(age)s)
""" + KEEP_NEWEST_PERIODIC + """
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
events AS (
    DELETE FROM job_events e USING doomed WHERE e.job_id = doomed.id RETURNING e.id
),
edges AS (  -- what the doomed jobs waited for (what waited for them keeps its rows)
    DELETE FROM job_dependencies e USING doomed WHERE e.job_id = doomed.id
),
gone AS (
    DELETE FROM jobs j USING doomed
    WHERE j.id = doomed.id AND j.status IN ('succeeded', 'failed', 'cancelled')
    RETURNING j.id
),
search_text AS (  -- their searchable text (no foreign key: models.JobSearchText)
    DELETE FROM job_search_text s USING gone WHERE s.job_id = gone.id
),
steps AS (  -- their durable steps (no foreign key: models.JobStep)
    DELETE FROM job_steps s USING gone WHERE s.job_id = gone.id
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM events)
"""

COUNT_PRUNABLE = """
WITH doomed AS (
    SELECT id FROM jobs
    WHERE status = %(status)s AND finished_at < now() - make_interval(secs => %(age)s)
""" + KEEP_NEWEST_PERIODIC + """
)
SELECT (SELECT count(*) FROM doomed),
       (SELECT count(*) FROM job_events e WHERE e.job_id IN (SELECT id FROM doomed))
"""

# --- job_events partitions (services/partitions.py, migration 0007) ---------------------------
# job_events is RANGE-partitioned on created_at, one partition per JOB_EVENTS_PARTITION_INTERVAL,
# named job_events_p<YYYYMMDD[HH]> after its lower bound, plus job_events_default, which catches
# any row no partition covers (maintenance behind, a clock jump, events rescued from a dropped
# partition): no insert ever fails for want of a partition. The primary key is (id, created_at)
# because a partitioned table's unique constraints must contain the partition key; ids still
# come from one identity sequence, so they stay unique, and every lookup by id alone probes
# each partition's primary key index once. DDL takes the parent's ACCESS EXCLUSIVE lock for a
# moment (a new partition gets the history's guard, a trigger of its own: HISTORY_GUARD_*):
# every statement below runs under EVENTS_DDL_LOCK_TIMEOUT, and a maintenance step
# that cannot get its lock gives up until the next run rather than queue the workers behind it.
EVENTS_PARTITION_DEFAULT = "job_events_default"
EVENTS_DDL_LOCK_TIMEOUT = "SET LOCAL lock_timeout = '2s'"

# Storage parameters are per partition (a partitioned table holds no rows): those migration
# 0002 gave the plain table.
EVENTS_PARTITION_OPTIONS = (
    "autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05,"
    " autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0"
)
EVENTS_CREATE_DEFAULT_PARTITION = (
    "CREATE TABLE IF NOT EXISTS job_events_default PARTITION OF job_events DEFAULT"
    " WITH (" + EVENTS_PARTITION_OPTIONS + ")"
)
# {name}, {start}, {end}: an identifier and two ISO timestamps with offsets, made by
# services/partitions.py from datetimes (never from input).
EVENTS_CREATE_PARTITION = (
    "CREATE TABLE {name} PARTITION OF job_events FOR VALUES FROM ('{start}') TO ('{end}')"
    " WITH (" + EVENTS_PARTITION_OPTIONS + ")"
)
# Every range partition with its bounds, oldest first. The bounds are printed as literals with
# their offset, so casting them back is exact in any session time zone.
EVENTS_PARTITIONS = """
SELECT c.relname, b[1]::timestamptz, b[2]::timestamptz
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
WHERE i.inhparent = 'job_events'::regclass AND b IS NOT NULL
ORDER BY 2
"""
# Every partition, the default one included (migration 0015 guards each).
EVENTS_ALL_PARTITIONS = (
    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE i.inhparent = 'job_events'::regclass ORDER BY c.relname"
)
EVENTS_IS_PARTITIONED = (
    "SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = to_regclass('job_events')"
)

# Rows the default partition holds in a range about to get its own partition: they are moved
# into it (PostgreSQL refuses to create a partition whose rows sit in the default one), in the
# same transaction, under the lock that creating the partition takes anyway.
EVENTS_DEFAULT_HAS_RANGE = (
    "SELECT EXISTS (SELECT 1 FROM job_events_default"
    " WHERE created_at >= %(start)s AND created_at < %(end)s)"
)
EVENTS_TAKE_FROM_DEFAULT = """
CREATE TEMP TABLE job_events_moving ON COMMIT DROP AS
WITH moved AS (
    DELETE FROM job_events_default WHERE created_at >= %(start)s AND created_at < %(end)s
    RETURNING *
)
SELECT * FROM moved
"""
EVENTS_PUT_BACK = (
    "INSERT INTO job_events (id, kind, attempt, worker_id, message, data, created_at, job_id,"
    " tx_id) SELECT id, kind, attempt, worker_id, message, data, created_at, job_id, tx_id"
    " FROM job_events_moving",
    "DROP TABLE job_events_moving",  # another move may follow in the same transaction
)

# --- dropping a partition: retention by the table, not by the row ----------------------------
# A partition may go once every event in it belongs to a job that is gone or past its
# retention (services/pruning.py): the prune that follows deletes those jobs anyway. Events of
# the jobs that are kept (running, queued, finished within their retention, the newest job of
# a periodic schedule) are rescued first: copied into a temporary table, the partition
# dropped, and put back, where they land in job_events_default (the range is no longer
# covered), with the same ids and transaction ids: the job's timeline and the feed's order are
# unchanged. {partition}: a name from EVENTS_PARTITIONS. %(age_<status>)s: the retention in
# seconds, or NULL for kept forever.
EVENTS_PRUNABLE_JOB = """(
    (jobs.status = 'succeeded' AND jobs.finished_at < now() - make_interval(secs => %(age_succeeded)s))
    OR (jobs.status = 'failed' AND jobs.finished_at < now() - make_interval(secs => %(age_failed)s))
    OR (jobs.status = 'cancelled' AND jobs.finished_at < now() - make_interval(secs => %(age_cancelled)s))
)"""
# One pass over the partition: all its events, and those of jobs still kept.
EVENTS_KEPT_IN_PARTITION = """
SELECT count(*), count(*) FILTER (WHERE jobs.id IS NOT NULL AND NOT {prunable})
FROM {partition} e LEFT JOIN jobs ON jobs.id = e.job_id
"""
EVENTS_RESCUE = """
CREATE TEMP TABLE job_events_moving ON COMMIT DROP AS
SELECT e.* FROM {partition} e JOIN jobs ON jobs.id = e.job_id WHERE NOT {prunable}
"""
EVENTS_DROP_PARTITION = "DROP TABLE {partition}"

# Several pruners (one per worker process) may create or drop the same partition at once: the
# first takes this lock for its transaction, the others leave the partitions to it this time.
EVENTS_PARTITION_LOCK_KEY = 7_300_416_002
EVENTS_PARTITION_TRY_LOCK_ONLY = f"SELECT pg_try_advisory_xact_lock({EVENTS_PARTITION_LOCK_KEY})"
EVENTS_PARTITION_TRY_LOCK = (
    f"SELECT pg_try_advisory_xact_lock({EVENTS_PARTITION_LOCK_KEY}), to_regclass(%s) IS NOT NULL"
)

# --- migration 0007: the plain table becomes a partitioned one -------------------------------
EVENTS_OLDEST_PLAIN = "SELECT min(created_at) FROM job_events_plain"

# --- an executor's handler connections between jobs (worker/hygiene.py) ----------------------
# Everything a session can carry from one job to the next: settings (SET, set_config, SET
# ROLE), session advisory locks, temporary tables, prepared statements, LISTEN, open cursors.
# Not inside a transaction block: the executor runs it only after rolling back what a handler
# left open. psycopg sees its command tag and forgets its own prepared statements too.
DISCARD_SESSION = "DISCARD ALL"


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

# --- the health check: has the migration table changed since the plan was last empty? ---------
# (selectors.pending_migrations) Applying or unapplying a migration adds or deletes a row.
MIGRATIONS_FINGERPRINT = "SELECT count(*), coalesce(max(id), 0) FROM django_migrations"

# -- waiting for outcomes ---------------------------------------------------------------------
# waiting.py: a producer waits for its jobs' outcomes, woken by OUTCOMES_NOTIFY (defined with
# the completion it is part of, above). Each read is one short autocommit statement: a waiter
# never holds a transaction open.
LISTEN_OUTCOMES = f"LISTEN {OUTCOMES_CHANNEL}"
# A job's outcome as a waiter reads it: the result as JSON text (decoded by the waiter),
# NULL while the job has none yet.
JOB_OUTCOME = "SELECT status, result::text, last_error FROM jobs WHERE id = %s"
# An outcome written outside the worker's statements (an operator's cancel of a queued or
# waiting job) wakes its waiters too (%s: the finished ids, comma-separated).
NOTIFY_OUTCOMES = f"SELECT pg_notify('{OUTCOMES_CHANNEL}', %s)"

# -- results passed along (services/workflows.py) ---------------------------------------------
# The results of the jobs a job was enqueued after, in the order its `after` named them (the
# edges' ids: BLOCK_JOBS inserts them in that order), NULL for one that did not succeed or is
# gone; `total`: their JSON's size in bytes. Over %(max_bytes)s (JOB_MAX_RESULT_BYTES) no result
# is sent, only the total, so that a handler never loads more than the cap.
DEPENDENCY_RESULTS = """
SELECT CASE WHEN total <= %(max_bytes)s THEN result END, total
FROM (SELECT e.id, r.result,
             coalesce(sum(octet_length(r.result)) OVER (), 0) AS total
      FROM job_dependencies e
      LEFT JOIN jobs d ON d.id = e.depends_on_id
      CROSS JOIN LATERAL (SELECT CASE WHEN d.status = 'succeeded' THEN d.result::text END
                          AS result) AS r
      WHERE e.job_id = %(job_id)s) AS results
ORDER BY id
"""

# -- durable steps (services/workflows.py) ----------------------------------------------------
# A job's recorded steps, read once per attempt (job_step_name_unique's index).
JOB_STEPS = "SELECT name, result::text FROM job_steps WHERE job_id = %s"
# A step that ran is recorded once per job: the first record of a name wins (ON CONFLICT: two
# attempts racing, one of them an expired lease's). Not fenced by the lease token as the
# worker's other writes are: the step's side effect happened, and a record of it spares the
# next attempt a second one; `held` says whether the attempt still holds the job, so that one
# that lost it stops. `recorded`: 0 when the name was recorded already.
RECORD_STEP = """
WITH ins AS (
    INSERT INTO job_steps (job_id, name, attempt, result, created_at)
    VALUES (%(id)s, %(name)s, %(attempt)s, %(result)s::jsonb, now())
    ON CONFLICT (job_id, name) DO NOTHING
    RETURNING id
)
SELECT (SELECT count(*) FROM ins),
       EXISTS (SELECT 1 FROM jobs WHERE id = %(id)s AND status = 'running'
               AND lease_token = %(token)s)
"""
JOB_STEP = "SELECT result::text FROM job_steps WHERE job_id = %s AND name = %s"
