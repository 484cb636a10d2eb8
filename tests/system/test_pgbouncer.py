"""The queue through a real PgBouncer in transaction mode (Debian's `pgbouncer` package).

Each module run starts its own pgbouncer on a free loopback port, `pool_mode = transaction`,
in front of the suite's PostgreSQL (a pgbouncer.ini and userlist in a tmp dir, auth_type
trust), and stops it at the end. Producers enqueue through the pooler (a DATABASES alias
pointing at it, JOB_DATABASE), `run_job_workers` subprocesses run with DATABASE_URL at the
pooler, JOB_TRANSACTION_POOLER=true and JOB_LISTEN_DATABASE_URL at PostgreSQL directly.
PGBOUNCER_JOBS=50000 runs the bigger drain (default 3000).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
from django.db import connection, connections
from django.test import override_settings

from django_pg_jobqueue import enqueue, enqueue_many
from django_pg_jobqueue.models import Job
from tests.handlers.chaos_handlers import Output
from tests.utils import REPO, stop_workers, wait_for, wait_until_jobs, worker_database_url

pytestmark = [pytest.mark.pgbouncer, pytest.mark.e2e,
              pytest.mark.django_db(transaction=True, databases="__all__")]

PGBOUNCER = shutil.which("pgbouncer") or next(
    (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None)
if PGBOUNCER is None:
    pytest.skip("PgBouncer is not installed: run `sudo apt-get install -y pgbouncer` "
                "(`make test` installs it when run as root with apt-get)", allow_module_level=True)

JOBS = int(os.environ.get("PGBOUNCER_JOBS", "3000"))
# What must not appear in any log: the errors of session state meeting a transaction pooler.
BAD_LOG = re.compile(r"prepared statement|protocol|\bERROR\b|Traceback|FATAL", re.I)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bouncer:
    def __init__(self, upstream: dict, pool_size: int = 8):
        self.dir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
        self.port = _free_port()
        self.upstream = upstream
        (self.dir / "userlist.txt").write_text(f'"{upstream["USER"]}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(f"""\
[databases]
* = host={upstream["HOST"]} port={upstream["PORT"]}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir}/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 500
ignore_startup_parameters = extra_float_digits,options
admin_users = {upstream["USER"]}
pidfile = {self.dir}/pgbouncer.pid
""")
        args = [PGBOUNCER, str(self.dir / "pgbouncer.ini")]
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            shutil.chown(self.dir, "postgres" if _user_exists("postgres") else "nobody")
            args[1:1] = ["-u", "postgres" if _user_exists("postgres") else "nobody"]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self._out = Output(self.process)  # its log, read as it comes
        try:
            self._out.wait_for_line("process up", timeout=10)  # listening by then
        except AssertionError:
            self.stop()
            raise AssertionError("pgbouncer did not start:\n" + self.log()) from None

    def url(self, dbname: str) -> str:
        return f"postgres://{self.upstream['USER']}@127.0.0.1:{self.port}/{dbname}"

    def log(self) -> str:
        return self._out.text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.fixture(scope="module")
def bouncer(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        settings_dict = dict(connection.settings_dict)
    b = Bouncer(settings_dict)
    yield b
    b.stop()
    shutil.rmtree(b.dir, ignore_errors=True)


def _alias_through(bouncer, name: str):
    """A DATABASES alias: the test database through `bouncer`."""
    entry = dict(connection.settings_dict)
    entry.update(HOST="127.0.0.1", PORT=str(bouncer.port), DISABLE_SERVER_SIDE_CURSORS=True,
                 OPTIONS={**entry.get("OPTIONS", {})}, CONN_MAX_AGE=0)
    entry["OPTIONS"].pop("pool", None)
    connections.settings[name] = entry
    return name


def _drop_alias(name: str) -> None:
    connections[name].close()
    del connections[name]
    del connections.settings[name]


@pytest.fixture(scope="module")
def aliases(bouncer, django_db_blocker):
    """The aliases "pooled" (through `bouncer`) and "pooled_one" (through a PgBouncer whose
    pool holds one server connection), defined before each test's database set-up: Django's
    test case allows the aliases it knows then (the tests ask for "__all__")."""
    with django_db_blocker.unblock():
        small = Bouncer(bouncer.upstream, pool_size=1)
        names = [_alias_through(bouncer, "pooled"), _alias_through(small, "pooled_one")]
    yield
    with django_db_blocker.unblock():
        for name in names:
            _drop_alias(name)
    small.stop()
    shutil.rmtree(small.dir, ignore_errors=True)


@pytest.fixture
def pooled(aliases, transactional_db):
    """The queue's database (JOB_DATABASE) is "pooled", in transaction-pooler mode."""
    with override_settings(JOB_DATABASE="pooled", JOB_TRANSACTION_POOLER=True,
                           JOB_LISTEN_DATABASE_URL=worker_database_url()):
        yield connections["pooled"]


def _workers(bouncer, *args, env=None):
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1",
                "DATABASE_URL": bouncer.url(connection.settings_dict["NAME"]),
                "JOB_TRANSACTION_POOLER": "true",
                "JOB_LISTEN_DATABASE_URL": worker_database_url(),
                "JOB_EXTRA_HANDLER_MODULES": "django_pg_jobqueue.builtin_handlers",
                "JOB_WORKER_LOG_LEVEL": "INFO", **(env or {})}
    return subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "run_job_workers", *args], env=full_env,
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stop(procs) -> str:
    out = []
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            out.append(p.communicate(timeout=30)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            out.append(p.communicate()[0])
    return "\n".join(out)


def _bad_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if BAD_LOG.search(line)]


def _listening() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND query ILIKE 'LISTEN %%' AND application_name = 'jobqueue-listener'")
        return cur.fetchone()[0]


def test_jobs_enqueued_through_the_pooler_drain_on_workers_behind_it(pooled, bouncer):
    batch = 500
    for start in range(0, JOBS, batch):
        enqueue_many([{"type": "noop", "payload": {"n": i}}
                      for i in range(start, min(start + batch, JOBS))])
    one = enqueue("noop", {"single": True})  # one-job statement, the prepared one elsewhere
    assert Job.objects.using("default").filter(status="queued").count() == JOBS + 1

    procs = [_workers(bouncer, "--threads", "4") for _ in range(2)]
    try:
        wait_until_jobs("succeeded", using="default", timeout=120,
                        message=f"{JOBS + 1} jobs to succeed")
    finally:
        logs = _stop(procs)
    assert Job.objects.using("default").get(pk=one.pk).status == "succeeded"
    assert Job.objects.using("default").filter(status="succeeded").count() == JOBS + 1
    from django_pg_jobqueue.audit import audit

    report = audit(job_ids=None)
    assert report.ok, report.violations[:5]
    assert not _bad_lines(logs), _bad_lines(logs)[:10]
    assert not _bad_lines(bouncer.log()), _bad_lines(bouncer.log())[:10]


def test_a_job_enqueued_through_the_pooler_wakes_idle_workers_within_50_ms(pooled, bouncer):
    # No fetch cooldown: the wake-everyone claim after LISTEN connects finds nothing, which
    # would otherwise hold the next notified claim back for the cooldown (not the pooler's).
    proc = _workers(bouncer, "--threads", "2", "--poll-interval", "5",
                    env={"JOB_WORKER_LOG_LEVEL": "DEBUG", "JOB_FETCH_COOLDOWN_SECONDS": "0"})
    out = Output(proc)
    try:
        # The worker's LISTEN connection up, and the claim that follows it come back empty.
        out.wait_for_line("polled, claimed 0 of", after="LISTEN connection up", timeout=30)
        latencies = []
        for i in range(5):
            job = enqueue("noop", {"wake": i})
            claimed = wait_for(  # polls, every 5 ms: the latency is read from the row
                lambda job=job: Job.objects.using("default").filter(
                    pk=job.pk, started_at__isnull=False).values_list(
                    "created_at", "started_at").first(),
                timeout=10, interval=0.005, message="the claim")
            latencies.append((claimed[1] - claimed[0]).total_seconds())
            wait_until_jobs("succeeded", pk=job.pk, using="default", timeout=10,
                            message="one job at a time")
    finally:
        stop_workers(proc, timeout=30)
        out.join(10)
        logs = out.text()
    latencies.sort()
    print(f"wake-up latencies through PgBouncer (s): {latencies}")
    assert latencies[len(latencies) // 2] < 0.05, latencies
    assert latencies[-1] < 1.0, latencies  # far below the 5 s poll: never a poll
    assert not _bad_lines(logs), _bad_lines(logs)[:10]
    assert not _bad_lines(bouncer.log()), _bad_lines(bouncer.log())[:10]


def test_the_worker_timeouts_hold_per_transaction_and_leak_to_no_other_client(pooled, bouncer):
    """statement_timeout is SET LOCAL in each statement's own transaction: it applies to the
    worker's statements through the pooler, and a client sharing the pooler's server
    connections never sees it."""
    from django.db.backends.signals import connection_created

    from django_pg_jobqueue.worker.pool import _set_session_limits

    got = {}

    def worker_thread():
        connection_created.connect(_set_session_limits)
        try:
            with override_settings(JOB_STATEMENT_TIMEOUT_MS=300):
                db = connections["pooled"]
                with db.cursor() as cur:
                    cur.execute("SELECT current_setting('statement_timeout')")
                    got["setting"] = cur.fetchone()[0]
                    try:
                        cur.execute("SELECT pg_sleep(2)")
                        got["slept"] = True
                    except Exception as exc:  # noqa: BLE001
                        got["error"] = str(exc)
                db.close()
        finally:
            connection_created.disconnect(_set_session_limits)

    t = threading.Thread(target=worker_thread)
    t.start()
    t.join(30)
    assert got.get("setting") == "300ms", got
    assert "statement timeout" in got.get("error", ""), got
    # Another client of the same pool (pool size 8): none of its server connections kept it.
    others = [psycopg.connect(bouncer.url(connection.settings_dict["NAME"]), autocommit=True)
              for _ in range(8)]
    try:
        seen = {c.execute("SHOW statement_timeout").fetchone()[0] for c in others}
    finally:
        for c in others:
            c.close()
    assert seen == {"0"}, seen


@pytest.mark.parametrize("pooler_mode", [False, True], ids=["mode-off", "mode-on"])
def test_enqueue_through_pgbouncer_needs_the_pooler_mode(aliases, transactional_db, pooler_mode):
    """Two producers whose transactions share one server connection (a pool of one makes it
    certain): with prepared statements, both prepare `_pg3_0` there and the second enqueue
    fails; in pooler mode both succeed."""
    alias, errors = "pooled_one", []
    first_done, second_done = threading.Event(), threading.Event()

    def producer(i, hold: bool):
        try:
            enqueue("noop", {"producer": i})
        except Exception as exc:  # noqa: BLE001
            errors.append(str(exc))
        finally:
            (second_done if i else first_done).set()
            if hold:  # keep the connection (its prepared statement) until the other has run
                second_done.wait(10)
            connections[alias].close()

    with override_settings(JOB_DATABASE=alias, JOB_TRANSACTION_POOLER=pooler_mode,
                           JOB_LISTEN_DATABASE_URL=worker_database_url(),
                           JOB_PREPARED_STATEMENTS=True):
        holder = threading.Thread(target=producer, args=(0, True))
        holder.start()
        first_done.wait(10)
        second = threading.Thread(target=producer, args=(1, False))
        second.start()
        second.join(10)
        holder.join(10)
    if pooler_mode:
        assert errors == []
        assert Job.objects.filter(type="noop").count() == 2
    else:
        assert len(errors) == 1 and "prepared statement" in errors[0], errors
