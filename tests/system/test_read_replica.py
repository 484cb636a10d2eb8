"""JOB_READ_DATABASE against a real streaming replica: the demo's server (runserver, its own
process) on a throwaway primary with a hot standby of it (tests/clusters.py). Reads come from
the replica (shown stale while its replay is paused), writes from the API still land on the
primary, and a replica too far behind or down is left aside: the pages read the primary and
say why, never a 500."""
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest

from tests.clusters import streaming_replica, throwaway_primary, wait_replayed
from tests.system.test_adoption import free_port, http
from tests.utils import REPO, manage, wait_for

pytestmark = pytest.mark.e2e


def _env(primary, replica, max_lag: float) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_TRANSACTION_POOLER")}
    env.update(DATABASE_URL=primary.url("jobs"), JOB_READ_DATABASE_URL=replica.url("jobs"),
               JOB_READ_MAX_LAG_SECONDS=str(max_lag), PYTHONUNBUFFERED="1")
    return env


class Server:
    def __init__(self, env, tmp_path):
        self.port = free_port()
        self.log = open(tmp_path / f"server-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "runserver", "--noreload",
             f"127.0.0.1:{self.port}"], env=env, cwd=REPO, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}/api"
        wait_for(self._answers, timeout=60, message="runserver to answer")

    def _answers(self) -> bool:
        try:
            return http(self.base + "/health/")[0] == 200
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        self.log.close()


def test_the_api_reads_from_the_replica_and_leaves_it_aside_when_stale_or_down(tmp_path):
    with throwaway_primary() as primary, streaming_replica(primary) as replica:
        primary.execute("CREATE DATABASE jobs")
        env = _env(primary, replica, max_lag=3600)
        manage(env, "migrate", "--no-input")
        name = f"reader-{uuid.uuid4().hex[:6]}"
        key = manage(env, "shell", "-c", (
            "from django.contrib.auth.models import User\n"
            "from rest_framework.authtoken.models import Token\n"
            f"u = User.objects.create_superuser({name!r}, 'r@example.com', 'x')\n"
            "print(Token.objects.create(user=u).key)")).strip().splitlines()[-1]
        auth = {"Authorization": f"Token {key}", "Content-Type": "application/json"}

        def create(label: str) -> int:
            status, _, body = http(server.base + "/v1/jobs/", method="POST", headers=auth,
                                   data=json.dumps({"type": "noop",
                                                    "payload": {"label": label}}).encode())
            assert status == 201, body
            return json.loads(body)["id"]

        def replica_gauges() -> dict[str, float]:
            # /metrics says whether the reads use the replica and how far behind it is.
            status, _, body = http(server.base.removesuffix("/api") + "/metrics")
            assert status == 200, body
            found = {}
            for line in body.splitlines():
                for name in ("jobqueue_read_replica_in_use", "jobqueue_read_replica_lag_seconds"):
                    if line.startswith(name + "{"):
                        found[name] = float(line.rsplit(" ", 1)[1])
            return found

        def listed():
            status, headers, body = http(server.base + "/v1/jobs/?page_size=100", headers=auth)
            assert status == 200, body
            return {job["id"] for job in json.loads(body)["results"]}, headers

        server = Server(env, tmp_path)
        try:
            first = create("first")
            wait_replayed(primary, replica)
            ids, headers = listed()
            assert first in ids
            assert headers["X-Job-Read-From"] == "replica"
            assert float(headers["X-Job-Read-Lag"]) >= 0
            gauges = replica_gauges()
            assert gauges["jobqueue_read_replica_in_use"] == 1
            assert gauges["jobqueue_read_replica_lag_seconds"] >= 0
            # The health check answers for the primary, the database that takes the writes.
            assert "X-Job-Read-From" not in http(server.base + "/health/")[1]

            # Replay paused: the write lands (on the primary), the replica's pages do not
            # show it yet: the staleness the docs describe.
            replica.execute("SELECT pg_wal_replay_pause()")
            second = create("second")
            ids, headers = listed()
            assert headers["X-Job-Read-From"] == "replica"
            assert first in ids and second not in ids
            assert http(server.base + f"/v1/jobs/{second}/", headers=auth)[0] == 404
        finally:
            server.stop()

        # The same paused replica, with at most 1 s of staleness allowed: left aside.
        server = Server(_env(primary, replica, max_lag=1), tmp_path)
        try:
            def read_from_primary():
                ids, headers = listed()
                return headers["X-Job-Read-From"] == "primary" and (ids, headers)

            ids, headers = wait_for(read_from_primary, timeout=30,
                                    message="reads to leave the stale replica")
            assert {first, second} <= ids
            assert "behind" in headers["X-Job-Read-Fallback"]
            assert float(headers["X-Job-Read-Lag"]) > 1
            gauges = replica_gauges()
            assert gauges["jobqueue_read_replica_in_use"] == 0
            assert gauges["jobqueue_read_replica_lag_seconds"] > 1

            replica.execute("SELECT pg_wal_replay_resume()")
            wait_replayed(primary, replica)
            wait_for(lambda: listed()[1]["X-Job-Read-From"] == "replica", timeout=30,
                     message="reads to come back to the caught-up replica")
            assert {first, second} <= listed()[0]
        finally:
            server.stop()

        # A replica that is down: the pages read the primary and say why.
        server = Server(env, tmp_path)
        try:
            assert listed()[1]["X-Job-Read-From"] == "replica"
            replica.stop()
            ids, headers = wait_for(
                lambda: (lambda r: r[1]["X-Job-Read-From"] == "primary" and r)(listed()),
                timeout=30, message="reads to leave the replica that is down")
            assert {first, second} <= ids
            assert "does not answer" in headers["X-Job-Read-Fallback"]
            status, _, body = http(server.base + f"/v1/jobs/{second}/", headers=auth)
            assert status == 200 and json.loads(body)["id"] == second
        finally:
            server.stop()
