"""Worker-side transitions: renew, progress, log, complete, fail, release, snooze; and the
worker process's heartbeat.

Every one presents the lease token its claim stamped, in the statement's WHERE clause. A
write that matches no row means the lease was lost (the reaper requeued the job, an operator
cancelled it, another worker reclaimed it): the write is refused, never applied.
"""
import json
import logging
import time
import uuid
from dataclasses import dataclass

from django.db import OperationalError

from .. import conf, db, retries, sql, storable
from ..db import queue_connection
from ..exceptions import LeaseLost
from ..retries import RetryPolicy
from ..states import PREFETCH_WORKER_SUFFIX
from .finishing import after_ended
from .workers import count_taken_back

log = logging.getLogger("django_pg_jobqueue.lifecycle")


def _backoff_params() -> dict:
    c = conf.get()
    return {
        "retry_base": c.RETRY_BASE_SECONDS,
        "retry_max": c.RETRY_MAX_SECONDS,
        "retry_jitter": c.RETRY_JITTER,
    }


@dataclass
class Completion:
    job_id: int
    lease_token: uuid.UUID
    worker_id: str
    result: object = None
    job_type: str = ""  # for the worker's log line only
    attempt: int = 0
    result_json: str | None = None  # `result` already encoded (storable.encode_result)


def complete_many(completions: list[Completion]) -> tuple[list[tuple[int, str, float]], list[Completion]]:
    """Record successes in one statement, each guarded by its own lease token.

    Returns (done, refused): done rows are (job id, final status, run seconds); refused are
    the completions whose lease was lost, so their result was discarded (and recorded). A
    completion in neither was not written because another transaction holds a lock on its
    row (sql.COMPLETE_MANY skips it rather than wait): still held, to write again.
    A result not yet encoded is encoded here (storable.encode_result: UnstorableResult when it
    cannot be stored). One row the database refuses fails the whole statement: the worker's
    completer then writes the batch row by row (worker/completer.py).
    """
    if not completions:
        return [], []
    # One JSON document for the whole batch, where four Python-side array parameters cost
    # more than the statement's own server time. A lease token goes as its 32 hex digits,
    # which PostgreSQL's uuid input takes as well as the hyphenated form, need no JSON
    # escaping, and cost half of str(UUID) (a caller's text token goes as it is); each
    # worker id is encoded once per batch (the batch holds a few, repeated).
    worker_ids = {w: json.dumps(w) for w in {c.worker_id for c in completions}}
    rows_json = []
    for c in completions:
        lease_token, result = c.lease_token, c.result_json
        if result is None:
            result = storable.encode_result(c.result)
        token = (f"{lease_token.int:032x}" if isinstance(lease_token, uuid.UUID)
                 else str(lease_token))
        rows_json.append(f'[{int(c.job_id)},"{token}",{worker_ids[c.worker_id]},{result}]')
    rows = db.fetch_all(sql.COMPLETE_MANY, {"batch": "[" + ",".join(rows_json) + "]"})
    # After the commit of the outcomes, each a statement of its own: it must see the edges of
    # enqueues it waited for, and the last member of a batch finds none unfinished.
    after_ended([row[0] for row in rows if row[1] != "busy"],
                with_dependants=[row[0] for row in rows if row[3]],
                batch_ids=[row[4] for row in rows if row[4] is not None])
    done = [row[:3] for row in rows if row[1] != "busy"]
    refused: list[Completion] = []
    if len(rows) < len(completions):  # a row for each completion, written or busy: none refused
        answered = {row[0] for row in rows}
        refused = [c for c in completions if c.job_id not in answered]
    record_leases_lost([(c.job_id, c.lease_token, c.worker_id, c.attempt) for c in refused],
                       "complete", "late result discarded: the lease was lost before completion")
    return done, refused


def complete(job_id: int, lease_token, *, worker_id: str, result=None) -> str:
    """Complete a running job if it still holds `lease_token`; raise LeaseLost otherwise.
    While another transaction holds a lock on its row, tried again until it is written."""
    delay = 0.01
    while True:
        done, refused = complete_many([Completion(job_id, lease_token, worker_id, result)])
        if refused:
            raise LeaseLost(job_id, lease_token, "complete")
        if done:
            return done[0][1]
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def fail(job_id: int, lease_token, *, worker_id: str, error: str, traceback: str | None = None,
         permanent: bool = False, reason: str = "error", policy: RetryPolicy | None = None,
         exception: BaseException | None = None, attempt: int = 0) -> tuple[str, float | None]:
    """Fail the attempt if it still holds `lease_token`: queued again after the retry policy's
    delay while attempts remain (unless `permanent`, or the policy gives up on `exception`),
    else failed. Returns (new status, delay seconds). `policy`: the job type's (the row's own
    wins over it, in the statement); a function policy's delay is computed here, from
    `attempt` and `exception`. The error and traceback are made storable first (storable.py:
    cleaned and capped)."""
    error = storable.error_message(error)
    params = {
        "id": job_id, "token": lease_token, "worker_id": worker_id, "error": error,
        "traceback": storable.traceback_text(traceback) if traceback else None,
        "permanent": permanent, "reason": reason, **_backoff_params(),
        "policy": json.dumps(policy.as_data()) if policy is not None else None,
        "function_delay": policy.function_delay(attempt, exception) if policy is not None
        and policy.function is not None and not permanent else None,
        "error_classes": retries.exception_names(exception),
    }
    with queue_connection().cursor() as cur:
        cur.execute(sql.FAIL, params)
        row = cur.fetchone()
    if row is None:
        record_lease_lost(job_id, lease_token, worker_id, "fail",
                          f"late failure discarded: the lease was lost ({error[:200]})")
        raise LeaseLost(job_id, lease_token, "fail")
    if row[1] != "queued":  # failed for good, or cancelled: its dependants and batch next
        after_ended([job_id], with_dependants=[job_id] if row[5] else [], batch_ids=[row[6]])
    return row[1], row[3]


def unknown_type_error(job_type: str) -> str:
    """Why a job whose type no worker knew in JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS failed."""
    return (f"no handler registered for job type {job_type!r} in any worker that claimed it "
            f"for {conf.get().UNKNOWN_TYPE_FAIL_AFTER_SECONDS}s "
            "(JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS)")


def release_unknown_type(job_id: int, lease_token, *, worker_id: str, job_type: str) -> str:
    """Give back a job whose type this worker has no handler for, without charging the
    attempt (sql.RELEASE_UNKNOWN_TYPE), for a worker that knows the type; or, once no worker
    has known it for JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS, fail it for good. Returns the new
    status (queued, failed, or cancelled when a cancel was requested); LeaseLost if the
    lease was lost."""
    c = conf.get()
    params = {
        "id": job_id, "token": lease_token, "worker_id": worker_id,
        "give_up_seconds": c.UNKNOWN_TYPE_FAIL_AFTER_SECONDS,
        "delay_seconds": 0.0,
        "message": f"this worker has no handler for job type {job_type!r}: given back, without "
                   "charging the attempt, for a worker that has one",
        "error": unknown_type_error(job_type),
    }
    with queue_connection().cursor() as cur:
        cur.execute(sql.RELEASE_UNKNOWN_TYPE, params)
        row = cur.fetchone()
    if row is None:
        raise LeaseLost(job_id, lease_token, "release")
    if row[1] != "queued":  # failed for good (no worker knows its type), or cancelled
        after_ended([job_id])
    return row[1]


def _requeue_uncharged(items: list[tuple[int, uuid.UUID, str]], *, kind: str, message: str,
                       delay_seconds: float) -> list[int]:
    if not items:
        return []
    params = {
        "ids": [i[0] for i in items], "tokens": [i[1] for i in items],
        "worker_ids": [i[2] for i in items], "kind": kind, "message": message,
        "delay_seconds": float(delay_seconds),
    }
    with queue_connection().cursor() as cur:
        cur.execute(sql.REQUEUE_UNCHARGED, params)
        rows = cur.fetchall()
    after_ended([row[0] for row in rows if row[1] == "cancelled"])  # its cancel was requested
    return [row[0] for row in rows]


def release_many(items: list[tuple[int, uuid.UUID, str]], *, message: str = "worker shutting down") -> list[int]:
    """Give running jobs back to the queue at once, without charging the attempt (shutdown)."""
    return _requeue_uncharged(items, kind="released", message=message, delay_seconds=0)


def snooze(job_id: int, lease_token, *, worker_id: str, seconds: float) -> None:
    """Back to queued, runnable in `seconds`, without spending an attempt."""
    if not _requeue_uncharged([(job_id, lease_token, worker_id)], kind="snoozed",
                              message=f"snoozed for {seconds:g}s", delay_seconds=seconds):
        raise LeaseLost(job_id, lease_token, "snooze")


@dataclass
class Renewal:
    job_id: int
    cancel_requested: bool
    timed_out: bool
    busy: bool = False  # not renewed: another transaction holds a lock on the row


def renew_many(leases: list[tuple[int, uuid.UUID]], *, lease_seconds: float | None = None) -> dict[int, Renewal]:
    """Extend the leases still held; jobs missing from the answer were lost."""
    if not leases:
        return {}
    params = {
        "ids": [l[0] for l in leases], "tokens": [l[1] for l in leases],
        "lease_seconds": float(lease_seconds or conf.get().LEASE_SECONDS),
    }
    return {row[0]: Renewal(*row) for row in db.fetch_all(sql.RENEW_MANY, params)}


def renew_locked(leases: list[tuple[int, uuid.UUID]], *, wait_seconds: float,
                 lease_seconds: float | None = None) -> dict[int, Renewal]:
    """Renew leases whose rows renew_many found locked by another transaction, waiting up to
    `wait_seconds` for the locks (sql.RENEW_MANY_WAITING): the renewed ones. None renewed
    when the wait ran out: still busy, not lost (the next pass asks again)."""
    if not leases:
        return {}
    params = {
        "ids": [l[0] for l in leases], "tokens": [l[1] for l in leases],
        "lease_seconds": float(lease_seconds or conf.get().LEASE_SECONDS),
    }
    try:
        with db.atomic():
            db.fetch_all(sql.LOCK_TIMEOUT_LOCAL, [f"{max(1, int(wait_seconds * 1000))}ms"])
            rows = db.fetch_all(sql.RENEW_MANY_WAITING, params)
    except Exception as exc:  # psycopg's own when prepared, Django's around it otherwise
        if LOCK_NOT_AVAILABLE not in (getattr(exc, "sqlstate", None),
                                      getattr(exc.__cause__, "sqlstate", None)):
            raise
        return {}
    return {row[0]: Renewal(*row) for row in rows}


LOCK_NOT_AVAILABLE = "55P03"


def record_progress(job_id: int, lease_token, *, worker_id: str, percent: int | None,
                    message: str = "") -> None:
    if percent is not None:
        percent = max(0, min(100, int(percent)))
    params = {"id": job_id, "token": lease_token, "worker_id": worker_id, "percent": percent,
              "message": storable.progress_message(message)}
    with queue_connection().cursor() as cur:
        cur.execute(sql.PROGRESS, params)
        if cur.fetchone() is None:
            raise LeaseLost(job_id, lease_token, "progress")


def log_message(job_id: int, lease_token, *, worker_id: str, message: str, data: dict | None = None) -> None:
    """A `log` event. The message is cleaned and capped; `data` must be JSON (ValueError naming
    it otherwise), its strings cleaned (storable.log_data)."""
    params = {"id": job_id, "token": lease_token, "worker_id": worker_id,
              "message": storable.log_message(message), "data": storable.log_data(data)}
    with queue_connection().cursor() as cur:
        cur.execute(sql.LOG, params)
        if cur.fetchone() is None:
            raise LeaseLost(job_id, lease_token, "log")


def record_lease_lost(job_id: int, lease_token, worker_id: str, action: str, message: str,
                      attempt: int = 0) -> None:
    """Leave a `lease_lost` event: a stale worker's write was refused."""
    record_leases_lost([(job_id, lease_token, worker_id, attempt)], action, message)


def record_leases_lost(lost: list[tuple[int, object, str, int]], action: str,
                       message: str) -> None:
    """Leave a `lease_lost` event for each (job id, lease token, worker id, attempt) in `lost`,
    all refused the same `action` with the same `message`, in one statement (sql.LEASES_LOST).

    Each event is a trace, never a transition: a statement the database gives up on (a
    deadlock with another process's writes to the same jobs, which it may hold by now, or a
    timeout) is retried job by job, and an event that still cannot be written is logged and
    left out rather than fail the caller after its real write committed. An outage, or any
    other error (a bug), propagates."""
    if not lost:
        return
    ids = [job_id for job_id, *_ in lost]
    log.warning("lease lost for %d job(s) refused=%s: %s", len(lost), action,
                " ".join(map(str, ids[:20])) + (" ..." if len(ids) > 20 else ""))
    if not _leases_lost_written(lost, action, message):
        for item in lost:  # one by one: the others are written whatever one of them meets
            _leases_lost_written([item], action, message)


def _leases_lost_written(lost, action: str, message: str) -> bool:
    """Insert the events; False (logged) when the database gave up on the statement but the
    connection survived (a refusal, not an outage, which propagates)."""
    batch = json.dumps([[int(job_id), str(token), worker_id, int(attempt or 0)]
                        for job_id, token, worker_id, attempt in lost])
    try:
        db.savepointed(db.fetch_all, sql.LEASES_LOST,
                       {"batch": batch, "action": action, "message": message})
        return True
    except OperationalError as exc:
        raw = queue_connection().connection
        if raw is None or raw.closed or raw.broken:
            raise
        log.warning("lease_lost event(s) for %d job(s) not written (%s)", len(lost),
                    storable.describe_exception(exc))
        return False


def heartbeat(process_id: str, *, hostname: str, pid: int, threads: int, queues: list[str],
              rss_bytes: int | None = None, jobs_done: int = 0, stuck_handlers: int = 0,
              heartbeat_interval_seconds: float = 2.0, supervisor_pid: int | None = None) -> None:
    """Upsert the worker process's row in job_workers with heartbeat_at = now() (the database
    clock) and its health (memory, jobs run, stuck handlers): what audit_jobs, metrics, the
    queue page and the workers page read to tell live workers from lost ones."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.HEARTBEAT, {
            "id": process_id, "hostname": hostname, "pid": pid, "threads": threads,
            "queues": json.dumps(queues), "rss_bytes": rss_bytes, "jobs_done": jobs_done,
            "stuck_handlers": stuck_handlers,
            "heartbeat_interval_seconds": heartbeat_interval_seconds,
            "supervisor_pid": supervisor_pid})


@dataclass
class DeadProcessJobs:
    """What settle_dead_process did with each job the dead process held."""
    retried: list[int]   # charged, queued again by the retry policy
    failed: list[int]    # charged, out of attempts (or cancelled meanwhile): ended
    released: list[int]  # never started there: back to queued, uncharged


def settle_dead_process(process_id: str, *, running: list[int], cause: str,
                        charge: bool = True, policy_for=None) -> DeadProcessJobs:
    """The jobs worker process `process_id` still held when it died, settled at once by its
    supervisor instead of at lease expiry.

    Each job whose handler was running there (`running`: what the process told its
    supervisor it was running) is failed with "<cause> while running this job" (and the
    other running jobs' ids: the other suspects), which charges its attempt: queued again by its retry policy
    (`policy_for(type)`, the type's) or failed for good once out of attempts. The killer
    cannot be told from a bystander by the exit status, so each pays one attempt; the killer,
    in every death, runs out. A job that ran there but whose outcome was not yet written (its
    owner is a thread's id) is charged too, as the reaper would charge it: it ran. Every
    other job it held (still under the prefetch buffer's id and not reported running: never
    started, or a prefetched job that had finished before its start was recorded) goes back
    to queued uncharged, as the reaper gives it back. With
    `charge=False` (a death the supervisor caused, stopping) every job is released uncharged.
    Each write is the ordinary fail or release, fenced by the lease token read here, so a job
    the reaper took meanwhile is left alone."""
    prefix = f"{process_id}-"
    with queue_connection().cursor() as cur:
        cur.execute(sql.JOBS_HELD_BY_PROCESS, {"prefix": prefix, "prefix_length": len(prefix)})
        held = cur.fetchall()
    # Started: its owner is a thread's id (claimed for that thread, or a prefetched job whose
    # start the starter recorded), or the process reported a thread running it (a prefetched
    # job its thread started without waiting for that record: witness.py). What it reported
    # running also names the suspects (and says "while running" rather than "after running").
    running_now = set(running)
    started = ({job_id for job_id, _, worker_id, _ in held
                if not str(worker_id).endswith(PREFETCH_WORKER_SUFFIX) or job_id in running_now}
               if charge else set())
    done = DeadProcessJobs([], [], [])
    suspects = sorted(job_id for job_id, *_ in held if job_id in running_now and job_id in started)
    for job_id, token, worker_id, job_type in held:
        if job_id not in started:
            continue
        others = [str(i) for i in suspects if i != job_id]
        when = ("while running this job" if job_id in running_now
                else "after running this job, before its outcome was written")
        why = f"{cause} {when}" + (f" (and job {', '.join(others)})" if others else "")
        try:
            status, _ = fail(job_id, token, worker_id=worker_id, error=why,
                             reason="process_died",
                             policy=policy_for(job_type) if policy_for else None)
        except LeaseLost:
            continue
        (done.retried if status == "queued" else done.failed).append(job_id)
    rest = [(job_id, token, worker_id) for job_id, token, worker_id, _ in held
            if job_id not in started]
    if rest:
        done.released = release_many(rest, message=f"{cause} before it ran this job")
    # Its row is kept (it turns lost, then the reaper forgets it): the lost workers' history
    # says what became of its jobs, whether the reaper or its supervisor took them back.
    count_taken_back(process_id, requeued=len(done.retried) + len(done.released),
                     failed=len(done.failed))
    return done
