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

The worker's connection budget (see `worker_connection()` below): in a worker process the
machinery's statements run on a private alias, WORKER_ALIAS, a copy of the queue's DATABASES
entry with Django's psycopg pool on it, bounded by JOB_WORKER_POOL_SIZE; executor threads
hold no connection of their own between jobs.
"""
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from django.db import connections, transaction
from django.db.utils import ConnectionDoesNotExist, load_backend

from . import conf, sql

logger = logging.getLogger(__name__)
PREPARE_THRESHOLD = 5  # psycopg's default; our calls pass prepare=True anyway
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ_OID, psycopg.pq.Format.TEXT)
_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK


def alias() -> str:
    """The DATABASES alias this thread's queue statements go to: the queue's database
    (`home_alias()`), the worker's pooled alias inside `worker_connection()`, or the replica
    inside `reading()`."""
    return getattr(_thread, "alias", None) or home_alias()


# Shards by queue (JOB_SHARDS, shards.py): the queue's database is JOB_DATABASE, unless this
# process works a shard (`run_job_workers --shard`: `serve_shard`) or this block writes or
# reads a job of another one (`on_database`).
_process_home: str | None = None


def home_alias() -> str:
    """The alias of the queue's database on this thread: the shard of `on_database()`, the
    shard this process serves (`serve_shard`), else JOB_DATABASE. The router sends the
    queue's models there."""
    return getattr(_thread, "home", None) or _process_home or conf.get().DATABASE


def serve_shard(shard_alias: str | None) -> None:
    """Make `shard_alias` this process's queue database (a worker of one shard); None:
    JOB_DATABASE again."""
    global _process_home
    _process_home = shard_alias


def serving_shard() -> bool:
    """Whether this process works a shard rather than JOB_DATABASE."""
    return _process_home is not None


@contextmanager
def on_database(target: str | None):
    """Run this block's queue statements, transactions and models on `target` (a shard's
    alias; None or the current one: no change). Outside a worker pool's connection and the
    replica: a shard is a database of its own, reached through its own DATABASES entry."""
    if target is None or target == home_alias():
        yield
        return
    saved = (getattr(_thread, "alias", None), getattr(_thread, "read_alias", None),
             getattr(_thread, "home", None))
    _thread.alias = _thread.read_alias = None
    _thread.home = target
    try:
        yield
    finally:
        _thread.alias, _thread.read_alias, _thread.home = saved


def model_read_alias() -> str | None:
    """Where the router sends the queue's models' reads on this thread: the replica inside
    `reading()`, else None (JOB_DATABASE)."""
    return getattr(_thread, "read_alias", None)


@dataclass(frozen=True)
class ReadTarget:
    """Where `reading()` sends a block's reads: `alias` None means JOB_DATABASE (no replica
    configured, or `reason` says why it was left aside); `lag` is the replica's, in seconds."""
    alias: str | None
    lag: float | None = None
    reason: str = ""


_read_checks: dict[str, tuple[float, ReadTarget]] = {}
_read_checks_lock = threading.Lock()
READ_CHECK_SECONDS = 1.0


def read_target(*, recheck: bool = False) -> ReadTarget:
    """JOB_READ_DATABASE if it answers and is at most JOB_READ_MAX_LAG_SECONDS behind,
    checked at most once a second per process (the check is one statement on the replica),
    or now with `recheck` (after a read there failed)."""
    settings = conf.get()
    replica = settings.READ_DATABASE
    if not replica:
        return ReadTarget(None)
    now = time.monotonic()
    with _read_checks_lock:
        checked = _read_checks.get(replica)
        if not recheck and checked is not None and now - checked[0] < READ_CHECK_SECONDS:
            return checked[1]
    connection = connections[replica]
    try:
        with connection.cursor() as cur:
            cur.execute(sql.REPLICA_LAG)
            lag = float(cur.fetchone()[0])
    except Exception as error:  # noqa: BLE001 - any failure: read from the primary instead
        logger.warning("JOB_READ_DATABASE %r does not answer, reading from JOB_DATABASE: %s",
                       replica, error)
        connection.close_if_unusable_or_obsolete()
        target = ReadTarget(None, None, f"{replica} does not answer")
    else:
        if lag > settings.READ_MAX_LAG_SECONDS:
            target = ReadTarget(None, lag, f"{replica} is {lag:.1f} s behind "
                                           f"(JOB_READ_MAX_LAG_SECONDS "
                                           f"{settings.READ_MAX_LAG_SECONDS:g})")
        else:
            target = ReadTarget(replica, lag)
    with _read_checks_lock:
        _read_checks[replica] = (time.monotonic(), target)
    return target


@contextmanager
def reading(target: ReadTarget | None = None):
    """Send this block's reads of the queue (raw statements and the models) to the replica of
    `read_target()`; a block that writes must not run inside. Yields the target."""
    target = read_target() if target is None else target
    if getattr(_thread, "home", None) is not None:  # a shard's: JOB_READ_DATABASE is not its
        yield ReadTarget(None, None, "the job's shard has no replica")
        return
    if target.alias is None or getattr(_thread, "alias", None) is not None:
        yield target
        return
    _thread.alias = _thread.read_alias = target.alias
    try:
        yield target
    finally:
        _thread.alias = _thread.read_alias = None


def queue_connection():
    """This thread's Django connection to the queue's database (see `alias()`)."""
    return connections[alias()]


def listen_connection_params(application_name: str) -> dict:
    """psycopg.connect() keyword arguments of a LISTEN connection (the worker's listener, the
    producers' waits for outcomes): JOB_LISTEN_DATABASE_URL when set (a direct connection,
    past a transaction pooler), otherwise the parameters of the queue's DATABASES entry."""
    c = conf.get()
    if c.LISTEN_DATABASE_URL and home_alias() == c.DATABASE:  # a shard's listens directly
        params = psycopg.conninfo.conninfo_to_dict(c.LISTEN_DATABASE_URL)
        params.setdefault("application_name", application_name)
        params.setdefault("connect_timeout", 5)
        return params
    return connection_params(application_name)


def connection_params(application_name: str) -> dict:
    """psycopg.connect() keyword arguments of the queue's DATABASES entry (the one this thread
    uses), plain values only: what another process may connect with (witness.py)."""
    params = queue_connection().get_connection_params()
    for name in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(name, None)
    params.setdefault("application_name", application_name)
    params.setdefault("connect_timeout", 5)
    return params


def atomic(**kwargs):
    """transaction.atomic() on the queue's database (see `alias()`)."""
    return transaction.atomic(using=alias(), **kwargs)


def savepointed(write, *args, **kwargs):
    """Run a write; inside a transaction (a test's), within a savepoint, so that a statement
    the database refuses does not abort the transaction (a worker runs in autocommit, where
    each statement is its own transaction and this adds nothing)."""
    if queue_connection().in_atomic_block:
        with atomic():
            return write(*args, **kwargs)
    return write(*args, **kwargs)


def fetch_all(sql: str, params: dict | tuple | list) -> list[tuple]:
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
        cur = _statement_cursor(raw)
        cur.execute(sql, params, prepare=True)
        # Whether it returned rows, from the result's status: `cur.description` would build a
        # Column object per column to say the same (about 1.7 us a column; a claim has 20).
        return cur.fetchall() if cur.pgresult.status == _TUPLES_OK else []


def _statement_cursor(raw: psycopg.Connection) -> psycopg.Cursor:
    """The psycopg cursor `fetch_all` runs its statements on, made once per server connection
    and kept on it. A new cursor copies the connection's adapters and the loader below copies
    them again: about 10 us a statement, twice per API job creation, that reuse saves. Only
    one thread uses a connection at a time (Django's per-thread connections, the worker
    pool's checkouts), so only one uses its cursor; each `execute` starts it afresh."""
    cur = getattr(raw, "_jobqueue_cursor", None)
    if cur is None or cur.closed:
        cur = psycopg.Cursor(raw)
        # psycopg's own (C) timestamptz loader rather than the Python one Django installs
        # on its connections: a claim returns four timestamps per job. The session's
        # TimeZone is UTC either way (Django sets it), so the values are the same.
        cur.adapters.register_loader(_TIMESTAMPTZ_OID, _TIMESTAMPTZ_LOADER)
        raw._jobqueue_cursor = cur
    return cur


# --- the worker's connection pool ------------------------------------------------------------
# Django keeps one connection per thread and alias, so a worker process with N executor
# threads held N + 6 server connections once its handlers had touched the database. Instead
# the machinery borrows from one bounded pool: Django's own (OPTIONS "pool", psycopg_pool),
# on a private alias so that it is the worker's alone. Handlers' connections (on any alias,
# the queue's included) stay outside it, so that handlers holding connections can never
# starve the renewer or the completer, and they are closed (or returned to the project's own
# pool) after each job.
WORKER_ALIAS = "django_pg_jobqueue_worker"
POOL_TIMEOUT_SECONDS = 5.0  # waiting for a free connection, or for one to be opened
POOL_RECONNECT_SECONDS = 1.0  # then give up: the loops' own backoff takes over
POOL_MAX_IDLE_SECONDS = 10.0  # an idle worker process keeps min_size (1) connection

_thread = threading.local()
_pool_lock = threading.Lock()
_pool_users = 0
_pool_settings: dict | None = None  # WORKER_ALIAS's settings while a worker pool is open


def open_worker_pool(size: int) -> None:
    """Set up WORKER_ALIAS: the queue's DATABASES entry, pooled, at most `size` connections.
    Nested opens (two worker pools in one process, in tests) share the first one's pool.

    The alias is not added to `DATABASES` (connections.settings): each thread that borrows
    gets a wrapper of its own in `connections` (`_worker_wrapper`), as Django does for
    connections created at run time. So `connections.all()`, `close_old_connections()` and
    the test runner's per-alias rules leave it alone, and `transaction.atomic(using=...)`
    still finds it on the thread that borrowed."""
    global _pool_users, _pool_settings
    with _pool_lock:
        _pool_users += 1
        if _pool_users > 1:
            return
        pool_log = logging.getLogger("psycopg.pool")
        if pool_log.level == logging.NOTSET:
            # Through an outage psycopg_pool warns on every failed connect and every broken
            # connection it discards; the worker's loops report the outage already, at a
            # bounded rate. A project that sets this logger's level keeps its own.
            pool_log.setLevel(logging.ERROR)
        base = connections.settings[home_alias()]
        _pool_settings = {
            **base,
            # Connections go back to the pool after each unit of work; the broken ones are
            # caught by the loops and discarded on return (no `SELECT 1` on each checkout).
            "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False,
            "OPTIONS": {**base.get("OPTIONS", {}), "pool": {
                # An idle process keeps one connection: the others the pool opened under
                # load are closed once unused for POOL_MAX_IDLE_SECONDS.
                "name": "jobqueue-worker", "min_size": 1, "max_size": size,
                "max_idle": POOL_MAX_IDLE_SECONDS,
                "timeout": POOL_TIMEOUT_SECONDS,
                # psycopg_pool retries a failed connect with a backoff that grows to minutes;
                # give up after a second instead, so that the next checkout tries again and
                # the worker reconnects within its own (capped) backoff after an outage.
                "reconnect_timeout": POOL_RECONNECT_SECONDS}},
        }


def close_worker_pool() -> None:
    """Close the pool (once its last user closes it); WORKER_ALIAS is then gone."""
    global _pool_users, _pool_settings
    with _pool_lock:
        _pool_users = max(0, _pool_users - 1)
        if _pool_users or _pool_settings is None:
            return
        try:
            wrapper = _worker_wrapper()
            wrapper.close()
            wrapper.close_pool()
        finally:
            _pool_settings = None
            _forget_worker_wrapper()


def worker_pool_open() -> bool:
    return _pool_settings is not None


def _worker_wrapper():
    """This thread's Django connection on WORKER_ALIAS, made on first use."""
    settings_dict = _pool_settings
    try:
        wrapper = connections[WORKER_ALIAS]
    except ConnectionDoesNotExist:
        wrapper = None
    if wrapper is None or wrapper.settings_dict is not settings_dict:  # a pool since closed
        wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict,
                                                                        WORKER_ALIAS)
        connections[WORKER_ALIAS] = wrapper
    return wrapper


def _forget_worker_wrapper() -> None:
    try:
        del connections[WORKER_ALIAS]
    except AttributeError:
        pass


def use_worker_pool() -> None:
    """For the rest of this thread's life (a lane's, the completer's): its queue
    statements borrow from the worker's pool, and keep what they borrowed until
    `return_worker_connection()`, which the thread calls when it goes idle. A checkout and
    return costs a few hundred microseconds of Python: a busy loop keeps its connection."""
    if _pool_settings is not None:
        _worker_wrapper()
        _thread.alias = WORKER_ALIAS


def return_worker_connection() -> None:
    """Give the connection this thread borrowed back to the pool (see use_worker_pool)."""
    if getattr(_thread, "alias", None) == WORKER_ALIAS:
        try:
            connections[WORKER_ALIAS].close()
        except ConnectionDoesNotExist:
            pass


@contextmanager
def worker_connection():
    """Run this block's queue statements (`queue_connection()`, `atomic()`, `fetch_all()`) on
    a connection borrowed from the worker's pool, given back when the outermost block ends
    (discarded by the pool if it broke). Outside a worker process (drain, commands, tests
    calling `run_once()`): no change."""
    if getattr(_thread, "alias", None) is not None or _pool_settings is None:
        yield
        return
    wrapper = _worker_wrapper()
    _thread.alias = WORKER_ALIAS
    try:
        yield
    finally:
        _thread.alias = None
        wrapper.close()  # to the pool: Django's close() of a pooled connection is putconn


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
    raw = connection.connection
    # A pooled connection (the worker's, or a project's OPTIONS "pool") is announced again on
    # every checkout, and its session already has the limits: no round trip then.
    if getattr(raw, "_jobqueue_limits", None) != (statement_timeout_ms, application_name):
        _set_session_limits(connection, limits, application_name)
        raw._jobqueue_limits = (statement_timeout_ms, application_name)
    if conf.get().TRANSACTION_POOLER and not any(
            isinstance(w, LocalLimits) for w in connection.execute_wrappers):
        connection.execute_wrappers.append(LocalLimits(limits))


def discard_session(raw) -> None:
    """Reset the session of `raw` (a psycopg connection a handler changed: worker/hygiene.py)
    to a new one's (sql.DISCARD_SESSION)."""
    raw.execute(sql.DISCARD_SESSION)


def listen(raw) -> None:
    """Subscribe `raw` (the listener's own psycopg connection, in autocommit) to the wake-ups
    enqueues, retries and the stager send (sql.NOTIFY_CHANNEL: each payload a queue name)."""
    raw.execute(f"LISTEN {sql.NOTIFY_CHANNEL}")


def _set_session_limits(connection, limits: dict[str, str], application_name: str) -> None:
    with connection.cursor() as cur:
        if conf.get().TRANSACTION_POOLER:
            cur.execute(sql.SESSION_APPLICATION_NAME, [application_name])
        else:
            cur.execute(sql.SESSION_LIMITS,
                        [limits["statement_timeout"], limits["idle_in_transaction_session_timeout"],
                         application_name])
