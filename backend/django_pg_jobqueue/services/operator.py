"""Operator transitions, used alike by the API, the admin and the UI: cancel and retry."""
from django.db.models import F
from django.db.models.functions import Greatest

from .. import sql
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..exceptions import InvalidTransition, JobNotFound
from ..models import Job, JobEvent
from ..models import TxNow as Now
from ..states import RETRYABLE_BY_OPERATOR, EventKind, Status


def _locked(job_id) -> Job:
    try:
        return Job.objects.select_for_update().get(pk=job_id)
    except (Job.DoesNotExist, ValueError, TypeError):
        raise JobNotFound(job_id) from None


def cancel(job_id, *, actor: str = "") -> Job:
    """Cancel a job: a queued one ends at once (cancelled); a running one gets
    `cancel_requested_at`, which its handler sees through `ctx.should_stop()`, and the worker
    records `cancelled` when the handler stops. Finished jobs raise InvalidTransition."""
    with queue_atomic():
        job = _locked(job_id)
        if job.status == Status.QUEUED:
            Job.objects.filter(pk=job.pk, status=Status.QUEUED).update(
                status=Status.CANCELLED, finished_at=Now(), updated_at=Now(),
            )
            JobEvent.objects.create(job=job, kind=EventKind.CANCELLED, attempt=job.attempts,
                                    message=f"cancelled while queued{_by(actor)}")
        elif job.status == Status.RUNNING:
            if job.cancel_requested_at is None:
                Job.objects.filter(pk=job.pk, status=Status.RUNNING).update(
                    cancel_requested_at=Now(), updated_at=Now(),
                )
                JobEvent.objects.create(job=job, kind=EventKind.CANCEL_REQUESTED,
                                        attempt=job.attempts, worker_id=job.locked_by,
                                        message=f"cancel requested{_by(actor)}")
        else:
            raise InvalidTransition(job.pk, "cancel", job.status)
    job.refresh_from_db()
    return job


def retry(job_id, *, actor: str = "") -> Job:
    """Put a failed or cancelled job back in the queue, runnable now. Attempts already spent
    stay counted; if none are left, max_attempts grows by one so the job may run again.
    A job whose history the prune already dropped (with its job_events partition: it is past
    its retention and about to be deleted) is not found."""
    with queue_atomic():
        _hold_history()
        job = _locked(job_id)
        if job.status not in RETRYABLE_BY_OPERATOR:
            raise InvalidTransition(job.pk, "retry", job.status)
        with queue_connection().cursor() as cur:
            cur.execute(sql.JOB_HAS_HISTORY, [job.pk])
            if not cur.fetchone()[0]:
                raise JobNotFound(job.pk)
        Job.objects.filter(pk=job.pk, status=job.status).update(
            status=Status.QUEUED, available_at=Now(), updated_at=Now(), finished_at=None,
            cancel_requested_at=None, result=None, progress_percent=None, progress_message="",
            max_attempts=Greatest(F("max_attempts"), F("attempts") + 1),
        )
        JobEvent.objects.create(job=job, kind=EventKind.RETRIED, attempt=job.attempts,
                                message=f"retried from {job.status}{_by(actor)}")
    job.refresh_from_db()
    return job


def _hold_history() -> None:
    """Until the transaction ends, no job_events partition is dropped (sql.EVENTS_HISTORY_LOCK):
    what this transaction reads of a job's history stays there."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.EVENTS_HISTORY_LOCK_SHARED)


def _by(actor: str) -> str:
    return f" by {actor}" if actor else ""
