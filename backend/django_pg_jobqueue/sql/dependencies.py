"""Jobs enqueued after others (services/dependencies.py): the edges and the `waiting` state at
enqueue, the settling of waiting jobs once what they wait for finished, and the sweep that
catches what no completion settled.
"""
from .enqueue import NOTIFY_CHANNEL
from .lifecycle import OUTCOMES_NOTIFY

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
# {candidates}: a query of `id`s of jobs to consider; the three named statements at the end
# of this section (SETTLE_DEPENDANTS, SETTLE_THESE_WAITING, SETTLE_WAITING_SWEEP) fill it.
_SETTLE_WAITING = """
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
),
outcomes AS (  -- those cancelled: their waiters wake (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM settled WHERE status = 'cancelled') AS o") + """
)
SELECT s.id, s.status, (SELECT queues FROM notified) FROM settled s
WHERE (SELECT count(*) FROM outcomes) >= 0  -- evaluated once, so that the NOTIFY is sent
ORDER BY s.id
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
_THESE = "SELECT unnest(%(ids)s::bigint[]) AS id"
# The waiting dependants of these jobs (%(ids)s), after they finished.
_BY_DEPENDENCY = (
    "SELECT job_id AS id FROM job_dependencies WHERE depends_on_id = ANY(%(ids)s::bigint[])"
)
# The sweep (each worker's reaper): waiting jobs that can be settled now (every job they wait
# for finished or is gone, or one they must not outlive failed or was cancelled), oldest
# first, up to %(limit)s: exactly those _SETTLE_WAITING moves, so a full batch always makes
# progress. It catches what no completion settled: a worker that died between its completion
# and the settle, a job the reaper failed or a shutdown cancelled. Walks jobs_waiting_idx:
# its cost is the waiting jobs, not the table.
_SWEEP = """
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
# The statements services/dependencies.py runs: settle the dependants of jobs that just
# finished, these waiting jobs, or the sweep's.
SETTLE_DEPENDANTS = _SETTLE_WAITING.format(candidates=_BY_DEPENDENCY)
SETTLE_THESE_WAITING = _SETTLE_WAITING.format(candidates=_THESE)
SETTLE_WAITING_SWEEP = _SETTLE_WAITING.format(candidates=_SWEEP)
