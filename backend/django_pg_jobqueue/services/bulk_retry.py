"""The retry of failed (and cancelled) jobs, in one statement (sql.RETRY_JOBS,
sql.RETRY_FAILED_BATCH: the same column changes, event and NOTIFY, only the picking differs).

- retry_jobs: the given jobs, in one statement; services.retry is retry_jobs of one job.
  A job enqueued after others whose dependencies have not all succeeded goes back to
  `waiting` (settled again as they finish); one that waits for a failed or cancelled job
  that is not retried with it is not retried (it could only be cancelled again).
- retry_ids: the same, for POST /jobs/retry/'s `ids`, with the ids it refused (each on the
  database its id names).
- retry_matching: the dead letter's bulk retry. Every failed job matching a filter goes back to
  the queue, in batches, each batch one short transaction. The batches walk the matching jobs
  in id order, each starting after the last id the previous one saw, so every job is
  considered once per call: a retried job that fails again at once (while the call is still
  running) is not retried a second time, and the call always ends. It runs on one database:
  bulk_actions.retry_matching_everywhere runs it on each of JOB_SHARDS.
"""
from collections.abc import Iterable
from datetime import datetime

from .. import conf, shards, sql
from ..db import atomic as queue_atomic
from ..db import on_database, queue_connection
from ..exceptions import InvalidJobArgument
from ..states import OperatorAction
from . import audit_log, dependencies


def _params(*, bulk: bool, actor: str) -> dict:
    by = f" by {actor}" if actor else ""
    return {"suffix": f" (bulk){by}" if bulk else by, "data": '{"bulk": true}' if bulk else "{}",
            "notify": conf.get().LISTEN_NOTIFY}


def retry_jobs(ids: Iterable[int], *, actor: str = "") -> list[int]:
    """Put each of these jobs that is failed or cancelled back in the queue, runnable now, in
    one statement; return the ids retried, in id order. Attempts already spent stay counted;
    if none are left, max_attempts grows by one. Idle workers are woken at commit."""
    with queue_atomic(), queue_connection().cursor() as cur:
        # No job_events partition is dropped under this retry (sql.EVENTS_HISTORY_LOCK): a job
        # whose history is gone (past its retention, about to be pruned) is not picked.
        cur.execute(sql.EVENTS_HISTORY_LOCK_SHARED)
        cur.execute(sql.RETRY_JOBS, {"ids": list(ids), **_params(bulk=False, actor=actor)})
        _, _, retried, _, waiting = cur.fetchone()
        audit_log.record_jobs(OperatorAction.RETRY, retried or [], actor=actor)
    if waiting:  # after the commit: a later statement sees what finished meanwhile
        dependencies.settle_jobs(waiting)
    return list(retried or [])


def retry_ids(ids: Iterable[int], *, actor: str = "") -> tuple[int, list[int]]:
    """retry_jobs, for a request's ids: how many were retried, and the ids refused (unknown,
    or neither failed nor cancelled), duplicates once, in the order given. With JOB_SHARDS,
    the ids of each database in one statement there (a job and those it waits for share a
    database: shards.py)."""
    unique = list(dict.fromkeys(ids))
    by_database: dict[str, list[int]] = {}
    for job_id in unique:
        by_database.setdefault(shards.alias_for_job_id(job_id), []).append(job_id)
    retried: set[int] = set()
    for alias, some in by_database.items():
        with on_database(alias):
            retried.update(retry_jobs(some, actor=actor))
    return len(retried), [job_id for job_id in unique if job_id not in retried]


def _filters_as_data(given: dict) -> dict:
    """The dead letter's filters as the audit log keeps them (times as ISO 8601 text)."""
    return {"filter": {k: v.isoformat() if isinstance(v, datetime) else v
                       for k, v in given.items()}}


def retry_matching(*, type: str | None = None, error_contains: str | None = None,
                   finished_after: datetime | None = None, finished_before: datetime | None = None,
                   batch_size: int = 500, actor: str = "") -> int:
    """Retry every failed job matching all the given filters; return how many were retried.

    - `type`: the job type, exactly.
    - `error_contains`: a case-insensitive substring of the job's last error.
    - `finished_after` (inclusive) / `finished_before` (exclusive): when the job failed.

    No filter retries every failed job. Like `services.retry`, attempts already spent stay
    counted and max_attempts grows by one where none are left. Raises InvalidJobArgument (a
    ValueError) naming `batch_size` or `finished_before` for a bad batch size or an empty time
    range.
    """
    if int(batch_size) < 1:
        raise InvalidJobArgument("batch_size", "must be at least 1")
    if finished_after and finished_before and finished_after >= finished_before:
        raise InvalidJobArgument("finished_before", "must be later than finished_after")
    given = {"type": type, "error_contains": error_contains, "finished_after": finished_after,
             "finished_before": finished_before}
    given = {k: v for k, v in given.items() if v not in (None, "")}
    statement = sql.RETRY_FAILED_BATCH.format(
        filters=" ".join(sql.RETRY_FAILED_FILTERS[k] for k in given))
    params = {**given, "limit": int(batch_size), "after_id": 0, **_params(bulk=True, actor=actor)}
    total = 0
    while True:
        # One batch: one statement (its text varies with the filters: not prepared), its
        # NOTIFY delivered at its commit.
        with queue_atomic(), queue_connection().cursor() as cur:
            cur.execute(sql.EVENTS_HISTORY_LOCK_SHARED)  # as in retry_jobs
            cur.execute(statement, params)
            last_id, picked, retried, _, waiting = cur.fetchone()
            audit_log.record_jobs(OperatorAction.RETRY, retried or [], actor=actor,
                                  data={"bulk": True, **_filters_as_data(given)})
        if waiting:
            dependencies.settle_jobs(waiting)
        total += len(retried or [])
        if picked < params["limit"]:  # SKIP LOCKED: fewer than asked means none left unlocked
            return total
        params["after_id"] = last_id
