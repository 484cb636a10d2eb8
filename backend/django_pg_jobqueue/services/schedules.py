"""Periodic schedules an operator drives: run one now, pause it, resume it.

- run_schedule: enqueues the schedule's job at once, whatever its cron and whether it is
  paused (the operator asked for it), under a new idempotency key
  `periodic:<name>:manual:<random>`: each call makes one job, so two calls at once make two
  jobs, never one silently swallowed. Its `created` event says so (`data.run_now`). It shows
  in the schedule's tick history with no tick time.
- pause_schedule / resume_schedule: one conditional write each (sql.PAUSE_SCHEDULE_IF_RUNNING,
  RESUME_SCHEDULE_IF_PAUSED), True when it changed the state; pausing a paused schedule (or
  resuming a running one) changes nothing and is no error. While paused, the workers'
  PeriodicEnqueuer enqueues none of its ticks (it reads the pauses at the start of each pass,
  so a tick enqueued in the very pass under way when the pause lands may still appear); a
  resumed schedule enqueues its ticks from then on, not the ones it missed.

Each raises ScheduleNotFound for a name that no JOB_PERIODIC entry or @periodic declares.
"""
from datetime import datetime

from .. import periodic, sql
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..exceptions import ScheduleInvalid
from ..models import Job, JobEvent
from ..periodic import PeriodicEntry
from ..periodic import entry as periodic_entry
from ..states import AuditTarget, EventKind, OperatorAction
from . import audit_log
from .enqueuing import enqueue_or_get


def enqueue_tick(entry: PeriodicEntry, tick: datetime) -> bool:
    """Enqueue `entry`'s job for `tick` unless some process already did. True if this call
    created it."""
    return enqueue_under_key(entry, entry.key(tick))


def enqueue_under_key(entry: PeriodicEntry, key: str) -> bool:
    """Enqueue `entry`'s job under idempotency key `key` unless it exists. True if this call
    created it."""
    if entry.type is not None:
        _, created = enqueue_or_get(
            entry.type, dict(entry.payload), priority=entry.priority, queue=entry.queue,
            idempotency_key=key, max_attempts=entry.max_attempts,
            timeout_seconds=entry.timeout_seconds)
        return created
    if Job.objects.filter(idempotency_key=key).exists():
        return False
    task = entry.load_task()
    options = {"idempotency_key": key, "max_attempts": entry.max_attempts,
               "timeout_seconds": entry.timeout_seconds, "queue_name": entry.queue,
               "priority": entry.priority}
    task.using(**{k: v for k, v in options.items() if v is not None}).enqueue(
        *entry.args, **entry.kwargs)
    return True  # (a concurrent process may have won the insert: then it was a replay)


def run_schedule(name: str, *, actor: str = "") -> Job:
    """Enqueue schedule `name`'s job now (a new job each call) and return it. ScheduleInvalid
    when the entry cannot enqueue (its `problems`)."""
    entry = periodic_entry(name)
    problems = entry.problems()
    if problems:
        raise ScheduleInvalid(name, problems)
    key = entry.manual_key()
    with queue_atomic():
        enqueue_under_key(entry, key)
        job = Job.objects.get(idempotency_key=key)
        by = f" by {actor}" if actor else ""
        JobEvent.objects.filter(job_id=job.pk, kind=EventKind.CREATED).update(
            message=f"run now: periodic schedule {name!r}{by}",
            data={"schedule": name, "run_now": True})
        audit_log.record(OperatorAction.RUN_SCHEDULE, AuditTarget.SCHEDULE, name, actor=actor,
                         data={"job": job.pk})
    return job


def _set_paused(name: str, statement: str, action: OperatorAction, actor: str) -> bool:
    periodic_entry(name)
    with queue_atomic(), queue_connection().cursor() as cur:
        cur.execute(statement, [name])
        changed = cur.fetchone() is not None
        if changed:  # a pause of a paused schedule changes nothing: no entry
            audit_log.record(action, AuditTarget.SCHEDULE, name, actor=actor)
        return changed


def pause_schedule(name: str, *, actor: str = "") -> bool:
    """Pause schedule `name`; True if it was running (False: already paused). `actor`: who
    did it, for the audit log."""
    return _set_paused(name, sql.PAUSE_SCHEDULE_IF_RUNNING, OperatorAction.PAUSE_SCHEDULE, actor)


def resume_schedule(name: str, *, actor: str = "") -> bool:
    """Resume schedule `name`; True if it was paused (False: it was not)."""
    return _set_paused(name, sql.RESUME_SCHEDULE_IF_PAUSED, OperatorAction.RESUME_SCHEDULE, actor)


def record_schedules() -> list[str]:
    """Give every declared schedule its settings row (not paused) if it has none, for the
    admin's list; return the declared names. Idempotent: one INSERT ... ON CONFLICT DO NOTHING."""
    names = [entry.name for entry in periodic.entries()]
    with queue_atomic(), queue_connection().cursor() as cur:
        cur.execute(sql.RECORD_SCHEDULES, [names])
    return names
