"""The queue's database connection, prepared statements on its hot path, and the worker's
session limits made safe behind a transaction pooler.

The queue's tables live on the `DATABASES` alias `JOB_DATABASE` ("default" unless the project
moves the queue to a database of its own): every raw statement of the package goes through
`queue_connection()`, every transaction it opens through `atomic()`, and its models are routed
there by `django_pg_jobqueue.routers.JobQueueRouter`.

Django's psycopg backend binds parameters on the client and sends each statement as plain
SQL, so PostgreSQL parses and plans the claim's CTEs on every call: about a third of their
server time (bench/proposals/README.md). The few statements on the hot path (claim,
complete, renew, enqueue) run instead through a server-side-binding psycopg cursor on the
same connection, prepared once per connection and reused. Errors still surface as Django's
database exceptions (the connection's error wrapper), so the worker loops' reconnect
handling is unchanged.

JOB_PREPARED_STATEMENTS=false turns this off, and so does JOB_TRANSACTION_POOLER=true: behind
a transaction pooler the next transaction may run on another server connection, one that
lacks the statement (`prepared statement "_pg3_0" does not exist`) or already has one of
that name from another client (`... already exists`).
"""
import psycopg
from django.db import connections, transaction

from . import conf

PREPARE_THRESHOLD = 5  # psycopg's default; our calls pass prepare=True anyway
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ_OID, psycopg.pq.Format.TEXT)


def alias() -> str:
    """The DATABASES alias of the queue's tables (JOB_DATABASE)."""
    return conf.get().DATABASE


def queue_connection():
    """This thread's Django connection to the queue's database."""
    return connections[conf.get().DATABASE]


def atomic(**kwargs):
    """transaction.atomic() on the queue's database."""
    return transaction.atomic(using=conf.get().DATABASE, **kwargs)


def fetch_all(sql: str, params: dict | tuple) -> list[tuple]:
    """Execute one statement (prepared when enabled) and return its rows."""
    connection = queue_connection()
    if not conf.get().use_prepared_statements:
        with connection.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django opens connections with prepare_threshold=None (its OPTIONS default), and
        # psycopg then ignores prepare=True: every call would be parsed and planned again.
        # Django's own cursors bind on the client and are never prepared, so this only
        # turns on the statements below.
        raw.prepare_threshold = PREPARE_THRESHOLD
    with connection.wrap_database_errors:
        with psycopg.Cursor(raw) as cur:
            # psycopg's own (C) timestamptz loader rather than the Python one Django installs
            # on its connections: a claim returns four timestamps per job. The session's
            # TimeZone is UTC either way (Django sets it), so the values are the same.
            cur.adapters.register_loader(_TIMESTAMPTZ_OID, _TIMESTAMPTZ_LOADER)
            cur.execute(sql, params, prepare=True)
            return cur.fetchall() if cur.description else []


# --- session limits ----------------------------------------------------------------------------
def session_limits(statement_timeout_ms: int) -> dict[str, str]:
    """The worker's timeouts: statements, and transactions left idle (twice as long, 60 s at
    least); a statement_timeout of 0 sets no limit on statements."""
    idle = max(statement_timeout_ms * 2, 60000)
    return {"statement_timeout": str(statement_timeout_ms),
            "idle_in_transaction_session_timeout": str(idle)}


class LocalLimits:
    """A Django execute wrapper that runs each statement with the worker's limits set by
    `SET LOCAL`, in the same round trip: `SET LOCAL ...; SET LOCAL ...; <statement>`.

    Behind a transaction pooler a session-level `SET` would stay on whichever server
    connection ran it, for the next client of that connection, while our next transaction
    may run on another one without it. `SET LOCAL` ends with the transaction, so it is set
    and reset on the server connection that runs the statement. Several statements in one
    simple-protocol query (what Django's client-side-binding cursors send) run as one
    implicit transaction, so the limits hold in autocommit as inside `atomic()`. The cursor
    is then moved past the SETs' empty results to the statement's own."""

    def __init__(self, limits: dict[str, str]):
        self.prefix = "".join(f"SET LOCAL {name} = {int(value)}; " for name, value in limits.items())
        self.skip = len(limits)

    def __call__(self, execute, sql, params, many, context):
        if many or not self.prefix:
            return execute(sql, params, many, context)
        result = execute(self.prefix + sql, params, many, context)
        cursor = context["cursor"].cursor
        for _ in range(self.skip):
            cursor.nextset()
        return result


def apply_worker_limits(connection, *, statement_timeout_ms: int, application_name: str) -> None:
    """Give a worker's new connection its limits: once for the session on a direct
    connection; per transaction (LocalLimits) behind a transaction pooler. application_name
    is reported to the client (GUC_REPORT), so PgBouncer tracks it per client and sets it on
    each server connection it lends: a session SET is safe for it either way."""
    limits = session_limits(statement_timeout_ms)
    with connection.cursor() as cur:
        if conf.get().TRANSACTION_POOLER:
            cur.execute("SELECT set_config('application_name', %s, false)", [application_name])
        else:
            cur.execute(
                "SELECT set_config('statement_timeout', %s, false),"
                " set_config('idle_in_transaction_session_timeout', %s, false),"
                " set_config('application_name', %s, false)",
                [limits["statement_timeout"], limits["idle_in_transaction_session_timeout"],
                 application_name])
    if conf.get().TRANSACTION_POOLER and not any(
            isinstance(w, LocalLimits) for w in connection.execute_wrappers):
        connection.execute_wrappers.append(LocalLimits(limits))
