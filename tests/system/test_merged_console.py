"""One console over every shard (merged.py), on three real databases: JOB_DATABASE and two
shards, each a throwaway cluster of its own (tests/clusters.py), started once for the module
and migrated at once. Without `?shard=`, the job list merges the three in its order with
summed counts and pages by cursor; paging 100 jobs while another process keeps enqueueing
into all three shows each job once and none of those that existed at the first page is
skipped; the event feed pages every database's events by its cursor while producers write
into all three, each event once and none skipped; a bulk action by filter acts on every database, bounded requests going on by one
`after` across them, or on the one its filter's `shard` names; the dead letter's retry, by
filter and by ids, reaches every database; the charts sum every database's buckets; the overview's figures, the queues, the workers and /metrics (labelled by shard)
are every database's; a queue
moved to another shard by switch and drain (docs/how-to/scaling.md) loses no job; and a
shard that was stopped is reported down, in a bounded time, while the others answer."""
import json
import os
import subprocess
import sys
from contextlib import ExitStack

import pytest

from tests.clusters import throwaway_primary, two_shard_settings
from tests.handlers.chaos_handlers import Output
from tests.utils import REPO, stop_gracefully

pytestmark = pytest.mark.e2e

SHARDS = {"shard_b": {"number": 1, "queues": ["emails", "reports*"]},
          "shard_c": {"number": 2, "queues": ["video"]}}
# 100 jobs: 40 in JOB_DATABASE, 35 in shard_b, 25 in shard_c.
JOBS = {"default": 40, "emails": 20, "reports.daily": 15, "video": 25}

# Run before each script: a logged-in test client and `get(path, **params)` -> (status, body,
# headers).
PRELUDE = """
import json, time
from django.contrib.auth.models import User
from django.test import Client
user = User.objects.filter(username="console").first() or User.objects.create_superuser(
    "console", "c@example.com", "x")
client = Client()
client.force_login(user)

def get(path, **params):
    response = client.get(path, params)
    return response.status_code, response.json(), response
"""

ENQUEUE = """
from django_pg_jobqueue import enqueue_many
items = [{{"type": "noop", "queue": queue, "priority": n % 5}}
         for queue, count in {jobs!r}.items() for n in range(count)]
ids = {{}}
for job in enqueue_many(items):
    ids.setdefault(job.queue, []).append(job.id)
print(json.dumps({{"ids": ids}}))
"""

MERGED = """
out = {}
for ordering in ("-id", "priority", "-created_at"):
    status, body, _ = get("/api/v1/jobs/", page_size=100, ordering=ordering)
    assert status == 200, body
    out[ordering] = {"count": body["count"], "next": body["next"],
                     "previous": body["previous"], "shards": body["shards"],
                     "rows": [[j["id"], j["priority"], j["created_at"]] for j in body["results"]]}
status, body, _ = get("/api/v1/jobs/", queue="video", page_size=10)
out["video"] = [status, body["count"], [s["count"] for s in body["shards"]],
                body["next"] is not None]
out["one_shard"] = get("/api/v1/jobs/", shard="shard_b", page_size=100)[1]["count"]
out["page_2"] = [get("/api/v1/jobs/", page=2)[0], list(get("/api/v1/jobs/", page=2)[1]["errors"])]
out["bad_cursor"] = list(get("/api/v1/jobs/", cursor="nope")[1]["errors"])
other = get("/api/v1/jobs/", page_size=5)[1]["next"].split("cursor=")[1].split("&")[0]
out["other_order"] = list(get("/api/v1/jobs/", cursor=other, ordering="priority")[1]["errors"])
status, metrics, _ = get("/api/v1/metrics/")
out["metrics"] = [status, metrics["counts_by_status"]["queued"], metrics["queued"]["total"],
                  {q["queue"]: q["count"] for q in metrics["queued"]["by_queue"]},
                  [s["up"] for s in metrics["shards"]]]
status, queues, response = get("/api/v1/queues/")
out["queues"] = [status, {q["name"]: q["queued"] for q in queues},
                 response.headers.get("X-Job-Shards-Down")]
out["workers"] = get("/api/v1/workers/")[:2]
# One queue's page, and its pause, on the shard that holds it.
status, page, _ = get("/api/v1/queues/video/")
paused = client.post("/api/v1/queues/video/pause/").json()["paused"]
client.post("/api/v1/queues/video/resume/")
out["queue_page"] = [status, page["queued"], page["counts_by_status"]["queued"], paused]
out["prometheus"] = [line for line in client.get("/metrics").content.decode().splitlines()
                     if line.startswith(("jobqueue_queue_depth{", "jobqueue_shard_up{"))]
print(json.dumps(out))
"""

# Pages through the merged list (`ordering`, 7 a page) while the adder process enqueues
# into all three databases (about 25 jobs a second, for at most 40 s: slower than the pages,
# so that an ascending order, whose new jobs come last, reaches its end); stops the adder.
PAGER = """
import pathlib
from django_pg_jobqueue import fanout
from django_pg_jobqueue.models import Job
started = pathlib.Path({started!r})
while not started.exists():
    time.sleep(0.02)
out = {{}}
for ordering in ("-id", "created_at", "priority"):
    before = sorted(i for alias in fanout.databases()
                    for i in Job.objects.using(alias).values_list("id", flat=True))
    seen, pages, url = [], 0, None
    status, body, _ = get("/api/v1/jobs/", page_size=7, ordering=ordering)
    while True:
        assert status == 200, body
        seen += [j["id"] for j in body["results"]]
        pages += 1
        if not body["next"]:
            break
        time.sleep(0.02)
        response = client.get(body["next"])
        status, body = response.status_code, response.json()
    after = sum(Job.objects.using(alias).count() for alias in fanout.databases())
    out[ordering] = {{"before": before, "seen": seen, "pages": pages, "after": after}}
pathlib.Path({stop!r}).touch()
print(json.dumps(out))
"""

ADDER = """
import pathlib
from django_pg_jobqueue import enqueue
n = 0
while not pathlib.Path({stop!r}).exists() and n < 400:
    for queue in ("default", "emails", "video"):
        enqueue("noop", {{"added": n}}, queue=queue, priority=n % 5)
    n += 1
    pathlib.Path({started!r}).touch()
    time.sleep(0.1)
print(json.dumps({{"added": 3 * n}}))
"""

DOWN = """
out = {}
began = time.monotonic()
status, body, _ = get("/api/v1/jobs/", page_size=100)
out["list"] = [status, body["count"], body["shards"], len(body["results"]),
               round(time.monotonic() - began, 2)]
status, metrics, _ = get("/api/v1/metrics/")
out["metrics"] = [status, metrics["queued"]["total"], metrics["shards"]]
status, queues, response = get("/api/v1/queues/")
out["queues"] = [status, sorted(q["name"] for q in queues),
                 response.headers.get("X-Job-Shards-Down")]
out["workers"] = [get("/api/v1/workers/")[0]]
text = client.get("/metrics").content.decode()
out["prometheus"] = [line for line in text.splitlines() if line.startswith("jobqueue_shard_up{")]
out["throughput"] = [get("/api/v1/metrics/throughput/")[0],
                     [s["up"] for s in get("/api/v1/metrics/throughput/")[1]["shards"]]]
response = client.post("/api/v1/jobs/actions/", {"action": "cancel", "filter": {"queue": "nope"}},
                       content_type="application/json")
out["bulk"] = [response.status_code, [s["up"] for s in response.json()["shards"]]]
# A job of the stopped shard: its own page is a 503, as before.
out["detail"] = client.get(f"/api/v1/jobs/{DOWN_ID}/").status_code
print(json.dumps(out))
"""


# Cancels, by filter, 18 new jobs spread over the three databases, at most 8 jobs a request
# in batches of 4: the requests go on with `after` across the databases. Then the charts.
BULK = """
from django_pg_jobqueue import enqueue_many, fanout
from django_pg_jobqueue.api.jobs import actions
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.services import bulk_actions
actions.MAX_JOBS_PER_REQUEST, bulk_actions.BATCH_SIZE = 8, 4
enqueue_many([{"type": "noop", "queue": q, "payload": {"bulk": "yes"}}
              for q in ("default", "emails", "video") for _ in range(6)])
out, body = {"requests": []}, {"action": "cancel", "filter": {"payload": "bulk:yes"}}
while True:
    response = client.post("/api/v1/jobs/actions/", body, content_type="application/json")
    assert response.status_code == 200, response.content
    answer = response.json()
    out["requests"].append([answer["done"], answer["after"] is not None, answer["remaining"],
                            [s["up"] for s in answer["shards"]]])
    if answer["after"] is None:
        break
    body["after"] = answer["after"]
out["cancelled"] = [Job.objects.using(alias).filter(payload__bulk="yes",
                                                    status="cancelled").count()
                    for alias in fanout.databases()]
for chart in ("throughput", "latency"):
    status, answer, _ = get(f"/api/v1/metrics/{chart}/", range="15m")
    points = answer["points"] if chart == "throughput" else answer["series"][0]["points"]
    out[chart] = [status, len(points), [s["up"] for s in answer["shards"]]]
print(json.dumps(out))
"""


# The dead letter's retry (POST jobs/retry/) by filter and by ids, and an action whose
# filter names one shard, on failed jobs of the three databases (4 each, failed by hand).
DEAD_LETTER = """
from django.db import connections
from django_pg_jobqueue import enqueue_many, fanout
from django_pg_jobqueue.models import Job
jobs = enqueue_many([{"type": "noop", "queue": q, "payload": {"dead": n}}
                     for q in ("default", "emails", "video") for n in range(4)])

def fail():
    for alias in fanout.databases():
        with connections[alias].cursor() as cur:
            cur.execute("UPDATE jobs SET status = 'failed', attempts = 1, started_at = now(), "
                        "finished_at = now(), last_error = 'dead letter test' "
                        "WHERE id = ANY(%s)", [[job.id for job in jobs]])

def statuses():
    return [sorted(Job.objects.using(alias).filter(id__in=[j.id for j in jobs])
                   .values_list("status", flat=True)) for alias in fanout.databases()]

def post(path, body):
    response = client.post(path, body, content_type="application/json")
    return [response.status_code, response.json()]

out = {}
fail()
out["by_filter"] = post("/api/v1/jobs/retry/", {"error_contains": "dead letter"})
out["after_filter"] = statuses()
fail()
out["by_ids"] = post("/api/v1/jobs/retry/", {"ids": [j.id for j in jobs] + [2**44 - 1]})
out["after_ids"] = statuses()
out["one_shard"] = post("/api/v1/jobs/actions/", {"action": "cancel", "filter": {
    "payload": "dead:1", "shard": "shard_b"}})
out["after_one_shard"] = statuses()
out["no_shard"] = post("/api/v1/jobs/actions/", {"action": "cancel", "filter": {
    "payload": "dead:1", "shard": "shard_x"}})
print(json.dumps(out))
"""


def _env(tmp, a, b, c) -> dict:
    (tmp / "console_settings.py").write_text(two_shard_settings(b.port, c.port, SHARDS))
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_READ_DATABASE_URL",
                        "JOB_TRANSACTION_POOLER")}
    env.update(DATABASE_URL=a.url("jobs"), DJANGO_SETTINGS_MODULE="console_settings",
               PYTHONPATH=os.pathsep.join([str(tmp), str(REPO)]), ALLOWED_HOSTS="testserver",
               PYTHONUNBUFFERED="1")
    return env


def _shell(env, script: str, prelude: bool = True) -> dict:
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c",
         (PRELUDE if prelude else "import json, time\n") + script],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    """Three migrated databases (JOB_DATABASE, shard_b, shard_c) with JOBS enqueued."""
    tmp = tmp_path_factory.mktemp("console")
    with ExitStack() as stack:
        a, b, c = (stack.enter_context(throwaway_primary()) for _ in range(3))
        for cluster in (a, b, c):
            cluster.execute("CREATE DATABASE jobs")
        env = _env(tmp, a, b, c)
        migrations = [subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "migrate", "--no-input", *database],
            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for database in ([], ["--database", "shard_b"], ["--database", "shard_c"])]
        migrated = [proc.communicate(timeout=240)[0] for proc in migrations]
        assert [proc.returncode for proc in migrations] == [0, 0, 0], migrated
        ids = _shell(env, ENQUEUE.format(jobs=JOBS), prelude=False)["ids"]
        yield {"env": env, "tmp": tmp, "ids": ids, "clusters": (a, b, c)}


def test_the_list_merges_every_database_in_its_order_with_summed_counts(console):
    ids = console["ids"]
    out = _shell(console["env"], MERGED)
    everything = sorted(i for found in ids.values() for i in found)
    newest = out["-id"]
    assert [row[0] for row in newest["rows"]] == everything[::-1]
    assert newest["count"] == 100 and newest["next"] is None and newest["previous"] is None
    assert [(s["alias"], s["number"], s["up"], s["error"], s["count"])
            for s in newest["shards"]] == [("default", 0, True, None, 40),
                                           ("shard_b", 1, True, None, 35),
                                           ("shard_c", 2, True, None, 25)]
    # By priority, ties by id ascending: keys never go down, across the three databases.
    keys = [(row[1], row[0]) for row in out["priority"]["rows"]]
    assert keys == sorted(keys) and len(keys) == 100
    keys = [(row[2], row[0]) for row in out["-created_at"]["rows"]]
    assert keys == sorted(keys, reverse=True)
    # Filters apply in each database; a shard's own list still pages by number.
    assert out["video"] == [200, 25, [0, 0, 25], True]
    assert out["one_shard"] == 35
    assert out["page_2"] == [400, ["page"]]
    assert out["bad_cursor"] == ["cursor"]
    assert out["other_order"] == ["cursor"]
    # The overview's figures, the queues and the workers of all three.
    assert out["metrics"] == [200, 100, 100, {"default": 40, "emails": 20,
                                              "reports.daily": 15, "video": 25},
                              [True, True, True]]
    assert out["queues"] == [200, {"default": 40, "emails": 20, "reports.daily": 15,
                                   "video": 25}, None]
    assert out["workers"] == [200, []]
    assert out["queue_page"] == [200, 25, 25, True]
    assert sorted(out["prometheus"]) == sorted([
        'jobqueue_queue_depth{queue="default",shard="default"} 40.0',
        'jobqueue_queue_depth{queue="emails",shard="shard_b"} 20.0',
        'jobqueue_queue_depth{queue="reports.daily",shard="shard_b"} 15.0',
        'jobqueue_queue_depth{queue="video",shard="shard_c"} 25.0',
        'jobqueue_shard_up{shard="default"} 1.0', 'jobqueue_shard_up{shard="shard_b"} 1.0',
        'jobqueue_shard_up{shard="shard_c"} 1.0'])


def test_paging_while_another_process_enqueues_shows_each_job_once_and_skips_none(console):
    env, tmp = console["env"], console["tmp"]
    started, stop = tmp / "adder-started", tmp / "pager-done"
    adder = subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c",
         "import json, time\n" + ADDER.format(stop=str(stop), started=str(started))],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out = _shell(env, PAGER.format(started=str(started), stop=str(stop)))
        added = json.loads(adder.communicate(timeout=60)[0].strip().splitlines()[-1])["added"]
    finally:
        stop.touch()
        if adder.poll() is None:
            adder.kill()
            adder.wait()
    assert adder.returncode == 0
    for ordering, run in out.items():
        seen = run["seen"]
        assert len(seen) == len(set(seen)), f"{ordering}: a job shown twice"
        assert set(run["before"]) <= set(seen), f"{ordering}: a job skipped"
        # The other process was adding jobs while this ordering paged.
        assert run["after"] > len(run["before"]), ordering
        assert run["pages"] >= len(run["before"]) // 7
    assert added > 0


# Writes events into one database (`queue`'s) from three threads until `stop` exists: each
# transaction enqueues a job, waits, enqueues another, and then cancels the first in a
# transaction of its own. One thread waits long (0.1 to 0.3 s) while the other two commit
# several short ones: transactions that took their ids after it commit before it, as an
# event feed that followed ids (or transaction ids alone) would skip. Waits for the pager's
# start first.
PRODUCER = """
import pathlib, random, threading
from django.db import connections, transaction
from django_pg_jobqueue import cancel, enqueue, shards
ready, stop = pathlib.Path({ready!r}), pathlib.Path({stop!r})
while not ready.exists():
    time.sleep(0.02)
alias = shards.alias_for_queue({queue!r})
written = []

def produce(seed, wait, rounds):
    rng = random.Random(seed)
    n = 0
    while not stop.exists() and n < rounds:
        with transaction.atomic(using=alias):
            first = enqueue("noop", {{"n": n}}, queue={queue!r})
            time.sleep(rng.uniform(*wait))
            enqueue("noop", {{"n": n}}, queue={queue!r})
        cancel(first.id)
        n += 1
        time.sleep(rng.uniform(0, 0.02))
    written.append(n)
    connections.close_all()

threads = [threading.Thread(target=produce, args=args)
           for args in ((1, (0.1, 0.3), 15), (2, (0, 0.01), 40), (3, (0, 0.01), 40))]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
pathlib.Path({done!r}).touch()
print(json.dumps({{"events": 3 * sum(written)}}))
"""

# Pages the event feed by its cursor, 7 events a poll, from its start (no cursor) while the
# producers write, and on until they are done and the feed is empty; then reads every
# event each database holds past the start's positions.
FEED_PAGER = """
import pathlib
from django.db import connections
from django_pg_jobqueue import fanout, keyset
dones = [pathlib.Path(p) for p in {dones!r}]
status, body, _ = get("/api/v1/events/", limit=50)
assert status == 200, body
start = keyset.decode_feed(body["next_cursor"])
out = {{"start": [[e["shard"], e["id"]] for e in body["results"]], "seen": [], "pages": 0,
        "polls_while_writing": 0, "ups": set()}}
cursor = body["next_cursor"]
pathlib.Path({ready!r}).touch()
empty = 0
while True:
    writing = not all(done.exists() for done in dones)
    status, body, _ = get("/api/v1/events/", cursor=cursor, limit=7)
    assert status == 200, body
    out["seen"] += [[e["shard"], e["id"]] for e in body["results"]]
    out["ups"].add(tuple(s["up"] for s in body["shards"]))
    out["pages"] += bool(body["results"])
    out["polls_while_writing"] += writing and bool(body["results"])
    cursor = body["next_cursor"]
    empty = 0 if body["results"] or writing else empty + 1
    if empty == 3:
        break
    time.sleep(0 if body["has_more"] else 0.05)
out["expected"] = []
for alias in fanout.databases():
    tx_id, event_id = start[alias]
    with connections[alias].cursor() as cur:
        cur.execute("SELECT id FROM job_events WHERE (tx_id, id) > (%s, %s) ORDER BY id",
                    [tx_id, event_id])
        out["expected"] += [[alias, i] for (i,) in cur.fetchall()]
out["ups"] = sorted(out["ups"])
# The integer cursor of before shards: JOB_DATABASE's events alone.
status, body, _ = get("/api/v1/events/", after=0, limit=500)
out["after"] = [status, sorted({{e["shard"] for e in body["results"]}}), "shards" in body]
print(json.dumps(out))
"""


def test_the_event_feed_pages_every_database_s_events_once_while_producers_write(console):
    env, tmp = console["env"], console["tmp"]
    ready = tmp / "feed-ready"
    stop = tmp / "feed-stop"
    producers = []
    try:
        for queue in ("default", "emails", "video"):
            done = tmp / f"feed-done-{queue}"
            producers.append((done, subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "shell", "-c",
                 "import json, time\n" + PRODUCER.format(queue=queue, ready=str(ready),
                                                          stop=str(stop), done=str(done))],
                env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        out = _shell(env, FEED_PAGER.format(dones=[str(d) for d, _ in producers],
                                            ready=str(ready)))
        written = [json.loads(proc.communicate(timeout=60)[0].strip().splitlines()[-1])
                   for _, proc in producers]
    finally:
        stop.touch()
        for _, proc in producers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [proc.returncode for _, proc in producers] == [0, 0, 0]
    seen = [tuple(e) for e in out["seen"]]
    assert len(seen) == len(set(seen)), "an event shown twice"
    expected = {tuple(e) for e in out["expected"]}
    assert set(seen) == expected, (
        f"skipped: {sorted(expected - set(seen))[:10]}, extra: {sorted(set(seen) - expected)[:10]}")
    # Each producer's events: 2 created and 1 cancelled a round, in every database.
    by_shard = {alias: sum(1 for a, _ in seen if a == alias)
                for alias in ("default", "shard_b", "shard_c")}
    assert by_shard == {alias: w["events"] for alias, w in zip(by_shard, written)}
    assert all(w["events"] >= 30 for w in written)
    assert out["polls_while_writing"] >= 10  # the client paged while the producers wrote
    assert out["ups"] == [[True, True, True]]
    assert len(out["start"]) == 50 and not set(map(tuple, out["start"])) & set(seen)
    assert out["after"] == [200, ["default"], True]


MOVED = """
from console_settings import *  # noqa: F403

JOB_SHARDS = {shards!r}
"""
MOVED_SHARDS = {"shard_b": {"number": 1, "queues": ["emails", "reports*", "moving"]},
                "shard_c": SHARDS["shard_c"]}


def test_a_queue_moved_to_another_shard_by_switch_and_drain_loses_no_job(console):
    """docs/how-to/scaling.md's steps for `moving`, from JOB_DATABASE to shard_b: its new
    jobs go to shard_b from the switch on (and wait there, the queue paused in shard_b, so
    that the old ones run first), a producer not yet switched still adds to JOB_DATABASE,
    whose worker drains them all; then the queue is resumed in shard_b. Every job runs once,
    the old database's all before the new one's."""
    tmp, ledger = console["tmp"], console["tmp"] / "moving-ledger"
    (tmp / "console_settings_moved.py").write_text(MOVED.format(shards=MOVED_SHARDS))
    old = {**console["env"], "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.shard_handlers",
           "SHARD_LEDGER": str(ledger)}
    new = {**old, "DJANGO_SETTINGS_MODULE": "console_settings_moved"}
    # Enqueues n jobs into `moving`, then pauses it (in the database JOB_SHARDS names for it:
    # a queue exists in a database once it holds a job there, or a handler declares it).
    enqueue = ("from django_pg_jobqueue import enqueue_many, pause_queue\n"
               "jobs = enqueue_many([{{'type': 'shard_record', 'queue': 'moving'}}] * {n})\n"
               "pause_queue('moving') if {pause} else None\n"
               "print(json.dumps([j.id for j in jobs]))")
    before = _shell(old, enqueue.format(pause=False, n=40), prelude=False)
    # The switch: producers and workers get the new JOB_SHARDS; the queue waits in shard_b.
    after = _shell(new, enqueue.format(pause=True, n=40), prelude=False)
    late = _shell(old, enqueue.format(pause=False, n=10), prelude=False)
    assert max(before + late) < 2**44 <= min(after) < 2 * 2**44
    with ExitStack() as stack:
        workers = {}
        for alias in ("default", "shard_b"):
            proc = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "run_job_workers", "--threads", "4",
                 *([] if alias == "default" else ["--shard", alias])], env=new, cwd=REPO,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True)
            out = Output(proc)
            stack.callback(stop_gracefully, proc, out)
            workers[alias] = (proc, out)
        # The drain: JOB_DATABASE's worker runs its `moving` jobs, the old and the late.
        workers["default"][1].wait_for_line("shard job ran", count=50, timeout=90)
        left = _shell(new, "from django_pg_jobqueue.models import Job\nprint(json.dumps("
                           "Job.objects.using('default').filter(queue='moving')"
                           ".exclude(status='succeeded').count()))", prelude=False)
        assert left == 0
        assert workers["shard_b"][1].matching("shard job ran") == []
        _shell(new, "from django_pg_jobqueue import resume_queue\nresume_queue('moving')\n"
                    "print(1)", prelude=False)
        workers["shard_b"][1].wait_for_line("shard job ran", count=40, timeout=90)
        for proc, out in workers.values():
            assert stop_gracefully(proc, out) == 0, out.text()[-3000:]
    ran = [int(line) for line in ledger.read_text().split()]
    assert sorted(ran) == sorted(before + late + after)  # each once, none lost
    assert set(ran[:50]) == set(before + late)  # the old database's all ran first
    assert set(ran[50:]) == set(after)


def test_a_bulk_action_by_filter_acts_on_every_database_going_on_by_after_across_them(
        console):
    out = _shell(console["env"], BULK)
    # 6 of JOB_DATABASE and 4 of shard_b, stopped at the bound inside shard_b; then the 2
    # left there and the 6 of shard_c.
    assert out["requests"] == [[10, True, 8, [True, True, True]],
                               [8, False, 0, [True, True, True]]]
    assert out["cancelled"] == [6, 6, 6]
    assert out["throughput"] == [200, 15, [True, True, True]]
    assert out["latency"] == [200, 15, [True, True, True]]


def test_the_dead_letter_s_retry_reaches_every_database_and_a_filter_may_name_one(console):
    out = _shell(console["env"], DEAD_LETTER)
    status, body = out["by_filter"]
    assert status == 200 and (body["retried"], body["not_retried"]) == (12, [])
    assert [(s["alias"], s["up"]) for s in body["shards"]] == [
        ("default", True), ("shard_b", True), ("shard_c", True)]
    assert out["after_filter"] == [["queued"] * 4] * 3
    # By ids: each on the database its id names; one that no database holds is refused.
    assert out["by_ids"] == [200, {"retried": 12, "not_retried": [2**44 - 1]}]
    assert out["after_ids"] == [["queued"] * 4] * 3
    # An action by filter naming one shard: that database's job alone.
    status, body = out["one_shard"]
    assert status == 200 and body["done"] == 1
    assert [(s["alias"], s["up"]) for s in body["shards"]] == [("shard_b", True)]
    assert out["after_one_shard"] == [["queued"] * 4, ["cancelled"] + ["queued"] * 3,
                                      ["queued"] * 4]
    status, body = out["no_shard"]
    assert status == 400 and list(body["errors"]) == ["filter"]
    assert list(body["errors"]["filter"]) == ["shard"]


def test_a_stopped_shard_is_reported_down_and_the_others_answer(console):
    a, b, c = console["clusters"]
    c.stop()
    down_id = console["ids"]["video"][0]
    out = _shell(console["env"], f"DOWN_ID = {down_id}\n" + DOWN)
    status, count, states, rows, seconds = out["list"]
    assert status == 200
    assert [(s["alias"], s["up"]) for s in states] == [
        ("default", True), ("shard_b", True), ("shard_c", False)]
    assert states[2]["error"] and states[2]["count"] is None
    assert count == states[0]["count"] + states[1]["count"] and rows == min(count, 100)
    assert seconds < 10  # a refused connection fails at once; a silent one in 3 s
    assert out["metrics"][0] == 200 and [s["up"] for s in out["metrics"][2]] == [
        True, True, False]
    assert out["queues"][0] == 200 and "video" not in out["queues"][1]
    assert out["queues"][2] == "shard_c"
    assert out["workers"] == [200]
    assert out["throughput"] == [200, [True, True, False]]
    assert out["bulk"] == [200, [True, True, False]]
    assert out["detail"] == 503
    assert out["prometheus"] == ['jobqueue_shard_up{shard="default"} 1.0',
                                 'jobqueue_shard_up{shard="shard_b"} 1.0',
                                 'jobqueue_shard_up{shard="shard_c"} 0.0']
