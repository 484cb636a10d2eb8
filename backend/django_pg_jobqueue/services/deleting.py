"""delete: remove one finished job and its events, as an operator asks (API, admin, UI).

The same guard as the pruner's, in the statement itself (sql.DELETE_FINISHED_JOB): only a
succeeded, failed or cancelled job is deleted. A queued or running job must be cancelled
first: `InvalidTransition` names its status. An unknown id raises `JobNotFound`.
"""
from .. import sql
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..exceptions import InvalidTransition, JobNotFound
from ..states import AuditTarget, OperatorAction, parse_job_id
from . import audit_log
from .shards import on_job_shard


@on_job_shard
def delete(job_id, *, actor: str = "") -> int:
    """Delete the finished job `job_id` and every one of its events, in one transaction.
    Returns how many events went with it. The job's history goes with it: the audit log's
    entry (`actor`, the job's id) is what says who deleted it."""
    parsed = parse_job_id(job_id)
    if parsed is None:
        raise JobNotFound(job_id)
    with queue_atomic():
        with queue_connection().cursor() as cur:
            cur.execute(sql.DELETE_FINISHED_JOB, [parsed])
            gone = cur.fetchone()
            if gone is None:
                cur.execute(sql.JOB_STATUS, [parsed])
                row = cur.fetchone()
                if row is None:
                    raise JobNotFound(parsed)
                raise InvalidTransition(parsed, "delete", row[0])
            cur.execute(sql.DELETE_JOB_EVENTS, [parsed])
            events = cur.rowcount + int(gone[1])  # and the outcome kept on its row
        audit_log.record(OperatorAction.DELETE, AuditTarget.JOB, parsed, actor=actor,
                         data={"events": events})
        return events
