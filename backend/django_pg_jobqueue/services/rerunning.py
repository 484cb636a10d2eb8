"""rerun: run a succeeded job again, as a copy.

A succeeded job is finished for good (states.py: only failed and cancelled jobs are retried),
so running it again enqueues a new job with the original's type, payload, queue, priority,
max_attempts and timeout, and leaves the original as it was: its result, its attempts and its
history still say what happened then. The copy's `created` event names the original
(`data.rerun_of`, "re-run of job #N by <actor>"). Its idempotency key is not copied (keys are
unique); each call makes one new job, so two calls make two copies.

Why a copy and not a new attempt of the same job: a new attempt would move a succeeded job
back to queued (a transition the state machine does not have), overwrite its result and
finish time, and make `attempts` mean two different runs; the copy keeps every finished job's
row true to what happened.
"""
from ..db import atomic as queue_atomic
from ..exceptions import InvalidTransition, JobNotFound
from ..models import Job, JobEvent
from ..states import AuditTarget, EventKind, OperatorAction, Status, parse_job_id
from . import audit_log
from .enqueuing import enqueue
from .shards import on_job_shard


@on_job_shard
def rerun(job_id, *, actor: str = "") -> Job:
    """Enqueue a copy of succeeded job `job_id` and return the copy. JobNotFound for no such
    job, InvalidTransition for a job that did not succeed (retry a failed or cancelled one)."""
    pk = parse_job_id(job_id)
    with queue_atomic():
        original = Job.objects.filter(pk=pk).first() if pk is not None else None
        if original is None:
            raise JobNotFound(job_id)
        if original.status != Status.SUCCEEDED:
            raise InvalidTransition(original.pk, "rerun", original.status)
        copy = enqueue(original.type, dict(original.payload), queue=original.queue,
                       priority=original.priority, max_attempts=original.max_attempts,
                       timeout_seconds=original.timeout_seconds)
        by = f" by {actor}" if actor else ""
        JobEvent.objects.filter(job_id=copy.pk, kind=EventKind.CREATED).update(
            message=f"re-run of job #{original.pk}{by}", data={"rerun_of": original.pk})
        audit_log.record(OperatorAction.RERUN, AuditTarget.JOB, original.pk, actor=actor,
                         data={"copy": copy.pk})
    return copy
