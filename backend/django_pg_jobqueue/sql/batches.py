"""Batches of jobs (services/batches.py): members marked at the enqueue, the finish of a batch
whose members all finished (the one statement that decides, once, that its callbacks are due),
the results handed to a callback, the sweep, and the cancel of a batch's pending members.
"""
from .lifecycle import OUTCOMES_NOTIFY

# The statuses a member is finished in (states.TERMINAL), as SQL; jobs_batch_unfinished_idx's
# condition is written the same way, so that the probe below walks that index.
_UNFINISHED = "status NOT IN ('succeeded', 'failed', 'cancelled')"

# --- members ----------------------------------------------------------------------------------
# The jobs an enqueue_batch just created join their batch, in the enqueue's own transaction:
# no worker sees them before they have their batch, so no outcome is written without it.
SET_BATCH_MEMBERS = """
UPDATE jobs SET batch_id = %(batch_id)s WHERE id = ANY(%(ids)s::bigint[]) AND batch_id IS NULL
"""

# --- finish -----------------------------------------------------------------------------------
# Finish each candidate batch (`{candidates}`: a query of `id`s; the three named statements
# after the candidates below fill it) that has no member left
# unfinished: its counts frozen, finished_at set. The guard `finished_at IS NULL` is the one
# writer of this transition: two workers that finished the last two members and settle at once
# both find the batch done, but the second's UPDATE waits for the first's row lock and then
# re-checks the guard on the row the first committed, which no longer holds: it updates nothing.
# Whoever updates the row enqueues the callbacks in the same transaction
# (services.batches.settle): so they are enqueued exactly once, or (a rollback, a crash) not
# at all and the batch stays unfinished for the sweep. Each settle runs after the outcome it
# follows committed, in a new snapshot: the member whose outcome commits last always finds
# the others finished. `missing`: members deleted before the batch finished.
_FINISH_BATCHES_IF_DONE = """
WITH candidates AS ({candidates}),
done AS (
    SELECT b.id FROM job_batches b
    WHERE b.id IN (SELECT id FROM candidates) AND b.finished_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM jobs u WHERE u.batch_id = b.id AND u.""" + _UNFINISHED + """)
),
counts AS (  -- LATERAL: each finished batch's own members (jobs_batch_idx), never all of them
    SELECT done.id, m.succeeded, m.failed, m.cancelled
    FROM done CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
               count(*) FILTER (WHERE j.status = 'failed') AS failed,
               count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled
        FROM jobs j WHERE j.batch_id = done.id) AS m
)
UPDATE job_batches b
SET finished_at = now(), succeeded = c.succeeded, failed = c.failed, cancelled = c.cancelled,
    callback_jobs = '{{}}'::jsonb  -- the callbacks' ids follow in the same transaction
FROM counts c
WHERE b.id = c.id AND b.finished_at IS NULL
RETURNING b.id, b.total, b.succeeded, b.failed, b.cancelled, b.callbacks, b.pass_results,
          b.cancelled_at IS NOT NULL
"""
# Of these batches (%(ids)s), those unfinished with no member left unfinished: a probe in
# autocommit (one round trip, no transaction) before FINISH_BATCHES, which re-checks
# it under the row lock; after most members' outcomes it finds one left and ends there.
BATCHES_DONE_NOW = """
SELECT b.id FROM job_batches b
WHERE b.id = ANY(%(ids)s::bigint[]) AND b.finished_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM jobs u WHERE u.batch_id = b.id AND u.""" + _UNFINISHED + """)
"""
# These batches (%(ids)s).
_THESE = "SELECT unnest(%(ids)s::bigint[]) AS id"
# The batches of these jobs (%(ids)s), after their outcomes: for the rarer ways a member
# finishes (the reaper's, an operator's cancel), not the worker's completion and failure,
# whose statements return the batch id themselves.
_OF_JOBS = """
SELECT DISTINCT batch_id AS id FROM jobs
WHERE id = ANY(%(ids)s::bigint[]) AND batch_id IS NOT NULL
"""
# The sweep (each worker's reaper): unfinished batches none of whose members is unfinished,
# oldest first, up to %(limit)s. It catches what no outcome's settle finished: a worker that
# died between a member's outcome and the settle, two last members finished in transactions
# that could not see each other (an operator's cancel), a member that failed on a path that
# does not settle (a release at shutdown of a cancelled job, a type no worker knows).
_SWEEP = """
    SELECT b.id FROM job_batches b
    WHERE b.finished_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM jobs u WHERE u.batch_id = b.id AND u.""" + _UNFINISHED + """)
    ORDER BY b.id LIMIT %(limit)s
"""
# The statements services/batches.py runs: finish these batches, the batches of these jobs,
# or the sweep's.
FINISH_BATCHES = _FINISH_BATCHES_IF_DONE.format(candidates=_THESE)
FINISH_BATCHES_OF_JOBS = _FINISH_BATCHES_IF_DONE.format(candidates=_OF_JOBS)
FINISH_BATCHES_SWEEP = _FINISH_BATCHES_IF_DONE.format(candidates=_SWEEP)
# The callbacks a finished batch enqueued (%(jobs)s: {"on_complete": id, ...}).
SET_BATCH_CALLBACK_JOBS = "UPDATE job_batches SET callback_jobs = %(jobs)s::jsonb WHERE id = %(id)s"

# The results of a batch's members, in the order they were enqueued (their ids), NULL for one
# that did not succeed; `total`: their JSON's size in bytes. Over %(max_bytes)s
# (JOB_MAX_RESULT_BYTES) no result is sent, only the total (as DEPENDENCY_RESULTS).
BATCH_RESULTS = """
SELECT CASE WHEN total <= %(max_bytes)s THEN result END, total
FROM (SELECT id, result, coalesce(sum(octet_length(result)) OVER (), 0) AS total
      FROM (SELECT id, CASE WHEN status = 'succeeded' THEN result::text END AS result
            FROM jobs WHERE batch_id = %(id)s) AS members) AS results
ORDER BY id
"""

# --- prune -------------------------------------------------------------------------------------
# The pruner (services/pruning.py): batches that finished more than %(age)s seconds ago and
# have no member left (each was pruned with its own retention, or deleted), up to %(limit)s,
# oldest first along the primary key (batches finish about in the order they were made);
# a member's row is found by jobs_batch_idx. A batch with a member kept stays, readable.
PRUNE_FINISHED_BATCHES = """
DELETE FROM job_batches WHERE id IN (
    SELECT b.id FROM job_batches b
    WHERE b.finished_at < now() - make_interval(secs => %(age)s)
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.batch_id = b.id)
    ORDER BY b.id LIMIT %(limit)s)
"""

# --- progress ---------------------------------------------------------------------------------
# A batch's members counted by status (jobs_batch_idx).
BATCH_STATUS_COUNTS = "SELECT status, count(*) FROM jobs WHERE batch_id = %s GROUP BY status"

# --- cancel -----------------------------------------------------------------------------------
# Cancel a batch's pending members (queued or waiting: none has started) at once, each with
# its `cancelled` event, and wake their waiters (OUTCOMES_NOTIFY); running members go on.
# The batch row is locked first (FOR UPDATE): two cancels of one batch run one after the other.
# Returns the cancelled jobs (has_dependants: their own dependants to settle next); none when
# the batch has no pending member; no row at all when the batch does not exist.
CANCEL_BATCH_PENDING = """
WITH batch AS (
    UPDATE job_batches SET cancelled_at = coalesce(cancelled_at, now())
    WHERE id = %(id)s
    RETURNING id, finished_at
),
cancelled AS (
    UPDATE jobs j SET status = 'cancelled', finished_at = now(), updated_at = now()
    FROM batch
    WHERE j.batch_id = batch.id AND j.status IN ('queued', 'waiting')
    RETURNING j.id, j.attempts, j.has_dependants
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'cancelled', attempts, %(message)s,
           jsonb_build_object('reason', 'batch_cancelled', 'batch_id', %(id)s::bigint), now()
    FROM cancelled
),
notified AS (
    """ + OUTCOMES_NOTIFY.format(rows="cancelled") + """
)
SELECT b.id, b.finished_at IS NOT NULL, c.id, c.has_dependants
FROM batch b LEFT JOIN cancelled c ON true
WHERE (SELECT count(*) FROM notified) >= 0  -- evaluated once, so that the NOTIFY is sent
ORDER BY c.id
"""
