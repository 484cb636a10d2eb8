"""What an executor does to its thread's database connections after each handler: leave them as
it found them, whatever the handler did.

Two steps, both on the connections the handler's thread holds in Django's `connections` (the
worker's own pooled alias is not among them: db.worker_connection):

- `tidy(baseline)`, right after the handler returned or raised, before anything about its job
  is written: an atomic block the handler entered and never left is left, rolled back
  (`transaction.atomic().__enter__()`); a raw transaction left open in autocommit (`BEGIN`
  through a cursor, `SELECT ... FOR UPDATE` inside it, an aborted one) is rolled back; a
  connection Django no longer thinks is in autocommit, or whose state cannot be restored, or
  that is closed or broken, is closed, so that the next job gets a fresh one. It returns what
  was left open: the job fails with that (executor.LEFT_OPEN), since the writes
  its handler made in it are gone. Rolled back first, so that no lock it holds (its own job
  row's, say) delays the job's own outcome write.
- `reset_sessions()`, once per job in a worker thread, before Django's close_old_connections:
  a connection that will be kept for the next job (CONN_MAX_AGE > 0, or returned to a
  project's pool) and that ran a statement that may change its session (SET, RESET,
  set_config, advisory locks, LISTEN, PREPARE, DECLARE, temporary tables: `_UseMarker`) has
  its session reset (db.discard_session: DISCARD ALL) and set up again as a new one (time zone and role,
  then Django's `connection_created` receivers: the worker's limits, a project's own). About
  0.4 ms, paid only by such a job; the ORM's statements never are one. A connection closed
  after the job (CONN_MAX_AGE = 0, the default) needs none.

`baseline` is what the thread held before the handler ran: nothing in an executor (its
connections are tidy between jobs), the caller's atomic blocks in `testing.drain` (a test's
transaction), which are left alone. PostgreSQL connections only get the transaction-status
check and the session reset; the atomic-block repair is the same on every backend.
"""
from __future__ import annotations

import logging
import re
import time

from django.db import connections
from django.db.backends.signals import connection_created
from psycopg.pq import TransactionStatus

from .. import db

log = logging.getLogger("django_pg_jobqueue.worker")


# Statements that may leave state in the session past their transaction. The ORM sends none.
_SESSION_STATEMENT = re.compile(
    r"(?:^|;)\s*(?:SET|RESET|LISTEN|PREPARE|DECLARE|LOAD|CREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?TEMP)\b"
    r"|set_config|advisory_lock", re.IGNORECASE)


class _UseMarker:
    """An execute wrapper on a handler's connection: notes a statement that may change its
    session (_SESSION_STATEMENT), so that a kept connection's session is reset only after a
    job that did (one regex search per statement; a reset costs ~0.4 ms). A Django cursor's
    statements pass through it, the ORM's included; statements sent on the raw psycopg
    connection (`connection.connection`) do not, nor does a setting changed inside a
    function the handler calls."""

    def __call__(self, execute, sql_text, params, many, context):
        if _SESSION_STATEMENT.search(sql_text):
            context["connection"]._jobqueue_session_changed = True
        return execute(sql_text, params, many, context)


_MARKER = _UseMarker()


def watch(connection) -> None:
    """Watch `connection`'s statements from now on (idempotent; called on each connect)."""
    connection._jobqueue_session_changed = False
    if _MARKER not in connection.execute_wrappers:
        connection.execute_wrappers.append(_MARKER)


def baseline() -> dict[str, int]:
    """The atomic blocks each of this thread's connections is in (its caller's)."""
    return {c.alias: len(c.atomic_blocks) for c in connections.all(initialized_only=True)
            if c.atomic_blocks}


def tidy(baseline: dict[str, int] | None = None) -> list[str]:
    """Restore this thread's connections to `baseline` (see the module docstring); returns
    one description per connection on which the handler left a transaction open."""
    left = []
    for c in connections.all(initialized_only=True):
        depth = (baseline or {}).get(c.alias, 0)
        try:
            found = _tidy(c, depth)
        except Exception as exc:  # noqa: BLE001 - whatever state it is in, it goes
            log.warning("closing connection %r: its state could not be restored (%s)",
                        c.alias, exc)
            found = _discard(c, depth, "a connection in a state that could not be restored")
        if found:
            left.append(f"{found} on database {c.alias!r}")
    return left


def _tidy(c, depth: int) -> str | None:
    found = None
    if len(c.atomic_blocks) > depth or (c.in_atomic_block and depth == 0):
        found = "transaction.atomic() entered and never left"
        if not c.atomic_blocks[depth:]:  # in an atomic block Django has no record of
            return _discard(c, depth, found)
        for block in reversed(c.atomic_blocks[depth:]):
            c.needs_rollback = True  # so that leaving it rolls back, to its savepoint if any
            block.__exit__(None, None, None)
        if len(c.atomic_blocks) != depth:
            return _discard(c, depth, found)
    raw = c.connection
    if raw is None or depth:  # closed, or inside the caller's transaction: theirs to end
        return found
    if c.vendor != "postgresql":
        return found
    if raw.closed or raw.broken:
        c.close()
        return found
    status = raw.info.transaction_status
    if not c.get_autocommit():  # set_autocommit(False) left: Django closes such a connection
        if status != TransactionStatus.IDLE:
            found = found or "a transaction, autocommit turned off"
        return _discard(c, depth, found)
    if status == TransactionStatus.IDLE:
        return found
    found = found or ("an aborted raw transaction" if status == TransactionStatus.INERROR
                      else "a raw transaction (BEGIN without COMMIT)")
    if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        raw.rollback()
        return found
    return _discard(c, depth, found)  # a statement still active, or an unknown state


def _discard(c, depth: int, found: str | None) -> str | None:
    """Close `c`, its server rolling back whatever is open; at depth 0, with Django's
    transaction state reset as after a fresh connect (a close inside an atomic block would
    otherwise leave it half-closed: "the connection is closed" on every later use)."""
    if depth:
        c.needs_rollback = True  # the caller's own block cannot go on: it must roll back
        return found
    c.atomic_blocks, c.savepoint_ids, c.in_atomic_block = [], [], False
    c.needs_rollback, c.closed_in_transaction, c.commit_on_exit = False, False, True
    c.savepoint_state = 0
    try:
        c.close()
    except Exception:  # noqa: BLE001 - already broken: forget it
        c.connection = None
    return found


def reset_sessions() -> None:
    """Reset the session of each connection kept for the next job on which this job ran a
    statement that may change it (module docstring); one that cannot be reset is closed."""
    now = time.monotonic()
    for c in connections.all(initialized_only=True):
        if c.connection is None or not getattr(c, "_jobqueue_session_changed", False):
            continue
        c._jobqueue_session_changed = False
        if c.vendor != "postgresql" or c.in_atomic_block or not c.get_autocommit():
            continue  # close_old_connections() closes one not in autocommit
        if getattr(c, "pool", None) is None and c.close_at is not None and now >= c.close_at:
            continue  # closed next, by close_old_connections()
        try:
            with c.wrap_database_errors:
                raw = c.connection
                db.discard_session(raw)
                if hasattr(raw, "_jobqueue_limits"):
                    del raw._jobqueue_limits  # so that db.apply_worker_limits sets them again
                c._configure_connection(raw)
            connection_created.send(sender=c.__class__, connection=c)
            c._jobqueue_session_changed = False  # its setup ran statements: not the next job's use
        except Exception as exc:  # noqa: BLE001 - a session we cannot reset is not kept
            log.warning("closing connection %r: its session could not be reset (%s)", c.alias, exc)
            _discard(c, 0, "")
