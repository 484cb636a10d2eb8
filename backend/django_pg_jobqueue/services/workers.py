"""Worker health writes: a stuck handler noted on its job, a prefetched job's real owner, and
lost worker processes forgotten once nothing names them (worker/stuck.py, worker/renewer.py,
worker/reaper.py); the maintenance leader's lease and the stager's wake-ups (worker/leader.py,
worker/stager.py)."""
import logging
from datetime import timedelta

from .. import sql
from ..db import queue_connection

log = logging.getLogger("django_pg_jobqueue.worker")


def record_stuck_handler(job_id: int, *, attempt: int, worker_id: str, message: str,
                         seconds_past_timeout: float) -> None:
    """Note on a job's timeline that an attempt's handler runs past its timeout plus grace.
    Not fenced by lease: the timeout already ended the attempt; this only says its handler
    has not returned."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.STUCK_HANDLER_EVENT, {
            "id": job_id, "attempt": attempt, "worker_id": worker_id, "message": message,
            "seconds": seconds_past_timeout})


def adopt_prefetched(items: list[tuple[int, object, str]]) -> int:
    """Record the executor thread running each (job id, lease token, worker id) as its owner,
    for the jobs still running under that lease; return how many rows changed."""
    if not items:
        return 0
    with queue_connection().cursor() as cur:
        cur.execute(sql.ADOPT_PREFETCHED_IF_RUNNING, {
            "ids": [i[0] for i in items], "tokens": [str(i[1]) for i in items],
            "worker_ids": [i[2] for i in items]})
        return cur.rowcount


def forget_lost_workers(*, silent_seconds: float) -> int:
    """Delete the rows of worker processes silent longer than `silent_seconds` whose threads
    no running job names any more; return how many."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.FORGET_LOST_WORKERS, {"silent_seconds": float(silent_seconds)})
        if cur.rowcount:
            log.info("forgot %d lost worker process(es): silent and holding no job", cur.rowcount)
        return cur.rowcount


def take_leadership(role: str, holder: str, lease_seconds: float) -> bool:
    """Take or renew the lease of `role` for worker process `holder` if it is free, expired or
    already its own (sql.TAKE_LEADERSHIP_IF_FREE_OR_MINE): whether `holder` holds it now."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.TAKE_LEADERSHIP_IF_FREE_OR_MINE,
                    {"role": role, "holder": holder, "lease_seconds": lease_seconds})
        return cur.fetchone() is not None


def resign_leadership(role: str, holder: str) -> None:
    """Give the lease of `role` up, if `holder` holds it (a graceful stop)."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.RESIGN_LEADERSHIP, {"role": role, "holder": holder})


def notify_newly_due_queues(since):
    """NOTIFY, once each, the queues with jobs that became due after `since` (the database
    clock; None: two seconds ago): returns (the database clock now, how many queues)."""
    with queue_connection().cursor() as cur:
        if since is None:
            cur.execute(sql.DATABASE_NOW)
            (now,) = cur.fetchone()
            since = now - timedelta(seconds=2)
        cur.execute(sql.NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS, {"since": since})
        return cur.fetchone()
