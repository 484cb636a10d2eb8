"""Waiting for outcomes (waiting.py), results passed along and durable steps
(services/workflows.py). Each waiter's read is one short autocommit statement: a waiter never
holds a transaction open.
"""
from .lifecycle import OUTCOMES_CHANNEL

# --- waiting for outcomes ----------------------------------------------------------------------
# Woken by OUTCOMES_NOTIFY (sql/lifecycle.py: part of the completion and failure statements).
LISTEN_OUTCOMES = f"LISTEN {OUTCOMES_CHANNEL}"
# A job's outcome as a waiter reads it: the result as JSON text (decoded by the waiter),
# NULL while the job has none yet.
JOB_OUTCOME = "SELECT status, result::text, last_error FROM jobs WHERE id = %s"
# An outcome written outside the worker's statements (an operator's cancel of a queued or
# waiting job) wakes its waiters too (%s: the finished ids, comma-separated).
NOTIFY_OUTCOMES = f"SELECT pg_notify('{OUTCOMES_CHANNEL}', %s)"

# --- results passed along ----------------------------------------------------------------------
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

# --- durable steps -------------------------------------------------------------------------------
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
