"""A `run_job_workers` process keeps no connection of its start-up: the system checks (the
database cache's table, looked up on its database) and, with --shard, the shard's ids check
open one on the main thread before the pool starts, and the command closes them. Once it
runs, the process holds its pool's connections and its listener, the budget the scaling
guide counts, and nothing else.

The worker runs with PGAPPNAME set: a connection that names itself (the pool's `jobqueue-worker
<host>-<pid>`, the listener's `jobqueue-listener`) keeps its own name, and one opened by
Django's defaults, as the checks' is, carries PGAPPNAME's. The shard's case runs in
tests/system/test_shard_rate_limits.py, on throwaway clusters."""
import uuid

import psycopg
import pytest
from django.db import connection

from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, stop_workers, wait_until_no_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def sessions_named(name: str) -> int:
    s = connection.settings_dict
    with psycopg.connect(host=s["HOST"], port=s["PORT"], user=s["USER"],
                         password=s.get("PASSWORD") or None, dbname=s["NAME"],
                         autocommit=True) as admin:
        return admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                             [name]).fetchone()[0]


@pytest.mark.parametrize("supervised", [[], ["--processes", "1"]],
                         ids=["one process", "supervised"])
def test_a_worker_keeps_no_connection_its_start_up_checks_opened(supervised):
    name = f"start-up-{uuid.uuid4().hex[:8]}"
    proc = spawn_workers("--threads", "2", *supervised,
                         env={"PGAPPNAME": name, "JOB_WORKER_LOG_LEVEL": "DEBUG"})
    out = Output(proc)
    try:
        # A lane's second claim, a poll interval after its first: the pool runs, and the
        # start-up's connections were closed before it started.
        out.wait_for_line("polled, claimed", count=2, timeout=60)
        wait_until_no_session(lambda: sessions_named(name), name)
        assert proc.poll() is None, out.text()[-3000:]
    finally:
        stop_workers(proc)
