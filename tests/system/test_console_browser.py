"""The dashboard in Chromium against backends the shared Playwright run cannot host: the demo's
server (runserver) on throwaway clusters (tests/clusters.py), three for the module: a primary,
its hot standby, and a shard's own cluster. The browser step is frontend/e2e/console-pages.mjs.

- Read from a replica whose replay is paused: the sidebar says "Read from a replica · N s
  behind"; a server allowing 1 s of lag says the replica is left aside and why (behind), and
  once the replica is stopped, that it does not answer.
- With shards (JOB_DATABASE and shard_b: two databases of the primary; shard_c: the third
  cluster, stopped): the jobs list and the overview name shard_c as down while the other
  shards' jobs are listed, and cancelling every matching job from the merged list cancels
  those of JOB_DATABASE and shard_b and names shard_c as not answering.

Every server is stopped by its pid, every cluster stopped and its data directory deleted."""
import json
import os
import shutil
import subprocess
import sys
import uuid
from contextlib import ExitStack

import pytest

from tests.clusters import streaming_replica, throwaway_primary, wait_replayed
from tests.system.test_read_replica import Server
from tests.utils import REPO, manage

pytestmark = pytest.mark.e2e

FRONTEND = REPO / "frontend"
BUILT = REPO / "backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard/index.html"
SHOTS = FRONTEND / "test-results" / "screenshots"
USER, PASSWORD = "console-browser", f"pw-{uuid.uuid4().hex[:10]}"

SHARD_SETTINGS = """
from config.settings import *  # noqa: F403

DATABASES = {{**DATABASES,  # noqa: F405
             "shard_b": {{**DATABASES["default"], "NAME": "shard_b"}},  # noqa: F405
             "shard_c": {{**DATABASES["default"], "NAME": "shard_c", "PORT": {c}}}}}  # noqa: F405
DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
JOB_SHARDS = {{"shard_b": {{"number": 1, "queues": ["emails"]}},
              "shard_c": {{"number": 2, "queues": ["video"]}}}}
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_READ_DATABASE_URL",
                        "JOB_TRANSACTION_POOLER", "DJANGO_SETTINGS_MODULE")}
    env.update(PYTHONUNBUFFERED="1", DJANGO_ENV="development", DEBUG="true",
               ALLOWED_HOSTS="127.0.0.1,localhost", **extra)
    return env


def _operator(env) -> None:
    manage(env, "shell", "-c", (
        "from django.contrib.auth.models import User\n"
        f"User.objects.create_superuser({USER!r}, 'c@example.com', {PASSWORD!r})"))


def _browse(server: Server, plan: list[dict], tmp_path) -> list[dict]:
    """The plan's pages in Chromium (console-pages.mjs); what it saw on each."""
    node = shutil.which("node")
    assert node, "Node.js is needed for the browser step"
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"plan-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run([node, "e2e/console-pages.mjs", f"http://127.0.0.1:{server.port}/",
                           USER, PASSWORD, str(path), str(SHOTS)], cwd=FRONTEND,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def clusters():
    if not BUILT.exists():
        pytest.skip("the dashboard is not built (cd frontend && npm run build)")
    with ExitStack() as stack:
        primary = stack.enter_context(throwaway_primary())
        replica = stack.enter_context(streaming_replica(primary))
        shard_c = stack.enter_context(throwaway_primary())
        yield primary, replica, shard_c


def test_the_sidebar_shows_the_replicas_lag_and_why_it_is_left_aside(clusters, tmp_path):
    primary, replica, _ = clusters
    primary.execute("CREATE DATABASE jobs")
    env = _env(DATABASE_URL=primary.url("jobs"), JOB_READ_DATABASE_URL=replica.url("jobs"),
               JOB_READ_MAX_LAG_SECONDS="3600")
    manage(env, "migrate", "--no-input", "-v", "0")
    _operator(env)
    manage(env, "shell", "-c", "from django_pg_jobqueue import enqueue\nenqueue('noop', {})")
    wait_replayed(primary, replica)
    # Replay paused, then a write: the replica falls behind, by the age of what it replayed.
    replica.execute("SELECT pg_wal_replay_pause()")
    manage(env, "shell", "-c", "from django_pg_jobqueue import enqueue\nenqueue('noop', {})")
    with ExitStack() as stack:
        lenient = Server(env, tmp_path)
        stack.callback(lenient.stop)
        [behind] = _browse(lenient, [{"path": "jobs", "shot": "replica-behind", "expect": [
            r"Read from a replica · \d+\.\d s behind"]}], tmp_path)
        assert behind["status"][0].startswith("Read from a replica ·"), behind
        # Seconds have passed since the write (a server started, a browser signed in): the
        # replica is further behind than a server allowing 1 s takes.
        strict = Server({**env, "JOB_READ_MAX_LAG_SECONDS": "1"}, tmp_path)
        stack.callback(strict.stop)
        [aside] = _browse(strict, [{"path": "jobs", "shot": "replica-aside-behind", "expect": [
            r"Replica left aside \(.*behind.*\): reading the primary"]}], tmp_path)
        assert "reading the primary" in aside["status"][0], aside

        replica.stop()
        [down] = _browse(lenient, [{"path": "", "shot": "replica-aside-down", "expect": [
            r"Replica left aside \(.*does not answer.*\): reading the primary"]}], tmp_path)
        assert "does not answer" in down["status"][0], down


def test_a_stopped_shard_is_named_down_while_the_other_shards_jobs_are_listed(clusters,
                                                                               tmp_path):
    primary, _, shard_c = clusters
    for cluster, name in ((primary, "console"), (primary, "shard_b"), (shard_c, "shard_c")):
        cluster.execute(f"CREATE DATABASE {name}")
    (tmp_path / "browser_shards.py").write_text(SHARD_SETTINGS.format(c=shard_c.port))
    env = _env(DATABASE_URL=primary.url("console"), DJANGO_SETTINGS_MODULE="browser_shards",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    migrations = [subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "migrate", "--no-input", "-v", "0", *db],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for db in ([], ["--database", "shard_b"], ["--database", "shard_c"])]
    outputs = [p.communicate(timeout=240)[0] for p in migrations]
    assert [p.returncode for p in migrations] == [0, 0, 0], outputs
    _operator(env)
    manage(env, "shell", "-c", (
        "from django_pg_jobqueue import enqueue_many\n"
        "enqueue_many([{'type': 'noop', 'queue': q} for q in ('default', 'emails', 'video')"
        " for _ in range(15)])"))
    shard_c.stop()
    server = Server(env, tmp_path)
    try:
        jobs, overview, bulk = _browse(server, [
            {"path": "jobs", "shot": "shards-jobs-down", "rows": ["emails", "default"],
             "expect": [r"Shard shard_c is down", "25 shown of 30, every shard merged"]},
            {"path": "", "shot": "shards-overview-down", "expect": [r"Shard shard_c is down"]},
            {"path": "jobs", "shot": "shards-bulk-cancel", "expect": ["25 shown of 30"],
             "clicks": [{"label": "Select every job on this page"},
                        {"button": "^Select all 30 matching the filter"},
                        {"button": "^Cancel 30"}, {"button": "^Yes, cancel 30 jobs"}],
             "then": [r"Cancelled \(or asked to stop\) 30 jobs\. Shard shard_c did not answer"]},
        ], tmp_path)
        cancelled = manage(env, "shell", "-c", (
            "from django_pg_jobqueue.models import Job\n"
            "print([Job.objects.using(a).filter(status='cancelled').count()"
            " for a in ('default', 'shard_b')])")).strip().splitlines()[-1]
    finally:
        server.stop()
    assert cancelled == "[15, 15]"
    assert any("Shard shard_c is down" in a for a in jobs["alerts"]), jobs
    assert not any("shard_b" in a for a in jobs["alerts"]), jobs
    assert jobs["rows"] == 25, jobs  # a page of the 15 of JOB_DATABASE and the 15 of shard_b
    assert any("Shard shard_c is down" in a for a in overview["alerts"]), overview
