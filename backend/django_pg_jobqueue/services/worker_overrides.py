"""A host's override of how it runs one queue: `threads`, at most that many of the host's
executor threads run the queue's jobs at once, and `stopped`, the host claims none of them.
The only writer of job_worker_overrides, and where its arguments are validated.

Each worker process reads its host's overrides on its renewal pass (worker/overrides.py,
through the engine's `worker_overrides`), at most every two seconds (min(lease / 3, 2 s)), and
its lanes follow from their next claim: a change holds on the host within one renewal
interval. Removing the override gives the queue back to what the command line says.

A host is the name its workers report (`run_job_workers --hostname`, by default the
machine's). An override is for a host that exists (`HostNotFound` otherwise), a live
worker reports it or it has an override already, and for a queue that exists (`QueueNotFound`),
so that a typo leaves no row nobody reads. An override is per process of the host
each: with `--processes N`, each process's lanes apply `threads` to their own threads (the
threads a host runs are those of its processes; docs/how-to/queues.md says so).
"""
from .. import db, sql
from ..arguments import check_hostname, check_int, check_queue, type_error
from ..catalogue import queue_exists
from ..db import atomic as queue_atomic
from ..exceptions import HostNotFound, InvalidJobArgument, QueueNotFound
from ..models import TxNow, WorkerOverride, WorkerProcess
from ..states import MAX_OVERRIDE_THREADS, AuditTarget, OperatorAction
from . import audit_log
from .shards import on_queue_shard


def _check(queue, hostname, threads, stopped) -> None:
    """The one validation of an override's arguments: InvalidJobArgument naming the first bad
    one (queue, hostname, threads, stopped)."""
    check_queue(queue)
    check_hostname(hostname)
    if threads is not None:
        check_int("threads", threads, 0, MAX_OVERRIDE_THREADS)
    if not isinstance(stopped, bool):
        raise type_error("stopped", "True or False", stopped)
    if threads is None and not stopped:
        raise InvalidJobArgument("threads", "give threads, or stopped=True: an override that "
                                            "says nothing is removed (remove_worker_override)")


def _host_exists(hostname: str) -> bool:
    return (WorkerProcess.objects.filter(hostname=hostname).exists()
            or WorkerOverride.objects.filter(hostname=hostname).exists())


def check_worker_override(queue, hostname, *, threads=None, stopped=False) -> None:
    """What set_worker_override refuses, without writing: InvalidJobArgument naming the bad
    argument, QueueNotFound, HostNotFound (the admin's form shows them)."""
    _check(queue, hostname, threads, stopped)
    if not queue_exists(queue):
        raise QueueNotFound(queue)
    if not _host_exists(hostname):
        raise HostNotFound(hostname)


def _fields(row: WorkerOverride | None) -> dict:
    return {"threads": row.threads if row else None, "stopped": row.stopped if row else False}


@on_queue_shard
def set_worker_override(queue: str, hostname: str, *, threads: int | None = None,
                        stopped: bool = False, actor: str = "") -> WorkerOverride:
    """On host `hostname`, at most `threads` executor threads (of each of its worker
    processes) run `queue`'s jobs at once (None: as its command line says; 0: none), and with
    `stopped` it claims none of them; running jobs finish. Replaces the host's override of the
    queue. InvalidJobArgument names a bad argument (one of them must say something);
    QueueNotFound, HostNotFound if either does not exist. Setting what is already set changes
    nothing and records nothing; a change is recorded in the audit log (`actor`: who) with the
    host and the old and new values."""
    with queue_atomic():
        check_worker_override(queue, hostname, threads=threads, stopped=stopped)
        before = WorkerOverride.objects.select_for_update().filter(
            hostname=hostname, queue=queue).first()
        old, new = _fields(before), {"threads": threads, "stopped": stopped}
        if before is not None and old == new:
            return before  # idempotent: no write, no entry
        row, _ = WorkerOverride.objects.update_or_create(
            hostname=hostname, queue=queue,
            defaults={**new, "actor": actor or "", "updated_at": TxNow()})
        row.refresh_from_db()
        audit_log.record(OperatorAction.SET_WORKER_OVERRIDE, AuditTarget.QUEUE, queue,
                         actor=actor, data={"hostname": hostname, **{
                             name: [old[name], value] for name, value in new.items()
                             if old[name] != value}})
    return row


@on_queue_shard
def remove_worker_override(queue: str, hostname: str, *, actor: str = "") -> bool:
    """Host `hostname` runs `queue` as its command line says again: whether it had an
    override. InvalidJobArgument names a bad argument; removing none is no error and records
    nothing; a removal is recorded in the audit log with what it removed."""
    _check(queue, hostname, None, True)
    with queue_atomic():
        before = WorkerOverride.objects.select_for_update().filter(
            hostname=hostname, queue=queue).first()
        if before is None:
            return False
        before.delete()
        old, new = _fields(before), _fields(None)
        audit_log.record(OperatorAction.REMOVE_WORKER_OVERRIDE, AuditTarget.QUEUE, queue,
                         actor=actor, data={"hostname": hostname, **{
                             name: [old[name], value] for name, value in new.items()
                             if old[name] != value}})
    return True


def host_overrides(hostname: str) -> dict[str, tuple[int | None, bool]]:
    """{queue: (threads or None, stopped)} of host `hostname`'s overrides: what its worker
    processes read on each renewal pass (engine.worker_overrides, sql.WORKER_OVERRIDES_OF_HOST)."""
    return {queue: (threads, bool(stopped)) for queue, threads, stopped in
            db.fetch_all(sql.WORKER_OVERRIDES_OF_HOST, {"hostname": hostname})}
