"""Operator transitions, used alike by the Python API (`django_pg_jobqueue.cancel`, `.retry`),
the REST API, the admin and the UI: cancel (of a job, or of a batch's pending members), retry,
and the edit of a job that has not started (its priority, its run time, run it now). What
follows a cancel's commit (dependants, batches) is services/finishing.py's."""
import json

from .. import conf, db, sql
from ..arguments import check_int, check_run_at
from ..db import atomic as queue_atomic
from ..exceptions import (
    BatchNotFound,
    DependencyNotRetried,
    InvalidJobArgument,
    InvalidTransition,
    JobNotFound,
    UniqueKeyHeld,
)
from ..models import STATUS_IN_UNIQUE_STATES, Job, JobBatch, JobEvent
from ..models import TxNow as Now
from ..states import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    RETRYABLE_BY_OPERATOR,
    AuditTarget,
    EventKind,
    OperatorAction,
    Status,
    parse_job_id,
)
from . import audit_log
from .bulk_retry import retry_jobs
from .finishing import settle_batches, settle_dependants
from .preparing import check_api_priority, check_api_run_time
from .shards import on_job_shard


def _locked(job_id) -> Job:
    try:
        return Job.objects.select_for_update().get(pk=job_id)
    except (Job.DoesNotExist, ValueError, TypeError):
        raise JobNotFound(job_id) from None


@on_job_shard
def cancel(job_id, *, actor: str = "") -> Job:
    """Cancel a job: a queued (or waiting) one ends at once (cancelled), and so do the jobs
    that wait for it (unless enqueued with after_failure="run"); a running one gets
    `cancel_requested_at`, which its handler sees through `ctx.should_stop()`, and the worker
    records `cancelled` when the handler stops. Finished jobs raise InvalidTransition."""
    with queue_atomic():
        job = _locked(job_id)
        # A member's cancel (or a dependant's it cascades to) may finish its batch: settled
        # after the commit, which it must see.
        batch_id = job.batch_id if job.status in (Status.QUEUED, Status.WAITING) else None
        cascaded: list[int] = []
        if job.status in (Status.QUEUED, Status.WAITING):
            Job.objects.filter(pk=job.pk, status=job.status).update(
                status=Status.CANCELLED, finished_at=Now(), updated_at=Now(),
            )
            JobEvent.objects.create(job=job, kind=EventKind.CANCELLED, attempt=job.attempts,
                                    message=f"cancelled while {job.status}{_by(actor)}")
            with db.queue_connection().cursor() as cur:  # its waiters wake at commit
                cur.execute(sql.NOTIFY_OUTCOMES, [str(job.pk)])
            if job.has_dependants:  # in the cancel's transaction: they end with it
                cascaded = settle_dependants([job.pk])
            audit_log.record(OperatorAction.CANCEL, AuditTarget.JOB, job.pk, actor=actor,
                             data={"status": job.status})
        elif job.status == Status.RUNNING:
            if job.cancel_requested_at is None:
                Job.objects.filter(pk=job.pk, status=Status.RUNNING).update(
                    cancel_requested_at=Now(), updated_at=Now(),
                )
                JobEvent.objects.create(job=job, kind=EventKind.CANCEL_REQUESTED,
                                        attempt=job.attempts, worker_id=job.locked_by,
                                        message=f"cancel requested{_by(actor)}")
                audit_log.record(OperatorAction.CANCEL, AuditTarget.JOB, job.pk, actor=actor,
                                 data={"status": job.status})
        else:
            raise InvalidTransition(job.pk, "cancel", job.status)
    settle_batches(batch_ids=[batch_id], cascaded=cascaded)
    job.refresh_from_db()
    return job


def cancel_batch(batch_id, *, actor: str = "") -> JobBatch:
    """Cancel a batch: its pending members (queued or waiting) end cancelled at once, and the
    jobs that wait for them as `cancel` cancels a job's; its running members go on (cancel
    them one by one to stop them). The batch then finishes once its running members have,
    with `on_failure` (and `on_complete`). Cancelling a finished batch changes nothing.
    Raises BatchNotFound."""
    parsed = parse_job_id(batch_id)
    if parsed is None:
        raise BatchNotFound(batch_id)
    message = "cancelled with its batch" + _by(actor)
    with queue_atomic():
        rows = db.fetch_all(sql.CANCEL_BATCH_PENDING, {"id": parsed, "message": message})
        if not rows:
            raise BatchNotFound(batch_id)
        cancelled = [row[2] for row in rows if row[2] is not None]
        audit_log.record(OperatorAction.CANCEL_BATCH, AuditTarget.BATCH, parsed, actor=actor,
                         data={"cancelled": len(cancelled)})
        # The jobs waiting for them, in the cancel's transaction (as cancel's); those this
        # cancels may be members of other batches.
        settling = [row[2] for row in rows if row[3]]
        cascaded = settle_dependants(settling) if settling else []
    settle_batches(batch_ids=[parsed], cascaded=cascaded)  # after the commit: it must see them
    return JobBatch.objects.get(pk=parsed)


@on_job_shard
def retry(job_id, *, actor: str = "") -> Job:
    """Put a failed or cancelled job back in the queue, runnable now, and wake idle workers
    (bulk_retry.retry_jobs: the one statement of every retry). Attempts already spent stay
    counted; if none are left, max_attempts grows by one so the job may run again. Raises
    JobNotFound (also for a job whose history the prune already dropped with its job_events
    partition: it is past its retention and about to be deleted), or InvalidTransition for
    any other status, or UniqueKeyHeld (an InvalidTransition) for a unique job whose key
    another job holds now, or DependencyNotRetried (an InvalidTransition) for a job enqueued
    after one that failed, was cancelled or is gone (retry that one first, or both with
    bulk_retry.retry_jobs). A job whose dependencies have not all succeeded goes back to
    `waiting`, not `queued`: it runs once they have."""
    parsed = parse_job_id(job_id)
    if parsed is None:
        raise JobNotFound(job_id)
    job_id = parsed
    if not retry_jobs([job_id], actor=actor):
        rows = db.fetch_all(sql.JOB_STATUS, [job_id])
        if rows and rows[0][0] in RETRYABLE_BY_OPERATOR:
            holder = _unique_key_holder(job_id)
            if holder is not None:
                raise UniqueKeyHeld(job_id, rows[0][0], holder)
            dead = db.fetch_all(sql.DEPENDENCY_NOT_SUCCEEDING, [job_id])
            if dead:
                raise DependencyNotRetried(job_id, rows[0][0], dead[0][0], dead[0][1])
        if not rows or rows[0][0] in RETRYABLE_BY_OPERATOR:
            raise JobNotFound(job_id)
        raise InvalidTransition(job_id, "retry", rows[0][0])
    return Job.objects.get(pk=job_id)


def _unique_key_holder(job_id: int) -> int | None:
    """The id of the other job that holds this job's unique key, if one does."""
    key = Job.objects.filter(pk=job_id).values_list("unique_key", flat=True).first()
    if key is None:
        return None
    return (Job.objects.filter(STATUS_IN_UNIQUE_STATES, unique_key=key).exclude(pk=job_id)
            .values_list("id", flat=True).first())


def _by(actor: str) -> str:
    return f" by {actor}" if actor else ""


@on_job_shard
def edit(job_id, *, priority=None, run_at=None, actor: str = "", from_api: bool = False) -> Job:
    """Change a job that has not started: its `priority` and its run time (`run_at`, a
    timezone-aware datetime: when it may run; a time in the past means now). Only a queued or
    waiting job: JobNotFound, or InvalidTransition naming its status (a worker claimed it,
    or it finished). The arguments are checked as `enqueue()` checks them (InvalidJobArgument
    naming the bad one; `from_api`: the bounds JOB_API_MAX_PRIORITY and
    JOB_API_MAX_DELAY_SECONDS too). An `edited` event records what changed, old and new, and
    `actor`; nothing changed, nothing recorded. A job made runnable wakes idle workers."""
    if priority is None and run_at is None:
        raise InvalidJobArgument("priority", "give priority or run_at (or both) to change")
    if priority is not None:
        priority = check_int("priority", priority, PRIORITY_MIN, PRIORITY_MAX)
    run_at = check_run_at(run_at)
    if from_api:
        if priority is not None:
            check_api_priority(priority)
        check_api_run_time(run_at)
    return _edit(job_id, priority=priority, run_at=run_at, run_now=False, actor=actor)


@on_job_shard
def run_now(job_id, *, actor: str = "") -> Job:
    """Make a delayed job runnable now (a queued one runs at the next claim; a waiting one as
    soon as what it waits for is done). A job already due is left as it is. Only a queued or
    waiting job: JobNotFound, or InvalidTransition naming its status."""
    return _edit(job_id, priority=None, run_at=None, run_now=True, actor=actor)


def _edit(job_id, *, priority, run_at, run_now: bool, actor: str) -> Job:
    parsed = parse_job_id(job_id)
    if parsed is None:
        raise JobNotFound(job_id)
    what = "made runnable now" if run_now else "edited"
    with queue_atomic():
        rows = db.fetch_all(sql.EDIT_QUEUED_JOB, {
            "id": parsed, "priority": priority, "run_at": run_at, "run_now": run_now,
            "actor": actor, "message": f"{what}{_by(actor)}",
            "notify": conf.get().LISTEN_NOTIFY})
        if not rows:
            status = db.fetch_all(sql.JOB_STATUS, [parsed])
            if not status:
                raise JobNotFound(job_id)
            raise InvalidTransition(parsed, "run_now" if run_now else "edit", status[0][0])
        changed = rows[0][2]  # jsonb, as text: Django's connections load no JSON
        changed = json.loads(changed) if isinstance(changed, str) else changed
        if changed:  # as its event: nothing changed, nothing recorded
            audit_log.record(OperatorAction.RUN_NOW if run_now else OperatorAction.EDIT,
                             AuditTarget.JOB, parsed, actor=actor, data=changed)
    return Job.objects.get(pk=parsed)
