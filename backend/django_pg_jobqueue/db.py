"""Running the hot-path statements as prepared statements.

Django's psycopg backend binds parameters on the client and sends each statement as plain
SQL, so PostgreSQL parses and plans the claim's CTEs on every call: about a third of their
server time (bench/proposals/README.md). The few statements on the hot path (claim,
complete, renew, enqueue) run instead through a server-side-binding psycopg cursor on the
same connection, prepared once per connection and reused. Errors still surface as Django's
database exceptions (the connection's error wrapper), so the worker loops' reconnect
handling is unchanged.

JOB_PREPARED_STATEMENTS=false turns this off (e.g. behind a pooler that cannot keep prepared
statements; PgBouncer 1.21+ in transaction mode can, with max_prepared_statements set).
"""
import psycopg
from django.db import connection

from . import conf

PREPARE_THRESHOLD = 5  # psycopg's default; our calls pass prepare=True anyway
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ_OID, psycopg.pq.Format.TEXT)


def fetch_all(sql: str, params: dict | tuple) -> list[tuple]:
    """Execute one statement (prepared when enabled) and return its rows."""
    if not conf.get().PREPARED_STATEMENTS:
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
