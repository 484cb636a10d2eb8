"""Worker health writes: a stuck handler noted on its job, a prefetched job's real owner, and
lost worker processes forgotten once nothing names them (worker/stuck.py, worker/renewer.py,
worker/reaper.py)."""
import logging

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
