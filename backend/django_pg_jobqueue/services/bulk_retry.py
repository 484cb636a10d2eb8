"""retry_matching: the dead letter's bulk retry. Every failed job matching a filter goes back
to the queue, in batches, each batch one short transaction.

Each batch is one statement: pick up to `batch_size` failed jobs (SKIP LOCKED, so a job an
operator or the pruner holds is left alone rather than waited for), move them failed ->
queued with the same column changes as `services.retry`, and write their `retried` events.
The guard `status = 'failed'` is repeated in the UPDATE, on the locked row.

The batches walk the matching jobs in id order, each starting after the last id the previous
one saw, so every job is considered once per call: a retried job that fails again at once
(while the call is still running) is not retried a second time, and the call always ends.
"""
from datetime import datetime

from .. import conf, sql
from ..db import atomic as queue_atomic
from ..db import queue_connection


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
    statement = sql.RETRY_FAILED_BATCH.format(
        filters=" ".join(sql.RETRY_FAILED_FILTERS[k] for k in given))
    notify = conf.get().LISTEN_NOTIFY
    params = {**given, "limit": int(batch_size), "after_id": 0,
              "message": f"retried from failed (bulk){f' by {actor}' if actor else ''}"}
    total = 0
    while True:
        with queue_atomic():
            with queue_connection().cursor() as cur:
                cur.execute(statement, params)
                last_id, picked, retried, queues = cur.fetchone()
                if retried and notify:  # wake idle workers on commit, as enqueue does
                    cur.execute(sql.NOTIFY_QUEUES, [sql.NOTIFY_CHANNEL, queues])
        total += retried
        if picked < params["limit"]:  # SKIP LOCKED: fewer than asked means none left unlocked
            return total
        params["after_id"] = last_id
