"""Worker health writes: a stuck handler noted on its job, a prefetched job's start (its
executor named its owner), and lost worker processes forgotten once nothing names them
(worker/stuck.py, worker/executor.py, worker/reaper.py); the maintenance leader's lease and the stager's wake-ups (worker/leader.py,
worker/stager.py); a supervisor's one heartbeat for all its children, and their rows
removed once they stopped (worker/hostbeat.py)."""
import json
import logging
from datetime import timedelta

from .. import db, sql
from ..db import queue_connection

log = logging.getLogger("django_pg_jobqueue.worker")


def record_stuck_handler(job_id: int, *, attempt: int, worker_id: str, message: str,
                         seconds_past_timeout: float, lease_token=None) -> None:
    """Note on a job's timeline that an attempt's handler (the claim of `lease_token`) runs
    past its timeout plus grace. Not fenced by lease: the timeout already ended the attempt;
    this only says its handler has not returned."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.STUCK_HANDLER_EVENT, {
            "id": job_id, "attempt": attempt, "worker_id": worker_id, "message": message,
            "seconds": seconds_past_timeout,
            "token": None if lease_token is None else str(lease_token)})


def adopt_prefetched(items: list[tuple[int, object, str]]) -> set[int]:
    """Name each (job id, lease token, worker id)'s executor thread the owner of that
    prefetched job, for the jobs still running under that lease (sql.ADOPT_PREFETCHED_IF_RUNNING);
    return the ids adopted. Committed before their handlers start: from then on a lease expiry
    charges the attempt, before it none is charged (sql.REAP)."""
    if not items:
        return set()
    # One JSON array: cheaper to send than three arrays, which psycopg dumps item by item.
    rows = db.fetch_all(sql.ADOPT_PREFETCHED_IF_RUNNING, {"batch": json.dumps(
        [[job_id, str(token), worker_id] for job_id, token, worker_id in items])})
    return {row[0] for row in rows}


# How long a forgotten lost worker stays in the workers page's history (job_lost_workers).
LOST_WORKERS_KEPT_SECONDS = 24 * 3600


def forget_lost_workers(*, silent_seconds: float) -> int:
    """Move the rows of worker processes silent longer than `silent_seconds` whose threads
    no running job names any more to the lost workers' history (pruning entries older than
    LOST_WORKERS_KEPT_SECONDS); return how many."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.FORGET_LOST_WORKERS, {"silent_seconds": float(silent_seconds),
                                              "kept_seconds": float(LOST_WORKERS_KEPT_SECONDS)})
        forgotten = cur.fetchone()[0]
        if forgotten:
            log.info("forgot %d lost worker process(es): silent and holding no job", forgotten)
        return forgotten


def count_reaped(rows) -> None:
    """Count, on each worker process's row, the jobs the reaper took back from its threads:
    `rows` are (job id, new status, locked_by) of the reap ("queued" and "released":
    requeued; "failed": failed for good; a cancel that won is neither)."""
    counts: dict[str, list[int]] = {}
    for _, status, locked_by in rows:
        if not locked_by or status not in ("queued", "released", "failed"):
            continue
        process = locked_by.rsplit("-", 1)[0]
        pair = counts.setdefault(process, [0, 0])
        pair[status == "failed"] += 1
    if counts:
        _count(list(counts), [c[0] for c in counts.values()], [c[1] for c in counts.values()])


def count_taken_back(process_id: str, *, requeued: int, failed: int) -> None:
    """Count, on a dead process's row, the jobs its supervisor took back at once
    (lifecycle.settle_dead_process): requeued (retried or released) and failed for good."""
    if requeued or failed:
        _count([process_id], [requeued], [failed])


def _count(ids: list[str], requeued: list[int], failed: list[int]) -> None:
    with queue_connection().cursor() as cur:
        cur.execute(sql.COUNT_REAPED_BY_PROCESS,
                    {"ids": ids, "requeued": requeued, "failed": failed})


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


def heartbeat_many(beats: list[dict], *, supervisor_pid: int) -> None:
    """Upsert, in one statement (sql.HEARTBEAT_MANY), the rows of a supervisor's live children,
    each with its own figures: one dict per child with the keyword arguments of
    services.heartbeat() (`id` for the process id), less supervisor_pid, which is the caller's."""
    if not beats:
        return
    with queue_connection().cursor() as cur:
        cur.execute(sql.HEARTBEAT_MANY, {
            "ids": [b["id"] for b in beats], "hostnames": [b["hostname"] for b in beats],
            "pids": [b["pid"] for b in beats], "threads": [b["threads"] for b in beats],
            "queues": [json.dumps(b["queues"]) for b in beats],
            "rss_bytes": [b["rss_bytes"] for b in beats],
            "jobs_done": [b["jobs_done"] for b in beats],
            "stuck_handlers": [b["stuck_handlers"] for b in beats],
            "heartbeat_interval_seconds": [b["heartbeat_interval_seconds"] for b in beats],
            "supervisor_pid": supervisor_pid})


def remove_stopped_workers(process_ids: list[str]) -> int:
    """Delete the rows of worker processes that stopped gracefully
    (sql.REMOVE_STOPPED_WORKERS); return how many."""
    if not process_ids:
        return 0
    with queue_connection().cursor() as cur:
        cur.execute(sql.REMOVE_STOPPED_WORKERS, {"ids": list(process_ids)})
        return cur.rowcount
