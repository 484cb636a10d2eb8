"""What a worker writes about the jobs it holds, each write fenced by the job's lease token:
complete, fail (retry with backoff, or fail for good), release and snooze, release of a type
it does not know, renew, progress and log, the trace of a refused write, a prefetched job's
adoption, a stuck handler's note; and the reaper's requeue (or failure) of expired leases
(services/lifecycle.py, services/reaping.py, services/workers.py).
"""
from ..states import PREFETCH_WORKER_SUFFIX

# --- what a failed attempt becomes: shared by FAIL and REAP -----------------------------------
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

# --- an attempt's start, carried by the event that ends it (history v2) ----------------------
# The claim writes no event: while the attempt runs, its start is on the job row (locked_by,
# started_at: the claim's now(), lease_token), and every statement that ends an attempt
# (COMPLETE_MANY, FAIL, REQUEUE_UNCHARGED, RELEASE_UNKNOWN_TYPE, REAP, waits.PARK_IF_RUNNING)
# copies it into its outcome's event: worker_id is the attempt's worker, and data gains these
# keys beside its lease_token: `started_at` and `wait_seconds` (from the job's available_at to
# the start, what the old `claimed` event's data said). {started}: the row's started_at;
# {available}: its available_at as the attempt found it (read before a requeue moves it).
# One row per attempt: the timeline, the metrics' claim wait and audit_jobs read the start
# from it (and still read the `claimed` rows written before).
def attempt_start(started: str, available: str) -> str:
    return (f"'started_at', {started}, "
            f"'wait_seconds', round(extract(epoch FROM {started} - {available})::numeric, 4)")


# The start's own lease token is the outcome's `lease_token`: the statement is fenced by it
# (the row's token equals the writer's), so it is not written twice. Only if they differed (a
# write applied without that fence: a bug) is the row's token kept, as `start_lease_token`,
# for audit_jobs to report the stale write, as the separate `claimed` row let it before.
# {held}: the row's token read before the write; {writer}: the token the writer presented.
def stale_start(held: str, writer: str) -> str:
    return (f"CASE WHEN {held} IS DISTINCT FROM {writer}::uuid"
            f" THEN jsonb_build_object('start_lease_token', {held}) ELSE '{{}}'::jsonb END")


# --- a batch's leases: those free to write now, and those another transaction locks ----------
# Of a batch's leases (CTE `input`: id, token), those still held (the job running under that
# token) whose row no other transaction locks (CTE `free`): a row another transaction holds a
# lock on (an enqueue naming the job in `after` until it commits, an operator's open
# transaction) is skipped, not waited for, so that one locked row does not hold up the whole
# batch. It comes back `busy` instead (_BUSY_LEASES: still this lease's, not written), for the
# worker to write alone. COMPLETE_MANY and RENEW_MANY write so.
# Each lease is looked up by its id (LATERAL: one index probe a lease, whatever the statistics
# say), never by reading what `jobs_running_idx` points to and hashing it against the batch:
# while a snapshot is held open elsewhere, that index keeps the entry of every job run since,
# which no vacuum can remove, and reading them all made a completion of 32 cost 5,000 buffers
# and 11 ms at 40,000 jobs into the snapshot (1.2 ms by id; bench/pressure.py, the pressure
# cell). The statement's update joins `input` to `free` and probes `jobs` by id for each row
# of that join: the outer `held = token` (always true: the lookup's own condition) is there
# for the planner, which estimates that comparison of two unknown columns at a row, so that
# the join stays the outer side on any statistics, even an empty table's or one analysed
# while nothing ran (tests/contracts/test_plans.py); joined to `free` alone, the update
# scanned every running row and compared it with every row of the batch. The busy leases are
# looked up by id too (OFFSET 0 keeps the lookup a per-lease probe rather than a join the
# planner may hash).
#
# A statement's UPDATE of the rows such a CTE locked names them by id alone, never by
# `status = 'running'` again: that condition would let the planner scan jobs_running_idx for
# them (statistics that count a few running rows make the whole index look one page long),
# which under a held snapshot reads every job run since (RENEW_MANY_WAITING took 35 ms so in
# the pressure cell). The lock keeps the row as the CTE read it until the statement ends.
def _held_leases(name: str, wait: str, columns: tuple[str, ...] = ()) -> str:
    """The CTE `name`: the leases of `input` still held, each row locked (`wait`: "SKIP
    LOCKED" or "", waiting), looked up by id as said above; `columns`: more of the job's
    columns, as they were before the statement."""
    more = "".join(f", j.{c}" for c in columns)
    return f"""{name} AS (
    SELECT i.id, j.held{more} FROM (SELECT id, token FROM input ORDER BY id) AS i
    CROSS JOIN LATERAL (
        SELECT j.lease_token AS held{more} FROM jobs j
        WHERE j.id = i.id AND j.status = 'running' AND j.lease_token = i.token
        FOR NO KEY UPDATE OF j {wait}
    ) AS j
    WHERE j.held = i.token
)"""


_FREE_LEASES = _held_leases("free", "SKIP LOCKED")
# The rows of the busy leases, after `SELECT j.id, <the other columns> `.
_BUSY_LEASES = """FROM input CROSS JOIN LATERAL (
    SELECT j.id FROM jobs j
    WHERE j.id = input.id AND j.status = 'running' AND j.lease_token = input.token
    OFFSET 0
) AS j
WHERE input.id NOT IN (SELECT id FROM free)
"""

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
# The outcome's event is kept on the job row (history v2, migration 0032), not written as a
# row of job_events: its id (from job_events' own sequence, so ids stay one sequence), its
# transaction id (as job_events.tx_id), its worker and its data, which the view job_history
# shows as the event it is (kind: the job's status; attempt: its attempts; created_at: its
# finished_at). The job row is written anyway, so the event costs two partial index entries
# instead of a row with three index entries and the history's guard (docs/explanation/
# performance.md). A trigger writes it into job_events when the row leaves that status.
COMPLETE_MANY = """
WITH input AS (
    SELECT (e->>0)::bigint AS id, (e->>1)::uuid AS token, e->>2 AS worker_id, e->3 AS result
    FROM jsonb_array_elements(%(batch)s::jsonb) AS e  -- [[id, token, worker_id, result], ...]
),
""" + _FREE_LEASES + """,
done AS (
    UPDATE jobs j
    SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'succeeded' ELSE 'cancelled' END,
        result = input.result,
        finished_at = now(), updated_at = now(),
        progress_percent = CASE WHEN j.cancel_requested_at IS NULL THEN 100 ELSE j.progress_percent END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
        outcome_event_id = nextval('job_events_id_seq'),
        outcome_tx = pg_current_xact_id()::text::bigint,
        outcome_worker_id = input.worker_id,
        outcome_data = jsonb_build_object(
            'lease_token', input.token,
            'run_seconds', round(extract(epoch FROM now() - j.started_at)::numeric, 4),
            """ + attempt_start("j.started_at", "j.available_at") + """)
            || """ + stale_start("free.held", "input.token") + """
    FROM input JOIN free ON free.id = input.id
    WHERE j.id = input.id
    RETURNING j.id, j.status, j.has_dependants, j.batch_id,
              extract(epoch FROM now() - j.started_at) AS run_seconds
),
notified AS (  -- one NOTIFY for the batch, its finished ids in the payload (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="done") + """
)
-- run_seconds as float8: a numeric comes back a Decimal, whose loading doubled the cost of
-- reading this statement's rows in the worker (the event keeps its rounded numeric).
-- dependants and batch (NULL for most jobs): settle them next (services/lifecycle.py)
SELECT id, status, run_seconds::float8, has_dependants, batch_id FROM done
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
UNION ALL
SELECT j.id, 'busy', NULL, false, NULL  -- the worker completes these alone
""" + _BUSY_LEASES

# --- fail: retry with backoff, or fail for good ----------------------------------------------
# The retry policy is the row's own (set at enqueue), else the type's (%(policy)s, sent by the
# worker from its registry), else the settings' (NULL). The policy may give up at once on
# the exception (POLICY_GIVES_UP); the event records which policy decided and why.
FAIL = """
WITH target AS (
    SELECT id, attempts, max_attempts, cancel_requested_at, started_at, available_at,
           lease_token AS held, COALESCE(retry_policy, %(policy)s::jsonb) AS policy
    FROM jobs
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
    FOR UPDATE
),
verdict AS (
    SELECT *, """ + POLICY_GIVES_UP.format(policy="policy") + """ AS gives_up
    FROM target
),
decision AS (
    SELECT id, attempts, started_at, available_at, held, policy, gives_up,
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
              extract(epoch FROM now() - d.started_at) AS run_seconds, j.has_dependants,
              j.batch_id, d.started_at, d.available_at AS started_available_at, d.held
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
               'delay_seconds', CASE WHEN status = 'queued' THEN round(delay::numeric, 3) END,
               """ + attempt_start("started_at", "started_available_at") + """)
           || """ + stale_start("held", "%(token)s") + """,
           now()
    FROM upd
),
notified AS (  -- an outcome (failed for good, cancelled) wakes its waiters (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status <> 'queued') AS o") + """
)
SELECT id, status, attempts, CASE WHEN status = 'queued' THEN delay END AS delay_seconds,
       gives_up, has_dependants, batch_id
FROM upd
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""

# --- release / snooze: back to queued without charging the attempt ---------------------------
REQUEUE_UNCHARGED = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(worker_ids)s::text[])
        AS u(id, token, worker_id)
),
-- each attempt's start as it ran (the UPDATE below moves available_at), its lease looked up
-- by id and locked (_held_leases)
""" + _held_leases("attempt", "", ("started_at", "available_at")) + """,
upd AS (
    UPDATE jobs j
    SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        attempts = CASE WHEN j.cancel_requested_at IS NULL THEN j.attempts - 1 ELSE j.attempts END,
        available_at = now() + make_interval(secs => %(delay_seconds)s),
        finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE now() END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM input JOIN attempt a ON a.id = input.id
    WHERE j.id = input.id
    RETURNING j.id, j.status, j.attempts, input.token, input.worker_id,
              a.started_at, a.available_at AS started_available_at, a.held
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, CASE status WHEN 'queued' THEN %(kind)s ELSE 'cancelled' END,
           CASE status WHEN 'queued' THEN attempts + 1 ELSE attempts END,
           worker_id, %(message)s,
           jsonb_build_object('lease_token', token, 'delay_seconds', %(delay_seconds)s,
                              """ + attempt_start("started_at", "started_available_at") + """)
           || """ + stale_start("held", "token") + """,
           now()
    FROM upd
),
notified AS (  -- a cancel that won: the outcome's waiters wake (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status IN ('succeeded', 'failed', 'cancelled')) AS o") + """
)
SELECT id, status FROM upd
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""

# --- release a job whose type this worker does not know (a rolling deploy) ------------------
# Back to queued without charging the attempt, fenced by the lease token like every worker
# write, for a worker that knows the type; unknown_type_at keeps when the first worker gave
# it back. Once that is %(give_up_seconds)s ago (NULL: never), the job fails for good instead,
# with %(error)s: no worker knew its type for that long (a removed type, a typo'd producer).
RELEASE_UNKNOWN_TYPE = """
WITH target AS (
    SELECT id, cancel_requested_at, COALESCE(unknown_type_at, now()) AS since,
           started_at, available_at, lease_token AS held
    FROM jobs
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
    FOR UPDATE
),
decision AS (
    SELECT id, since, started_at, available_at, held,
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
    RETURNING j.id, j.status, j.attempts, d.since, d.started_at,
              d.available_at AS started_available_at, d.held
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, CASE status WHEN 'queued' THEN 'released' ELSE status END,
           CASE status WHEN 'queued' THEN attempts + 1 ELSE attempts END, %(worker_id)s,
           CASE status WHEN 'failed' THEN %(error)s ELSE %(message)s END,
           jsonb_build_object('lease_token', %(token)s::text, 'reason', 'unknown_type',
                              'unknown_type_at', since, 'permanent', status = 'failed',
                              'delay_seconds', CASE WHEN status = 'queued'
                                                    THEN %(delay_seconds)s::float8 END,
                              """ + attempt_start("started_at", "started_available_at") + """)
           || """ + stale_start("held", "%(token)s") + """,
           now()
    FROM upd
),
notified AS (  -- failed for good or cancelled: the outcome's waiters wake (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status IN ('succeeded', 'failed', 'cancelled')) AS o") + """
)
SELECT id, status FROM upd
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""

# --- renew: extend every lease a worker process holds, in one statement ----------------------
# Rows that do not come back were lost (reaped, cancelled and finished, or reclaimed): the
# worker must stop their handlers. The row also tells whether a cancel was requested and
# whether the job's own timeout has passed, both on the database clock.
# A row another transaction locks (_FREE_LEASES) must not hold up the renewal of every other
# lease of the process: it comes back `busy` (still this lease's, not renewed), and the renewer
# then waits for it alone, with RENEW_MANY_WAITING under a lock_timeout.
_RENEW_INPUT = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS u(id, token)
),
"""


def _renew(leases: str) -> str:
    """The renewal of the leases in the CTE `leases` (locked by _held_leases): one row each,
    its id, whether a cancel was requested, whether its own timeout has passed."""
    return f"""UPDATE jobs j
    SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s), updated_at = now()
    FROM input JOIN {leases} ON {leases}.id = input.id
    WHERE j.id = input.id
    RETURNING j.id,
              j.cancel_requested_at IS NOT NULL AS cancel_requested,
              (j.timeout_seconds IS NOT NULL
               AND now() >= j.started_at + make_interval(secs => j.timeout_seconds)) AS timed_out"""


RENEW_MANY = (_RENEW_INPUT + _FREE_LEASES + """,
renewed AS (
    """ + _renew("free") + """
)
SELECT id, cancel_requested, timed_out, false AS busy FROM renewed
UNION ALL
SELECT j.id, false, false, true
""" + _BUSY_LEASES)
# The leases RENEW_MANY found locked, waited for (the caller bounds the wait with
# LOCK_TIMEOUT_LOCAL). While it waits it holds the row's place in the lock queue, so the reaper
# (SKIP LOCKED) cannot take the job between the other transaction's end and this renewal, even
# when the lease ran out meanwhile: the lease is fenced by its token, not by the clock.
# Each lease looked up by id, as RENEW_MANY's (_held_leases), waiting for its lock.
RENEW_MANY_WAITING = (_RENEW_INPUT + _held_leases("held", "") + """,
renewed AS (
    """ + _renew("held") + """
)
SELECT id, cancel_requested, timed_out, false AS busy FROM renewed
""")
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
# SKIP LOCKED again, so several reapers (one per worker process) never block one another. The
# rows `expired` locked cannot change before the UPDATE, which names them by id and lease
# token, never by `status = 'running'` again: that would let the planner read
# jobs_running_idx a second time, which under a held snapshot holds every job run since
# (_held_leases says why).
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
WITH expired AS (  -- the columns the decision reads, as locked
    SELECT id, locked_by, lease_token, lease_expires_at, available_at, cancel_requested_at,
           attempts, max_attempts, retry_policy
    FROM jobs
    WHERE status = 'running' AND lease_expires_at < now()
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
decision AS (
    SELECT e.id, e.locked_by, e.lease_token, e.lease_expires_at,
           e.available_at AS started_available_at,
           """ + _UNSTARTED + """ AS unstarted,
           """ + NEXT_STATUS.format(job="e.", retryable=_UNSTARTED + " OR ") + """
           CASE WHEN """ + _UNSTARTED + """ THEN 0
                ELSE """ + retry_delay_seconds("e.retry_policy", "e.attempts", "NULL") + """ END AS delay
    FROM expired e
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
    WHERE j.id = d.id AND j.lease_token = d.lease_token
    RETURNING j.id, j.status, j.attempts, d.locked_by, d.lease_token, d.delay, j.last_error,
              j.type, j.queue, j.payload, j.priority, j.max_attempts, j.timeout_seconds,
              j.available_at, j.created_at, j.started_at, d.lease_expires_at,
              d.unstarted AND j.status = 'queued' AS released, d.started_available_at
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, 'released', attempts + 1, locked_by,
           'lease expired while prefetched, before any thread started it; requeued uncharged',
           jsonb_build_object('lease_token', lease_token, 'reason', 'unstarted',
                              """ + attempt_start("started_at", "started_available_at") + """),
           now()
    FROM upd WHERE released
    UNION ALL
    SELECT id, 'lease_expired', attempts, locked_by,
           'lease expired; ' || CASE status WHEN 'queued' THEN 'requeued' ELSE status END,
           jsonb_build_object('lease_token', lease_token, 'next_status', status,
                              'delay_seconds', CASE WHEN status = 'queued'
                                                    THEN round(delay::numeric, 3) END,
                              """ + attempt_start("started_at", "started_available_at") + """),
           now()
    FROM upd WHERE NOT released
),
notified AS (  -- failed for good or cancelled: the outcome's waiters wake (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status IN ('succeeded', 'failed', 'cancelled')) AS o") + """
)
SELECT id, CASE WHEN released THEN 'released' ELSE status END, locked_by, last_error,
       -- the attempt that expired, as claimed (services.ClaimedJob's fields, in its order),
       -- for the error hooks
       id, type, queue, payload, priority, attempts, max_attempts, lease_token, timeout_seconds,
       available_at, created_at, started_at, lease_expires_at, locked_by
FROM upd
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""

# --- worker health: stuck handlers, prefetched jobs' real owner, a dead process's jobs -------
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
# id recorded here (worker/starter.py: the threads that took one meanwhile, in one statement):
# a job whose lease expires under a prefetch id never started, and REAP gives it back
# uncharged. A thread waits for this commit before its handler runs unless something that
# outlives its process already knows the start (its supervisor, or its start witness:
# witness.py, which then writes ADOPT_STARTED_BY_DEAD_PROCESS when the process dies). Fenced
# like every worker write; a job that does not come back lost its lease while it waited, and
# (when the thread waits) its handler does not run.
#
# Its commit does not wait for the WAL flush (synchronous_commit off, for this transaction
# only): the commit is still made, and seen by every reaper, before the handler starts, and
# what it must outlive is the worker, whose death cannot undo it. Only a crash of the database
# server within a fraction of a second (wal_writer_delay) can lose it; then a job that
# started looks unstarted and is given back uncharged once more.
# The leases are looked up by id, and the update joined through them, as a completion's are
# (_held_leases: a held snapshot's dead entries in jobs_running_idx are never read).
ADOPT_PREFETCHED_IF_RUNNING = """
WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true)),
input AS (
    SELECT (e->>0)::bigint AS id, (e->>1)::uuid AS token, e->>2 AS worker_id
    FROM jsonb_array_elements(%(batch)s::jsonb) AS e  -- [[id, token, worker_id], ...]
),
""" + _held_leases("held", "") + """
UPDATE jobs j SET locked_by = input.worker_id, updated_at = now()
FROM unflushed, input JOIN held ON held.id = input.id
WHERE j.id = input.id
RETURNING j.id
"""

# The start witness of a worker process that died (witness.py): the prefetched jobs its
# threads had started, each named by the thread that ran it, if it still runs under the dead
# process's prefetch id (the starter had not recorded it yet; a job whose outcome was written,
# or that the reaper took, is left alone). From then on the job reads as started: its lease's
# expiry charges the attempt (REAP), as for any job whose process died running it.
ADOPT_STARTED_BY_DEAD_PROCESS = """
UPDATE jobs j SET locked_by = u.worker_id, updated_at = now()
FROM unnest(%(ids)s::bigint[], %(worker_ids)s::text[]) AS u(id, worker_id)
WHERE j.id = u.id AND j.status = 'running' AND j.locked_by = %(prefetch_id)s
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

# --- expiry: queued jobs not started by their expires_at (services/expiring.py) ---------------
# The reaper's sweep (the maintenance leader, every JOB_REAPER_INTERVAL_SECONDS): queued jobs
# past their deadline end cancelled, each with its `expired` event (the reason, the deadline and
# how late the sweep came), and their waiters are woken (OUTCOMES_NOTIFY). The claim never
# starts such a job in the meantime (sql.CLAIM's filter), so the sweep's delay costs nothing
# but the time the row stays queued. jobs_queued_expiry_idx holds only queued rows with a
# deadline, read in deadline order under the claim's planner settings (on stale statistics
# the planner would otherwise walk and sort the whole backlog on jobs_claim_order_idx);
# rows a claimer holds are skipped, and the status is checked again in the UPDATE.
EXPIRE_QUEUED_PAST_DEADLINE = """
WITH doomed AS (
    SELECT id FROM jobs
    WHERE status = 'queued' AND expires_at IS NOT NULL AND expires_at <= now()
    ORDER BY expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
expired AS (
    UPDATE jobs j
    SET status = 'cancelled', finished_at = now(), updated_at = now()
    FROM doomed  -- locked above: named by id, never by `status = 'queued'` again, which would let
                 -- the planner read the claim index for them (_held_leases says why)
    WHERE j.id = doomed.id
    RETURNING j.id, j.attempts, j.expires_at, j.has_dependants
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'expired', attempts,
           'expired: not started by its expires_at, ' || to_char(expires_at AT TIME ZONE 'UTC',
                                                               'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           jsonb_build_object('expires_at', expires_at,
                              'late_seconds', round(extract(epoch FROM now() - expires_at)::numeric, 3)),
           now()
    FROM expired
),
notified AS (
    """ + OUTCOMES_NOTIFY.format(rows="expired") + """
)
SELECT id, has_dependants FROM expired
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
"""
