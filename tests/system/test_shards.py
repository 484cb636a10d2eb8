"""Shards by queue (JOB_SHARDS) on three real databases: JOB_DATABASE and two shards, each a
throwaway cluster of its own (tests/clusters.py), migrated (which gives each shard its range
of job ids). Jobs of six queues, two a database, drain through real `run_job_workers`
processes, one a database (`--shard` for the two shards), each its database's leader; every
job runs once (the ledger), in the database its queue names, with each database's audit
clean; a job's id from the API finds it in its shard (its page, cancel, retry), and a job
that waits for one of another shard is refused, naming `after`."""
import json
import os
import subprocess
import sys
from collections import Counter
from contextlib import ExitStack

import pytest

from tests.clusters import throwaway_primary, two_shard_settings
from tests.handlers.chaos_handlers import Output
from tests.utils import REPO, manage, stop_gracefully

pytestmark = pytest.mark.e2e

SHARDS = {"shard_b": {"number": 1, "queues": ["emails", "reports*"]},
          "shard_c": {"number": 2, "queues": ["video", "thumbs"]}}
QUEUES = {"default": ["default", "billing"], "shard_b": ["emails", "reports.daily"],
          "shard_c": ["video", "thumbs"]}
PER_QUEUE = 25

# Run by `manage.py shell` before the workers start: the jobs, the refusals, the API's view
# of a shard's job. Prints one JSON line.
ENQUEUE = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django_pg_jobqueue import (enqueue, enqueue_many, pause_queue, resume_queue,
                                set_queue_aging, set_queue_fairness, shards)
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, QueueSetting

queues = {queues!r}
items = [{{"type": "shard_record", "queue": q, "payload": {{"n": n}}}}
         for n in range({per_queue}) for names in queues.values() for q in names]
items += [{{"type": "shard_record", "queue": "billing", "payload": {{"then": "emails"}}}}
          for _ in range(5)]
jobs = enqueue_many(items)
one = enqueue("shard_record", {{"single": True}}, queue="thumbs")
jobs.append(one)
# A batch over two shards whose items wait for earlier items of their own shard.
chained = enqueue_many([
    {{"type": "shard_record", "queue": "video"}}, {{"type": "shard_record", "queue": "emails"}},
    {{"type": "shard_record", "queue": "emails", "after": [{{"item": 1}}]}},
    {{"type": "shard_record", "queue": "thumbs", "after": [{{"item": 0}}]}}])
assert [j.status for j in chained] == ["queued", "queued", "waiting", "waiting"]
jobs.extend(chained)
out = {{"ids": {{}}}}
for job in jobs:
    out["ids"].setdefault(shards.alias_for_queue(job.queue), []).append(job.id)
    assert job._state.db == shards.alias_for_queue(job.queue)
    assert shards.alias_for_job_id(job.id) == job._state.db
# Each job is in its queue's database, and only there.
for alias, ids in out["ids"].items():
    assert Job.objects.using(alias).filter(id__in=ids).count() == len(ids), alias
    assert Job.objects.using(alias).count() == len(ids), alias
errors = []
for queue, after in (("emails", jobs[0].id), ("default", one.id)):
    try:
        enqueue("shard_record", {{}}, queue=queue, after=[after])
    except InvalidJobArgument as exc:
        errors.append([exc.argument, str(exc)])
try:
    enqueue_many([{{"type": "shard_record", "queue": "video"}},
                  {{"type": "shard_record", "queue": "emails", "after": [{{"item": 0}}]}}])
except InvalidJobArgument as exc:
    errors.append([exc.argument, str(exc), exc.index])
out["after_errors"] = errors
# The API finds a shard's job from its id: its page, cancel, retry (it then runs as any).
User.objects.create_superuser("shards", "s@example.com", "x")
client = Client()
client.login(username="shards", password="x")
page = client.get(f"/api/v1/jobs/{{one.id}}/")
cancelled = client.post(f"/api/v1/jobs/{{one.id}}/cancel/")
retried = client.post(f"/api/v1/jobs/{{one.id}}/retry/")
out["api"] = [page.status_code, page.json()["queue"], cancelled.status_code,
              cancelled.json()["status"], retried.status_code, retried.json()["status"],
              client.get(f"/api/v1/jobs/{{one.id + 10000}}/").status_code]
# The list of one shard (not merged: JOB_DATABASE's by default).
listed = {{shard: client.get(f"/api/v1/jobs/?shard={{shard}}&page_size=100&queue=video")
          for shard in ("shard_c", "default", "nope")}}
out["listed"] = [listed["shard_c"].json()["count"], listed["default"].json()["count"],
                 listed["nope"].status_code, list(listed["nope"].json()["errors"])]
# A shard's queue is paused and resumed in its own database.
pause_queue("video")
out["paused"] = [list(QueueSetting.objects.using(alias).filter(paused=True)
                      .values_list("queue", flat=True))
                 for alias in ("default", "shard_b", "shard_c")]
resume_queue("video")
# And so are its fair shares and aging.
set_queue_fairness("video", True)
set_queue_aging("video", 30)
out["ordered"] = [list(QueueSetting.objects.using(alias).filter(fair=True, aging_seconds=30)
                       .values_list("queue", flat=True))
                  for alias in ("default", "shard_b", "shard_c")]
print(json.dumps(out))
"""

# After the drain: each database's jobs by status, its leader and its audit (audit_jobs's,
# which `audit_jobs --shard` runs; here in one process for the three).
COUNT = """
import io
import json
from django.core.management import call_command
from django.db.models import Count
from django_pg_jobqueue import db, wait
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import Job, LeaderLease
out = {{}}
for alias in ("default", "shard_b", "shard_c"):
    with db.on_database(alias):
        report = audit()
    out[alias] = {{"statuses": dict(Job.objects.using(alias).values_list("status")
                                   .annotate(n=Count("id"))),
                  "queues": sorted(set(Job.objects.using(alias).values_list("queue", flat=True))),
                  "leaders": list(LeaderLease.objects.using(alias).values_list("holder", flat=True)),
                  "audit": [report.ok, len(report.notices), report.format()]}}
# wait() reads a shard's job in its shard (it succeeded: None, the handler's result).
out["waited"] = [wait({waited}, timeout=10)]
# The commands of one shard: audit_jobs (raises on a violation) and queue_status.
call_command("audit_jobs", "--strict", shard="shard_c", stdout=io.StringIO())
status = io.StringIO()
call_command("queue_status", shard="shard_b", stdout=status)
out["status"] = [line.split()[0] for line in status.getvalue().splitlines()
                 if line.startswith("  emails ") or line.startswith("  video ")]
print(json.dumps(out))
"""


def test_queues_of_three_shards_drain_each_job_once_in_its_own_database(tmp_path):
    with throwaway_primary() as a, throwaway_primary() as b, throwaway_primary() as c:
        for cluster in (a, b, c):
            cluster.execute("CREATE DATABASE jobs")
        (tmp_path / "shard_settings.py").write_text(
            two_shard_settings(b.port, c.port, SHARDS))
        ledger = tmp_path / "ledger"
        env = {k: v for k, v in os.environ.items()
               if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_READ_DATABASE_URL",
                            "JOB_TRANSACTION_POOLER")}
        env.update(DATABASE_URL=a.url("jobs"), DJANGO_SETTINGS_MODULE="shard_settings",
                   PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
                   JOB_EXTRA_HANDLER_MODULES="tests.handlers.shard_handlers",
                   ALLOWED_HOSTS="testserver", SHARD_LEDGER=str(ledger), PYTHONUNBUFFERED="1")
        # The three databases migrate at once (each its own process): the test's longest step.
        migrations = [subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "migrate", "--no-input", *database],
            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for database in ([], ["--database", "shard_b"], ["--database", "shard_c"])]
        migrated = [proc.communicate(timeout=180)[0] for proc in migrations]
        assert [proc.returncode for proc in migrations] == [0, 0, 0], migrated
        assert "shard_b: job ids 17592186044416 to 35184372088831 (shard 1), set" in migrated[1]
        assert "shard_c: job ids 35184372088832 to 52776558133247 (shard 2), set" in migrated[2]
        # Again: already set, nothing changes.
        assert "(shard 1), already set" in manage(env, "migrate", "--database", "shard_b")

        enqueued = json.loads(manage(env, "shell", "-c", ENQUEUE.format(
            queues=QUEUES, per_queue=PER_QUEUE)).strip().splitlines()[-1])
        ids = {alias: set(found) for alias, found in enqueued["ids"].items()}
        assert {alias: len(found) for alias, found in ids.items()} == {
            "default": 2 * PER_QUEUE + 5, "shard_b": 2 * PER_QUEUE + 2,
            "shard_c": 2 * PER_QUEUE + 3}
        assert max(ids["default"]) < 2**44 <= min(ids["shard_b"])
        assert max(ids["shard_b"]) < 2 * 2**44 <= min(ids["shard_c"])
        assert [e[0] for e in enqueued["after_errors"]] == ["after", "after", "after"]
        assert "own shard" in enqueued["after_errors"][0][1]
        assert enqueued["after_errors"][2][2] == 1  # the item that names another shard's
        assert enqueued["api"] == [200, "thumbs", 200, "cancelled", 200, "queued", 404]
        assert enqueued["paused"] == [[], [], ["video"]]
        assert enqueued["ordered"] == [[], [], ["video"]]
        assert enqueued["listed"] == [PER_QUEUE + 1, 0, 400, ["shard"]]

        expected = {alias: len(found) for alias, found in ids.items()}
        expected["shard_b"] += 5  # the follow-ups the billing jobs enqueue into "emails"
        with ExitStack() as stack:
            workers = {}
            for alias in ("default", "shard_b", "shard_c"):
                shard = [] if alias == "default" else ["--shard", alias]
                proc = subprocess.Popen(
                    [sys.executable, str(REPO / "manage.py"), "run_job_workers", "--threads",
                     "4", *shard], env=env, cwd=REPO, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
                out = Output(proc)
                stack.callback(stop_gracefully, proc, out)
                workers[alias] = (proc, out)
            for alias, (proc, out) in workers.items():
                out.wait_for_line("shard job ran", count=expected[alias], timeout=45)
                # Each database elects its own leader: the one process working it.
                out.wait_for_line("leads maintenance now", timeout=30)
            for alias, (proc, out) in workers.items():
                assert stop_gracefully(proc, out) == 0, out.text()[-3000:]
                assert len(out.matching("shard job ran")) == expected[alias]
                assert f"database {alias}" in out.matching("starting:")[0]

        ran = Counter(int(line) for line in ledger.read_text().split())
        assert [job for job, times in ran.items() if times > 1] == []
        assert set(ran) >= ids["default"] | ids["shard_b"] | ids["shard_c"]
        assert len(ran) == sum(expected.values())

        counted = json.loads(manage(env, "shell", "-c", COUNT.format(
            waited=max(ids["shard_c"]))).strip().splitlines()[-1])
        assert counted["waited"] == [None]
        assert counted["status"] == ["emails"]  # shard_b's queues only
        for alias, names in QUEUES.items():
            assert counted[alias]["statuses"] == {"succeeded": expected[alias]}, alias
            assert counted[alias]["queues"] == sorted(names), alias
            assert len(counted[alias]["leaders"]) == 1, alias
            assert counted[alias]["audit"][:2] == [True, 0], counted[alias]["audit"][2]
