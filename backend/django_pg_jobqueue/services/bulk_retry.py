"""retry_matching: the dead letter's bulk retry. Every failed job matching a filter goes back
to the queue, in batches, each batch one short transaction.

Each batch is one statement: pick up to `batch_size` failed jobs (SKIP LOCKED, so a job an
operator or the pruner holds is left alone rather than waited for), move them failed ->
queued with the same column changes as `services.retry`, and write their `retried` events.
The guard `status = 'failed'` is repeated in the UPDATE, on the locked row. A job whose
history the prune dropped with its partition (it is past its retention) is not picked.

The batches walk the matching jobs in id order, each starting after the last id the previous
one saw, so every job is considered once per call: a retried job that fails again at once
(while the call is still running) is not retried a second time, and the call always ends.
"""
from datetime import datetime

from .. import conf, sql
from ..db import atomic as queue_atomic
from ..db import queue_connection

RETRY_FAILED_BATCH = """
WITH picked AS (
    SELECT id FROM jobs
    WHERE status = 'failed' AND id > %(after_id)s {filters}
      AND """ + sql.JOB_HAS_HISTORY_CONDITION + """
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
retried AS (
    UPDATE jobs j
    SET status = 'queued', available_at = now(), updated_at = now(), finished_at = NULL,
        cancel_requested_at = NULL, result = NULL, progress_percent = NULL,
        progress_message = '', max_attempts = GREATEST(j.max_attempts, j.attempts + 1)
    FROM picked
    WHERE j.id = picked.id AND j.status = 'failed'
    RETURNING j.id, j.attempts, j.queue
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'retried', attempts, %(message)s, jsonb_build_object('bulk', true), now()
    FROM retried
)
SELECT (SELECT max(id) FROM picked), (SELECT count(*) FROM picked),
       (SELECT count(*) FROM retried), (SELECT array_agg(DISTINCT queue) FROM retried)
"""

_FILTERS = {
    "type": "AND type = %(type)s",
    "error_contains": "AND strpos(lower(coalesce(last_error, '')), lower(%(error_contains)s)) > 0",
    "finished_after": "AND finished_at >= %(finished_after)s",
    "finished_before": "AND finished_at < %(finished_before)s",
}


def retry_matching(*, type: str | None = None, error_contains: str | None = None,
                   finished_after: datetime | None = None, finished_before: datetime | None = None,
                   batch_size: int = 500, actor: str = "") -> int:
    """Retry every failed job matching all the given filters; return how many were retried.

    - `type`: the job type, exactly.
    - `error_contains`: a case-insensitive substring of the job's last error.
    - `finished_after` (inclusive) / `finished_before` (exclusive): when the job failed.

    No filter retries every failed job. Like `services.retry`, attempts already spent stay
    counted and max_attempts grows by one where none are left. Raises ValueError for a bad
    batch size or an empty time range.
    """
    if int(batch_size) < 1:
        raise ValueError("batch_size must be at least 1")
    if finished_after and finished_before and finished_after >= finished_before:
        raise ValueError("finished_after must be before finished_before")
    given = {"type": type, "error_contains": error_contains, "finished_after": finished_after,
             "finished_before": finished_before}
    given = {k: v for k, v in given.items() if v not in (None, "")}
    statement = RETRY_FAILED_BATCH.format(filters=" ".join(_FILTERS[k] for k in given))
    notify = conf.get().LISTEN_NOTIFY
    params = {**given, "limit": int(batch_size), "after_id": 0,
              "message": f"retried from failed (bulk){f' by {actor}' if actor else ''}"}
    total = 0
    while True:
        with queue_atomic():
            with queue_connection().cursor() as cur:
                # No job_events partition dropped under this batch (sql.EVENTS_HISTORY_LOCK):
                # a job whose history is gone (past its retention) is not picked.
                cur.execute(sql.EVENTS_HISTORY_LOCK_SHARED)
                cur.execute(statement, params)
                last_id, picked, retried, queues = cur.fetchone()
                if retried and notify:  # wake idle workers on commit, as enqueue does
                    cur.execute("SELECT pg_notify(%s, q) FROM unnest(%s::text[]) AS q",
                                [sql.NOTIFY_CHANNEL, queues])
        total += retried
        if picked < params["limit"]:  # SKIP LOCKED: fewer than asked means none left unlocked
            return total
        params["after_id"] = last_id
