"""The `hygiene` handler: one job type whose payload picks what it does to its thread's database
connection, for tests/system/test_handler_connection_hygiene.py.

Worker subprocesses import this module through JOB_EXTRA_HANDLER_MODULES. The ordinary kind,
`write_row`, inserts one row into ROWS_TABLE (a plain table the test creates, no migration),
with the session's statement_timeout and search_path as it saw them: a job that `succeeded`
must have its row, and a row must show the session settings of a fresh connection. Every
other kind leaves something behind on the connection: a transaction, a savepoint, a lock,
session settings, an atomic block entered and never left, a closed connection."""
import time

from django.db import connection, transaction

from django_pg_jobqueue.registry import handler

ROWS_TABLE = "hygiene_rows"
CREATE_ROWS_TABLE = f"""
CREATE TABLE IF NOT EXISTS {ROWS_TABLE} (
    job_id bigint NOT NULL,
    attempt int NOT NULL,
    kind text NOT NULL,
    statement_timeout text NOT NULL,
    search_path text NOT NULL,
    PRIMARY KEY (job_id, attempt)
)"""


def _insert(ctx, kind: str) -> None:
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO public.{ROWS_TABLE} VALUES (%s, %s, %s,"
                    " current_setting('statement_timeout'), current_setting('search_path'))",
                    [ctx.job_id, ctx.attempt, kind])


def _execute(*statements, params=None) -> None:
    with connection.cursor() as cur:
        for sql in statements:
            cur.execute(sql, params)


def write_row(ctx):
    _insert(ctx, "write_row")
    return {"job": ctx.job_id}


def leave_begin(ctx):
    _execute("BEGIN")


def leave_begin_after_a_write(ctx):
    _execute("BEGIN")
    _insert(ctx, "leave_begin_after_a_write")


def lock_own_row(ctx):
    """Ends inside a raw transaction holding its own job's row lock: the completion's UPDATE
    of that row would wait for it forever."""
    _execute("BEGIN")
    _execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", params=[ctx.job_id])


def leave_savepoint(ctx):
    _execute("BEGIN", "SAVEPOINT left_open")
    _insert(ctx, "leave_savepoint")


def leave_aborted(ctx):
    """A raw transaction left aborted by an error the handler swallowed."""
    _execute("BEGIN")
    try:
        _execute("SELECT 1 / 0")
    except Exception:  # noqa: BLE001 - swallowed on purpose
        pass


def leave_atomic(ctx):
    transaction.atomic().__enter__()


def leave_atomic_after_a_write(ctx):
    transaction.atomic().__enter__()
    _insert(ctx, "leave_atomic_after_a_write")


def leave_nested_atomic(ctx):
    transaction.atomic().__enter__()
    _insert(ctx, "leave_nested_atomic")
    transaction.atomic().__enter__()


def leave_atomic_broken(ctx):
    """An atomic block entered, an error inside it swallowed by an inner block, not left."""
    transaction.atomic().__enter__()
    try:
        with transaction.atomic():
            _execute("SELECT 1 / 0")
    except Exception:  # noqa: BLE001 - swallowed on purpose
        pass


def leave_autocommit_off(ctx):
    connection.set_autocommit(False)
    _insert(ctx, "leave_autocommit_off")


def raise_in_atomic(ctx):
    with transaction.atomic():
        _insert(ctx, "raise_in_atomic")
        raise RuntimeError("raised inside an atomic block")


def set_statement_timeout(ctx):
    _execute("SET statement_timeout = '4321ms'")


def set_search_path(ctx):
    _execute("SET search_path = pg_catalog")


def set_local_in_left_transaction(ctx):
    _execute("BEGIN", "SET LOCAL statement_timeout = '1234ms'")


def advisory_lock(ctx):
    """A session-level advisory lock, never released: held by the next job's connection."""
    _execute("SELECT pg_advisory_lock(4242)")
    return {"locked": True}


def close_connection(ctx):
    _insert(ctx, "close_connection")
    connection.close()
    return {"closed": True}


def sleep_in_thread(ctx):
    """Starts a non-daemon thread that outlives its job (and the worker's shutdown). Said so:
    a thread inherits its daemon flag from the thread that creates it, an executor's."""
    import threading

    threading.Thread(target=time.sleep, args=(600,), name="handler-sleeper", daemon=False).start()
    return {"started": True}


KINDS = {
    "write_row": write_row,
    "leave_begin": leave_begin,
    "leave_begin_after_a_write": leave_begin_after_a_write,
    "lock_own_row": lock_own_row,
    "leave_savepoint": leave_savepoint,
    "leave_aborted": leave_aborted,
    "leave_atomic": leave_atomic,
    "leave_atomic_after_a_write": leave_atomic_after_a_write,
    "leave_nested_atomic": leave_nested_atomic,
    "leave_atomic_broken": leave_atomic_broken,
    "leave_autocommit_off": leave_autocommit_off,
    "raise_in_atomic": raise_in_atomic,
    "set_statement_timeout": set_statement_timeout,
    "set_search_path": set_search_path,
    "set_local_in_left_transaction": set_local_in_left_transaction,
    "advisory_lock": advisory_lock,
    "close_connection": close_connection,
    "sleep_in_thread": sleep_in_thread,
}
# the kinds that leave a transaction open or an atomic block entered: their job fails
LEAVE_TRANSACTION = {"leave_begin", "leave_begin_after_a_write", "lock_own_row",
                     "leave_savepoint", "leave_aborted", "leave_atomic",
                     "leave_atomic_after_a_write", "leave_nested_atomic", "leave_atomic_broken",
                     "leave_autocommit_off", "set_local_in_left_transaction"}


@handler("hygiene", max_attempts=2, timeout_seconds=30,
         description="Connection-hygiene test handler: payload.kind picks what it leaves behind.")
def hygiene(ctx, payload):
    return KINDS[payload["kind"]](ctx)
