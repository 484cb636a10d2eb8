"""Rate limits set at run time with shards by queue (JOB_SHARDS), on two real databases:
JOB_DATABASE and one shard, each a throwaway cluster (tests/clusters.py), a `run_job_workers`
process on each. A queue's limit is written in the shard that holds the queue and binds that
shard's claims; a job type's is written in both databases, and each counts its own window
(docs/how-to/rate-limits.md). The API lists each database's limits with its `shard`, a
queued job's page says which limit holds it back, and removing a type's limit removes it
from both. The shard's worker keeps no connection on JOB_DATABASE (its start-up checks' are
closed)."""
import json
import os
import subprocess
import sys
import uuid
from contextlib import ExitStack

import pytest

from tests.clusters import throwaway_primary, two_shard_settings
from tests.handlers.chaos_handlers import Output
from tests.utils import REPO, manage, stop_gracefully, wait_until_no_session

pytestmark = pytest.mark.e2e

# shard_b holds `emails`; two_shard_settings's shard_c (on the same cluster) is not in
# JOB_SHARDS: nothing routes to it, and it is never migrated.
SHARDS = {"shard_b": {"number": 1, "queues": ["emails", "reports*"]}}
QUEUE_LIMIT, TYPE_LIMIT, PER_QUEUE = 3, 2, 8

SET = f"""
import json
from django.contrib.auth.models import User
from django.test import Client
from django_pg_jobqueue import enqueue_many, set_rate_limit
from django_pg_jobqueue.models import RateLimit

# noop jobs in a shard's queue; sleep jobs in JOB_DATABASE's and in the shard's.
enqueue_many([{{"type": "noop", "queue": "emails"}}] * {PER_QUEUE}
             + [{{"type": "sleep", "queue": q, "payload": {{"seconds": 0}}}}
                for q in ("default", "reports.daily") for _ in range({PER_QUEUE})])
set_rate_limit(queue="emails", max_starts={QUEUE_LIMIT}, period_seconds=3600, actor="test")
set_rate_limit(type="sleep", max_starts={TYPE_LIMIT}, period_seconds=3600, actor="test")
out = {{"rows": {{alias: sorted(RateLimit.objects.using(alias).values_list(
    "kind", "name", "max_starts")) for alias in ("default", "shard_b")}}}}
User.objects.create_superuser("limits", "l@example.com", "x")
client = Client()
client.login(username="limits", password="x")
out["listed"] = sorted([r["shard"], r["kind"], r["name"], r["max_starts"], r["source"]]
                       for r in client.get("/api/v1/rate-limits/").json())
print(json.dumps(out))
"""

AFTER = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django_pg_jobqueue import remove_rate_limit
from django_pg_jobqueue.models import Job, RateLimit

client = Client()
client.force_login(User.objects.get(username="limits"))
out = {"used": sorted([r["shard"], r["kind"], r["name"], r["used"]]
                      for r in client.get("/api/v1/rate-limits/").json())}
waiting = Job.objects.using("shard_b").filter(queue="emails", status="queued").first()
out["wait"] = client.get(f"/api/v1/jobs/{waiting.id}/").json()["rate_limit_wait"]
out["removed"] = remove_rate_limit(type="sleep")
out["left"] = {alias: sorted(RateLimit.objects.using(alias).values_list("kind", "name"))
               for alias in ("default", "shard_b")}
print(json.dumps(out))
"""


def _started(cluster) -> dict:
    return {f"{queue}/{type_}": n for queue, type_, n in cluster.execute(
        "SELECT queue, type, count(*) FROM jobs WHERE status <> 'queued' GROUP BY 1, 2",
        dbname="jobs")}


def test_run_time_limits_bind_the_claims_of_the_database_they_are_in_force_in(tmp_path):
    with throwaway_primary() as a, throwaway_primary() as b:
        for cluster in (a, b):
            cluster.execute("CREATE DATABASE jobs")
        (tmp_path / "shard_settings.py").write_text(two_shard_settings(b.port, b.port, SHARDS))
        app_name = f"start-up-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_READ_DATABASE_URL",
                            "JOB_TRANSACTION_POOLER")}
        env.update(DATABASE_URL=a.url("jobs"), DJANGO_SETTINGS_MODULE="shard_settings",
                   PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
                   ALLOWED_HOSTS="testserver", PYTHONUNBUFFERED="1", PGAPPNAME=app_name,
                   JOB_WORKER_LOG_LEVEL="DEBUG")
        migrations = [subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "migrate", "--no-input", *database],
            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for database in ([], ["--database", "shard_b"])]
        migrated = [proc.communicate(timeout=180)[0] for proc in migrations]
        assert [proc.returncode for proc in migrations] == [0, 0], migrated
        manage(env, "createcachetable")

        before = json.loads(manage(env, "shell", "-c", SET).strip().splitlines()[-1])
        # The queue's limit in its shard only; the type's in both databases.
        assert before["rows"] == {"default": [["type", "sleep", TYPE_LIMIT]],
                                  "shard_b": [["queue", "emails", QUEUE_LIMIT],
                                              ["type", "sleep", TYPE_LIMIT]]}
        assert before["listed"] == [["default", "type", "sleep", TYPE_LIMIT, "set"],
                                    ["shard_b", "queue", "emails", QUEUE_LIMIT, "set"],
                                    ["shard_b", "type", "sleep", TYPE_LIMIT, "set"]]

        with ExitStack() as stack:
            workers = []
            for shard in ([], ["--shard", "shard_b"]):
                proc = subprocess.Popen(
                    [sys.executable, str(REPO / "manage.py"), "run_job_workers", "--threads",
                     "4", "--no-listen", "--poll-interval", "0.2", *shard], env=env, cwd=REPO,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    start_new_session=True)
                out = Output(proc)
                stack.callback(stop_gracefully, proc, out)
                workers.append(out)
            # Each lane's first claim takes what its limits allow; the ten claims after it
            # (2 s at least) find nothing more to start.
            for out in workers:
                out.wait_for_line("polled, claimed 0 of", count=10, timeout=60,
                                  after="polled, claimed")
            assert _started(a) == {"default/sleep": TYPE_LIMIT}
            assert _started(b) == {"emails/noop": QUEUE_LIMIT,
                                   "reports.daily/sleep": TYPE_LIMIT}
            # The shard's worker holds nothing on JOB_DATABASE, nor does either keep its
            # start-up checks' connection anywhere.
            for cluster in (a, b):
                wait_until_no_session(lambda c=cluster: c.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE "
                    f"application_name = '{app_name}'")[0][0], app_name)

        after = json.loads(manage(env, "shell", "-c", AFTER).strip().splitlines()[-1])
        assert after["used"] == [["default", "type", "sleep", TYPE_LIMIT],
                                 ["shard_b", "queue", "emails", QUEUE_LIMIT],
                                 ["shard_b", "type", "sleep", TYPE_LIMIT]]
        assert after["wait"].startswith(f"rate limit of queue emails: {QUEUE_LIMIT} of "
                                        f"{QUEUE_LIMIT} started in the last 3600 s"), after
        assert after["removed"] is True
        assert after["left"] == {"default": [], "shard_b": [["queue", "emails"]]}
