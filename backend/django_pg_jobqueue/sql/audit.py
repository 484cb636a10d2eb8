"""audit_jobs: invariant checks over the job rows and their event history (audit.py)."""
from ..states import PREFETCH_WORKER_SUFFIX

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
# attempt N+1 started. Events alone can tell only that much: an attempt's run begins at its
# claim (or, prefetched, soon after) and no event marks when its handler returned; but a
# `lease_lost` of attempt N (a renewal, completion, failure or snooze its worker tried, refused:
# it still held the attempt, its handler running or its outcome not yet written) or a stuck
# handler's note (its handler had not returned) written after attempt N+1's start means both
# were under way at once. Not counted: a refusal for a job still waiting in a prefetch buffer
# (its worker id the buffer's) and a refused start (`refused` = `start`): those attempts never
# ran. The attempts' starts (`starts`), each with its lease token, worker and time, come from
# three places (history v2, sql.attempt_start): the outcome event of each ended attempt
# (data.started_at), the job row of the attempt running now, and the `claimed` events written
# before (their own time). A late sign is after the next start when its transaction began
# after the claim's did (`created_at` and `started_at` are both their transaction's now(); a
# refusal always follows the claim that took the lease). One row per overlapping pair, with
# the latest sign of attempt N.
_AUDIT_PREFETCH_ID = f"'{PREFETCH_WORKER_SUFFIX}$'"
AUDIT_OVERLAPPING_ATTEMPTS = """
WITH starts AS (
    SELECT job_id, attempt, worker_id,
           coalesce(data->>'start_lease_token', data->>'lease_token') AS token,
           (data->>'started_at')::timestamptz AS at
    FROM job_history
    WHERE data ? 'started_at'{ids}
    UNION ALL
    SELECT job_id, attempt, worker_id, data->>'lease_token', created_at
    FROM job_history
    WHERE kind = 'claimed'{ids}
    UNION ALL
    SELECT id, attempts, locked_by, lease_token::text, started_at
    FROM jobs
    WHERE status = 'running'{job_ids}
),
claims AS (
    SELECT DISTINCT ON (job_id, token) *  -- a start seen twice (its `claimed` and its outcome)
    FROM starts ORDER BY job_id, token, at
),
ordered AS (
    SELECT job_id, attempt, worker_id, token, at,
           lead(attempt) OVER w AS next_attempt, lead(worker_id) OVER w AS next_worker,
           lead(at) OVER w AS next_at
    FROM claims
    WINDOW w AS (PARTITION BY job_id ORDER BY at, attempt)
)
SELECT DISTINCT ON (c.job_id, c.token)
       c.job_id, c.attempt, c.worker_id, c.next_attempt, c.next_worker, c.next_at,
       e.kind, e.data->>'refused', e.worker_id, e.created_at
FROM ordered c
JOIN job_history e
  ON e.job_id = c.job_id AND e.created_at > c.next_at AND e.data->>'lease_token' = c.token
 AND ((e.kind = 'lease_lost' AND e.data->>'refused' IS DISTINCT FROM 'start'
       AND e.worker_id !~ """ + _AUDIT_PREFETCH_ID + """)
      OR (e.kind = 'log' AND e.data->>'stuck' = 'true'))
WHERE c.next_at IS NOT NULL
ORDER BY c.job_id, c.token, e.id DESC
"""
# Attempts the reaper charged though they never started: a `lease_expired` under a prefetch
# buffer's worker id (since the start of a prefetched job is recorded before its handler runs,
# the reaper gives such a job back uncharged, with a `released` event, instead: lifecycle.REAP).
AUDIT_CHARGED_UNSTARTED = """
SELECT job_id, attempt, worker_id, data->>'next_status', created_at
FROM job_history
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
    " FROM job_history WHERE kind = 'succeeded'{ids}"
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
# data ? 'started_at': the event ends an attempt and carries its start (history v2), whose
# token is its lease_token unless it kept start_lease_token (sql.stale_start).
AUDIT_REPLAY_EVENTS = (
    "SELECT job_id, id, kind, attempt, data->>'lease_token', data->>'next_status',"
    " data ? 'started_at', data->>'start_lease_token'"
    " FROM job_history WHERE true{ids} ORDER BY job_id, id"
)
