"""The database goes away for 20+ seconds in the middle of a drain, then comes back.

We cannot stop the shared PostgreSQL server, so the test database is made unreachable
instead: `ALTER DATABASE ... ALLOW_CONNECTIONS false` (superusers included) and every one of
its sessions terminated, again every half second, until it is allowed back. To a worker that
is what an outage looks like: its connections drop and reconnecting fails.

Worker processes must stay alive, log at a bounded rate (no stack trace per poll), claim
again within seconds of the database's return, and finish every job; the API answers 503
with a JSON body meanwhile.
"""
import json
import subprocess
import threading
import time
from collections import Counter
from datetime import datetime

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.compat import UTC
from django_pg_jobqueue.models import Job
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.handlers.chaos_handlers import Output, worker_env
from tests.utils import spawn_workers, wait_for, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

OUTAGE_SECONDS = 20
PROCESSES, THREADS = 2, 4


class Outage:
    """Makes the test database unreachable while active (and always reopens it)."""

    def __init__(self):
        s = connection.settings_dict
        self.db = s["NAME"]
        self.admin = psycopg.connect(host=s["HOST"], port=s["PORT"], user=s["USER"],
                                     password=s.get("PASSWORD") or None, dbname="postgres",
                                     autocommit=True)
        self.over = threading.Event()
        self.terminated = 0
        self._thread = threading.Thread(target=self._keep_out, daemon=True)

    def _keep_out(self) -> None:
        while True:
            cur = self.admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s"
                " AND pid <> pg_backend_pid()", [self.db])
            self.terminated += cur.fetchone()[0]
            if self.over.wait(0.5):  # a sweep every half second until the outage ends
                return

    def start(self) -> None:
        connection.close()  # our own session goes too; reopened after the outage
        self.admin.execute(f'ALTER DATABASE "{self.db}" ALLOW_CONNECTIONS false')
        self._thread.start()

    def end(self) -> None:
        self.over.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.admin.execute(f'ALTER DATABASE "{self.db}" ALLOW_CONNECTIONS true')
        self.admin.close()


def test_workers_ride_out_a_database_outage_and_finish_every_job(tmp_path):
    user = get_user_model().objects.create_user("viewer", password="x")
    token = Token.objects.create(user=user).key
    n_jobs = 500
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.2}}
                           for _ in range(n_jobs)])
    env = worker_env(tmp_path / "ledger.tsv", JOB_WORKER_LOG_LEVEL="INFO")
    workers = [spawn_workers("--threads", str(THREADS), env=env) for _ in range(PROCESSES)]
    outputs = [Output(w) for w in workers]
    outage = Outage()
    api_during = []
    try:
        wait_until_jobs("succeeded", at_least=50, message="drain under way")
        done_before = Job.objects.succeeded().count()
        outage.start()
        began = time.monotonic()
        client = Client()
        for _ in range(2):
            for path, headers in (("/api/v1/jobs/", {"HTTP_AUTHORIZATION": f"Token {token}"}),
                                  ("/api/health/", {})):
                r = client.get(path, **headers)
                api_during.append((path, r.status_code, r["Content-Type"], r.content))
            connection.close()
        # The outage lasts OUTAGE_SECONDS, spent waiting on the workers: one that exits (dies)
        # meanwhile ends the wait and fails the test.
        for w in workers:
            with pytest.raises(subprocess.TimeoutExpired):
                w.wait(max(0.0, began + OUTAGE_SECONDS - time.monotonic()))
        outage_end_wall = time.time()
        outage.end()
        ended = time.monotonic()
        # Claiming resumes within seconds (workers back off at most 10 s between attempts).
        back = datetime.fromtimestamp(outage_end_wall, tz=UTC)
        first_claim = wait_for(  # polls: the first claim of another process, by its job row
            lambda: Job.objects.filter(started_at__gt=back)  # (the claim writes no event)
            .order_by("started_at").values_list("started_at", flat=True).first(),
            timeout=20, message="a claim after the outage")
        resumed_after = first_claim.timestamp() - outage_end_wall
        wait_until_jobs("succeeded", timeout=60)
        finished_after = time.monotonic() - ended
    finally:
        if not outage.over.is_set() or not outage.admin.closed:
            outage.end()
        for w in workers:
            if w.poll() is None:
                w.send_signal(15)
        codes = [w.wait(20) for w in workers]
    assert codes == [0] * PROCESSES, "\n".join(o.text()[-2000:] for o in outputs)

    # The API said 503, in JSON, never a stack trace.
    for path, status, content_type, body in api_during:
        assert status == 503, (path, status, body[:300])
        assert content_type.startswith("application/json")
        assert b"Traceback" not in body
        json.loads(body)

    # Bounded logging: each thread logs the first error of a run, then one line per 10 s.
    lines = [line for o in outputs for line in o.matching("", since=began, until=ended)]
    errors = [line for line in lines if " ERROR " in line]
    per_process_per_second = len(lines) / PROCESSES / OUTAGE_SECONDS
    assert not [line for line in lines if "Traceback" in line], "\n".join(lines[:80])
    assert per_process_per_second < 2, "\n".join(lines[:80])

    statuses = Counter(Job.objects.values_list("status", flat=True))
    assert statuses == {"succeeded": n_jobs}
    ledger = chaos_handlers.Ledger.read(tmp_path / "ledger.tsv")
    reruns = sum(1 for runs in ledger.by_job.values() if len(runs) > 1)
    print(f"\ndb outage: {OUTAGE_SECONDS}s with {done_before}/{n_jobs} jobs done; "
          f"{outage.terminated} sessions terminated; workers logged {len(lines)} lines "
          f"({len(errors)} errors) during it, {per_process_per_second:.2f}/s per process; first "
          f"claim {resumed_after:.1f}s after the database returned; all {n_jobs} succeeded "
          f"{finished_after:.1f}s after; {reruns} jobs ran twice (leases lapsed in the outage)")
    assert resumed_after < 15
    report = audit()
    assert report.ok, report.format()
