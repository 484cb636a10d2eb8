"""The worker's connection budget: its machinery (dispatchers, completer, renewer, reaper,
pruner, periodic enqueuer, the executors' own outcome writes) shares one bounded pool of
server connections, and an executor thread holds a connection only while a job's handler
uses one, whatever the number of threads."""
import os
import socket
import time

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import override_settings

from django_pg_jobqueue import db, services
from django_pg_jobqueue.models import Job
from tests.utils import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 32
BUDGET = 4  # JOB_WORKER_POOL_SIZE's default for one lane: the number of lanes plus 3
WORKER_APP = f"jobqueue-worker {socket.gethostname()}-{os.getpid()}"


@pytest.fixture
def server_connections():
    """`server_connections()`: this process's worker sessions in pg_stat_activity opened since
    the test began (the test's own session excluded; the listener is off in these tests: one
    connection more)."""
    s = connection.settings_dict
    admin = psycopg.connect(host=s["HOST"], port=s["PORT"], user=s["USER"],
                            password=s.get("PASSWORD") or None, dbname=s["NAME"],
                            autocommit=True, application_name="budget-test-counter")

    def sessions() -> set[int]:
        return {pid for (pid,) in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = %s",
            [WORKER_APP, s["NAME"]]).fetchall()}  # another suite's workers on the server: not ours

    # Sessions of this process that an earlier test left open (they took the worker's name
    # while its pool ran) are not this test's pool: counted out, so that the count is the
    # pool's alone whatever ran before it.
    earlier = sessions()

    def ours() -> set[int]:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            own = cur.fetchone()[0]
        return sessions() - earlier - {own}

    def count() -> int:
        return len(ours())

    count.sessions = ours  # type: ignore[attr-defined]
    yield count
    admin.close()


def drain_sampling(count, n: int, timeout: float = 120) -> int:
    """Wait until `n` jobs finished; the most connections seen meanwhile, each counted once it
    was seen in two samples in a row: the pool closes an idle connection (max_idle) and opens
    another later, and the closed one's backend may still be listed while it exits (seen under
    load: a third session for one sample); a connection the pool really holds lasts longer."""
    peak, deadline, before = 0, time.monotonic() + timeout, set()
    while Job.objects.filter(status__in=["succeeded", "failed"]).count() < n:
        assert time.monotonic() < deadline, "the drain did not finish"
        now = count.sessions()
        peak, before = max(peak, len(now & before)), now
        time.sleep(0.02)  # by design: a sample every 20 ms while the drain runs
    return max(peak, len(count.sessions() & before))


def test_32_threads_of_no_op_jobs_use_no_more_connections_than_the_pool_holds(
        worker_pool, server_connections):
    services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(1500)])
    worker_pool(threads=THREADS, listen=False)
    peak = drain_sampling(server_connections, 1500)
    assert 1 <= peak <= BUDGET
    assert not Job.objects.exclude(status="succeeded").exists()


def test_handlers_that_only_report_progress_hold_no_connection_of_their_own(
        worker_pool, server_connections):
    # `sleep` reports progress (ctx.progress) four times a second: the queue's bookkeeping,
    # written on the worker's pool, not on a connection of the thread's own.
    services.enqueue_many([{"type": "sleep", "payload": {"seconds": 0.5}}] * THREADS)
    worker_pool(threads=THREADS, listen=False)
    peak = drain_sampling(server_connections, THREADS)
    assert 1 <= peak <= BUDGET
    assert not Job.objects.exclude(status="succeeded").exists()


def test_threads_whose_handlers_used_the_orm_give_their_connections_back(
        worker_pool, custom_handler, server_connections):
    def uses_the_orm(ctx, payload):
        assert not get_user_model().objects.filter(pk=0).exists()
        assert connections["default"].connection is not None  # its own, for the job

    custom_handler("uses_the_orm", uses_the_orm)
    services.enqueue_many([{"type": "uses_the_orm", "payload": {"i": i}} for i in range(300)])
    worker_pool(threads=THREADS, listen=False)
    drain_sampling(server_connections, 300)
    assert not Job.objects.exclude(status="succeeded").exists()
    # Closed after each job (CONN_MAX_AGE = 0), or after Executor.IDLE_CLOSE_SECONDS
    # without a job (a CONN_MAX_AGE that keeps it): only the machinery's pool remains.
    # Polls: the server's count (pg_stat_activity) is what is measured.
    wait_for(lambda: server_connections() <= BUDGET, timeout=10,
             message="executor threads to close their handlers' connections")


def test_the_pool_size_setting_bounds_the_machinery_and_the_drain_still_finishes(
        worker_pool, server_connections):
    services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(600)])
    services.enqueue_many([{"type": "fail", "payload": {"permanent": True}}] * 20)
    with override_settings(JOB_WORKER_POOL_SIZE=2):
        pool = worker_pool(threads=8, listen=False)
        assert pool.db_pool_size == 2
        peak = drain_sampling(server_connections, 620)
    assert peak <= 2
    assert Job.objects.filter(status="succeeded").count() == 600
    assert Job.objects.filter(status="failed").count() == 20  # the executors' own writes


def test_pooled_sessions_keep_the_worker_limits_and_the_pool_goes_with_the_worker(
        worker_pool):
    with override_settings(JOB_STATEMENT_TIMEOUT_MS=12345):
        pool = worker_pool(threads=1, listen=False)
        for _ in range(3):  # a fresh checkout each time; the limits set once per connection
            with db.worker_connection():
                assert db.alias() == db.WORKER_ALIAS
                with db.queue_connection().cursor() as cur:
                    cur.execute("SELECT current_setting('statement_timeout'),"
                                " current_setting('application_name')")
                    assert cur.fetchone() == ("12345ms", WORKER_APP)
            assert db.alias() == "default"
        pool.shutdown(grace=1)
    assert not db.worker_pool_open()
    assert db.WORKER_ALIAS not in connections.settings  # never in DATABASES
    with db.worker_connection():  # outside a worker: the queue's own alias, as before
        assert db.alias() == "default"
