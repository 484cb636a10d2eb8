"""A Django `TaskResult` rebuilt from a job row and its events (the backend's `get_result`
and the runner read them the same way).

Mapping: queued -> READY, running -> RUNNING, succeeded -> SUCCESSFUL, failed and cancelled
-> FAILED; one `TaskError` per failed attempt; one worker id per attempt.
"""
from dataclasses import fields
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from ..exceptions import (
    PermanentError,
)
from ..registry import is_task_job
from ..tasks_compat import (
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from .options import QueueTask, load_task

STATUS_MAP = {
    "queued": TaskResultStatus.READY,
    "running": TaskResultStatus.RUNNING,
    "succeeded": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
    "cancelled": TaskResultStatus.FAILED,
}

# The events a result is rebuilt from: the attempts' starts (each carried by the event that
# ended its attempt, data.started_at; `claimed` events before history v2), task errors, failures.
_RESULT_EVENT_KINDS = ("claimed", "log", "retry_scheduled", "failed", "cancelled",
                       "lease_expired", "succeeded", "released", "snoozed", "parked")
# Failures the worker records without a Python exception of the task's own.
_SYNTHETIC_ERRORS = {
    "timeout": "builtins.TimeoutError",
    "cancelled": "django_pg_jobqueue.exceptions.JobCancelled",
    "lease_expired": "django_pg_jobqueue.exceptions.LeaseLost",
    "lease_lost": "django_pg_jobqueue.exceptions.LeaseLost",
    "shutdown": "django_pg_jobqueue.exceptions.JobCancelled",
    "unknown_type": "django_pg_jobqueue.exceptions.UnknownJobType",
}


def _build_task(cls: type[Task], values: dict[str, Any]) -> Task:
    """A task of `cls` with these fields, not validated again: it is a task as it was when it
    was enqueued (validated then), and settings may have changed since."""
    task = object.__new__(cls)
    for f in fields(cls):
        object.__setattr__(task, f.name, values.get(f.name, f.default))
    return task


def _stand_in(path: str, error: BaseException) -> Task:
    """A task for a path that cannot be loaded here: its module_path is that path, and its
    function raises the error again."""
    module, _, name = path.rpartition(".")
    message = f"cannot load task {path!r}: {type(error).__name__}: {error}"

    def unloadable(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(message)

    unloadable.__module__, unloadable.__name__, unloadable.__qualname__ = module, name, name
    return _build_task(QueueTask, {"func": unloadable})


def _task_for(job: Any, task: Task | None = None) -> Task:
    """The task a job was enqueued as: the imported Task (or a stand-in, if it cannot be
    loaded) with the options it was enqueued with."""
    payload = job.payload
    path = str(payload.get("task"))
    if task is None:
        try:
            task = load_task(path)
        except (ImportError, PermanentError) as exc:
            task = _stand_in(path, exc)
    values = {f.name: getattr(task, f.name) for f in fields(task)}
    values.update(priority=job.priority, queue_name=job.queue,
                  backend=payload.get("backend", task.backend))
    enqueued = payload.get("enqueued")
    if isinstance(enqueued, dict):  # as enqueued (jobs from before kept no record of it)
        run_after = enqueued.get("run_after")
        values["run_after"] = datetime.fromisoformat(run_after) if run_after else None
        if isinstance(task, QueueTask):
            values.update(max_attempts=enqueued.get("max_attempts"),
                          timeout_seconds=enqueued.get("timeout_seconds"),
                          idempotency_key=job.idempotency_key,
                          concurrency_key=enqueued.get("concurrency_key"),
                          concurrency_key_limit=enqueued.get("concurrency_key_limit"),
                          fairness_key=enqueued.get("fairness_key"))
    elif isinstance(task, QueueTask):
        values.update(max_attempts=job.max_attempts, timeout_seconds=job.timeout_seconds,
                      idempotency_key=job.idempotency_key)
    return _build_task(type(task), values)


def build_result(job: Any, events: list[dict[str, Any]], task: Task | None = None,
                  ) -> TaskResult:
    task = _task_for(job, task)
    by_attempt: dict[int, str] = {}
    first_claim_at: datetime | None = None
    task_errors: dict[int, TaskError] = {}
    errors: list[TaskError] = []
    for ev in events:
        kind, data = ev["kind"], ev["data"] or {}
        started = data.get("started_at") if kind != "claimed" else None
        if kind == "claimed" or started:
            by_attempt[ev["attempt"]] = ev["worker_id"] or ""
            # The database wrote it (to_json of a timestamptz: 1 to 6 fraction digits, which
            # datetime.fromisoformat reads only from Python 3.11 on).
            at = (parse_datetime(started) if started else None) or ev["created_at"]
            first_claim_at = min(first_claim_at, at) if first_claim_at else at
        if kind == "log" and "task_error" in data:
            err = data["task_error"]
            task_errors[ev["attempt"]] = TaskError(
                exception_class_path=err["exception_class_path"], traceback=err["traceback"])
        elif kind in ("retry_scheduled", "failed"):
            own = task_errors.pop(ev["attempt"], None)
            errors.append(own or TaskError(
                exception_class_path=_SYNTHETIC_ERRORS.get(str(data.get("reason")),
                                                           "builtins.Exception"),
                traceback=ev["message"]))
        elif kind == "cancelled":
            errors.append(task_errors.pop(ev["attempt"], None) or TaskError(
                exception_class_path="django_pg_jobqueue.exceptions.JobCancelled",
                traceback=ev["message"] or "cancelled"))
        elif kind == "lease_expired":
            errors.append(TaskError(exception_class_path="django_pg_jobqueue.exceptions.LeaseLost",
                                    traceback=ev["message"]))
    if job.status == "running" and job.locked_by:  # the attempt running now: its job row
        by_attempt[job.attempts] = job.locked_by
        first_claim_at = first_claim_at or job.started_at
    worker_ids = [by_attempt[n] for n in sorted(by_attempt) if n <= job.attempts]
    result = TaskResult(
        task=task, id=str(job.id), status=STATUS_MAP[job.status], enqueued_at=job.created_at,
        started_at=first_claim_at, last_attempted_at=job.started_at,
        finished_at=job.finished_at, args=job.payload.get("args", []),
        kwargs=job.payload.get("kwargs", {}), backend=job.payload.get("backend", task.backend),
        errors=errors, worker_ids=worker_ids,
    )
    if job.status == "succeeded":
        object.__setattr__(result, "_return_value", job.result)
    return result


def result_events(job_id: int) -> list[dict[str, Any]]:
    """The events of job `job_id` a result is rebuilt from, oldest first."""
    from ..models import HistoryEvent  # this module loads with TASKS' backend, maybe before models

    return list(HistoryEvent.objects.filter(job_id=job_id, kind__in=_RESULT_EVENT_KINDS)
                .order_by("id").values("kind", "attempt", "worker_id", "message", "data",
                                       "created_at"))


def load_result(result_id: str) -> TaskResult:
    """The result of the task job `result_id` (its id, as a string) as it is now;
    TaskResultDoesNotExist when there is no such job or it is not a task's."""
    try:
        job_id = int(result_id)
    except (TypeError, ValueError):
        raise TaskResultDoesNotExist(result_id) from None
    # Here: this module loads with TASKS' backend, maybe before the models.
    from .. import conf, db, shards
    from ..models import Job

    # With JOB_SHARDS, the job is read in the shard its id names.
    with db.on_database(shards.alias_for_job_id(job_id) if conf.get().SHARDS else None):
        job = Job.objects.filter(pk=job_id).first()
        if job is None or not is_task_job(job.type, job.payload):
            raise TaskResultDoesNotExist(result_id)
        return build_result(job, result_events(job_id))
