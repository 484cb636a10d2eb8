"""An operator's writes: retry (one job, by ids, the dead letter's batches), delete a finished
job, pause and resume a schedule, wake a queue; and the shortcuts of the test helpers
(testing.py).
"""
from ..states import RETRYABLE_BY_OPERATOR
from .enqueue import NOTIFY_CHANNEL

# --- queues: a wake-up -----------------------------------------------------------------------
# One queue's wake-up outside an enqueue or a retry (services.resume_queue), at commit
# (%s: the channel, the queue).
NOTIFY_QUEUE = "SELECT pg_notify(%s, %s)"

# --- operator edit: a queued or waiting job's priority or run time --------------------------
# One job, locked and re-checked in the statement: a job a worker claimed (or that finished)
# meanwhile is not edited, whatever the caller read before. NULL leaves a field as it is;
# %(run_now)s makes it runnable now (a delayed one; a due one keeps its time), and ends a
# durable wait it was parked in (its signal no longer awaited: sql/waits.py). The `edited`
# event names what changed, old and new, and who changed it; nothing changed, no event. A job
# that became runnable wakes its queue's idle workers at commit (as an enqueue does) when
# %(notify)s. Returns (id, status, changed) or nothing: not queued or waiting (then which:
# JOB_STATUS).
EDIT_QUEUED_JOB = """
WITH old AS (
    SELECT id, priority, available_at FROM jobs
    WHERE id = %(id)s AND status IN ('queued', 'waiting')
    FOR UPDATE
),
edited AS (
    UPDATE jobs j
    SET priority = coalesce(%(priority)s, j.priority),
        available_at = CASE WHEN %(run_now)s THEN least(j.available_at, now())
                            ELSE coalesce(%(run_at)s, j.available_at) END,
        updated_at = now()
    FROM old
    WHERE j.id = old.id
    RETURNING j.id, j.status, j.queue, j.attempts, j.priority, j.available_at,
              old.priority AS old_priority, old.available_at AS old_available_at
),
changes AS (
    SELECT e.*,
           jsonb_strip_nulls(jsonb_build_object(
               'priority', CASE WHEN e.priority <> e.old_priority
                                THEN jsonb_build_array(e.old_priority, e.priority) END,
               'available_at', CASE WHEN e.available_at <> e.old_available_at
                                    THEN jsonb_build_array(e.old_available_at, e.available_at)
                               END)) AS changed
    FROM edited e
),
event AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'edited', attempts, %(message)s,
           changed || CASE WHEN %(actor)s <> '' THEN jsonb_build_object('actor', %(actor)s)
                           ELSE '{}'::jsonb END,
           now()
    FROM changes WHERE changed <> '{}'::jsonb
),
notified AS (
    SELECT count(pg_notify('""" + NOTIFY_CHANNEL + """', queue)) AS queues
    FROM changes
    WHERE %(notify)s AND status = 'queued' AND available_at <= now()
      AND old_available_at > now()
),
unawaited AS (  -- run now ends a durable wait: a signal sent later must not wake a later park
    UPDATE job_signals s SET awaited_at = NULL
    FROM changes c
    WHERE %(run_now)s AND s.job_id = c.id AND s.awaited_at IS NOT NULL AND s.sent_at IS NULL
)
SELECT id, status, changed, (SELECT queues FROM notified) FROM changes
"""

# --- operator delete -------------------------------------------------------------------------
# One finished job, guarded in the statement: a queued or running job is never deleted,
# whatever the caller checked before. The row lock this DELETE takes also stops new events
# being written for the job (the history's guard takes a KEY SHARE lock on the job of an
# event whose row the writer did not write itself, and every other writer of events updates
# the row), so the next statement, in the same transaction and with a fresh snapshot, sees
# every one of its events. The guard's check that none is left is deferred to the commit.
# The job's searchable text (job_search_text, which has no foreign key: models.JobSearchText
# says why) goes in the same statement, only if the job did.
# Each row: the job's id, and whether its outcome was kept on its row (an event of its history
# that goes with the row: migration 0032).
DELETE_FINISHED_JOB = """
WITH gone AS (
    DELETE FROM jobs WHERE id = %s AND status IN ('succeeded', 'failed', 'cancelled')
    RETURNING id, outcome_event_id IS NOT NULL AS kept_outcome
),
search_text AS (
    DELETE FROM job_search_text s USING gone WHERE s.job_id = gone.id
),
steps AS (  -- its durable steps (no foreign key: models.JobStep)
    DELETE FROM job_steps s USING gone WHERE s.job_id = gone.id
),
signals AS (  -- its signals (no foreign key: models.JobSignal)
    DELETE FROM job_signals s USING gone WHERE s.job_id = gone.id
)
SELECT id, kept_outcome FROM gone
"""
DELETE_JOB_EVENTS = "DELETE FROM job_events WHERE job_id = %s"
# After a DELETE that matched nothing: gone, or not finished (and then which status)?
JOB_STATUS = "SELECT status FROM jobs WHERE id = %s"

# --- periodic schedules: pause and resume (a schedule's jobs: reads.SCHEDULE_JOBS) ----------
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
# Whether a picked job's history still starts with its `created` event (a condition on `jobs`).
JOB_HAS_HISTORY_CONDITION = (
    "EXISTS (SELECT 1 FROM job_history e WHERE e.job_id = jobs.id AND e.kind = 'created')"
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
        unknown_type_at = NULL,  -- a fresh wait for a worker that knows its type
        -- an operator's retry is a decision to run it: no deadline (an expired job would
        -- expire again at once), and not the pending job of a debounce key (one may be)
        expires_at = NULL, debounce_key = NULL
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

# --- test helpers (testing.py) ---------------------------------------------------------------
# drain's "make every queued job due now", narrowed by AND_TYPE_IN / AND_QUEUE_IN (%s: a list).
MAKE_DUE = "UPDATE jobs SET available_at = now() WHERE status = 'queued' AND available_at > now()"
AND_TYPE_IN = " AND type = ANY(%s::text[])"
AND_QUEUE_IN = " AND queue = ANY(%s::text[])"
AND_ID_NOT_IN = " AND NOT id = ANY(%s::bigint[])"  # jobs a durable wait parked in this drain
# expire_lease: a running job's lease deadline in the past, as if its worker stopped renewing.
EXPIRE_LEASE_IF_RUNNING = (
    "UPDATE jobs SET lease_expires_at = now() - interval '1 second'"
    " WHERE id = %s AND status = 'running'"
)
