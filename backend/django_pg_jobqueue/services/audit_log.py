"""The audit log: each operator action recorded by the service that performs it, in the same
transaction (models.AuditLogEntry).

Every surface reaches an action through its service: the REST API's single-job endpoints and
its bulk actions (services/bulk_actions.py puts each job through the single-job service of
job_actions.ACTIONS), the dead letter's retry (bulk_retry), the admin's actions and forms, and
the Python API (`django_pg_jobqueue.cancel`, `pause_queue`, ...). So the services record, and
nothing above them does: an action is recorded once whichever way it came, and a refused or
rolled-back action records nothing.

What is recorded: an action that changed something. A cancel of a job already asked to stop,
an edit that changed nothing, a pause of a paused queue (or schedule) and a limit set to the
value it had leave no entry, as they leave no event: the admin's queue form saves the pause
and the limit together, and only what changed is the operator's doing.

`actor` is the user's name as the surfaces pass it (`request.user.get_username()`); code
that names no one records "" (shown as "(code)").
"""
import json
from collections.abc import Iterable

from .. import db, sql
from ..states import AuditTarget, OperatorAction


def record(action: OperatorAction, target_kind: AuditTarget, target, *, actor: str = "",
           data: dict | None = None) -> None:
    """Record one action on one target (a job's id, a queue's or schedule's name). Call it
    inside the transaction that performs the action."""
    _insert(action, target_kind, [str(target)], actor, data)


def record_jobs(action: OperatorAction, job_ids: Iterable[int], *, actor: str = "",
                data: dict | None = None) -> None:
    """Record one action on each of these jobs, in one statement (a retry of many jobs at
    once). Call it inside the transaction that performs the action."""
    targets = [str(job_id) for job_id in job_ids]
    if targets:
        _insert(action, AuditTarget.JOB, targets, actor, data)


def _insert(action, target_kind, targets: list[str], actor: str, data: dict | None) -> None:
    db.fetch_all(sql.RECORD_AUDIT_ENTRIES, {
        "actor": actor or "", "action": str(action), "target_kind": str(target_kind),
        "targets": targets, "data": json.dumps(data or {})})
