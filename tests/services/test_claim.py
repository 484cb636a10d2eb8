"""The claim: order, skip-locked exclusivity, and the partial index at scale."""
import json
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from django_pg_jobqueue import services, sql
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.utils import REPO, worker_database_url


@pytest.mark.django_db
def test_claim_order_is_priority_then_available_at_then_created_at_then_id():
    now = timezone.now()
    services.enqueue("noop", {"n": "low"}, priority=-5)
    high_late = services.enqueue("noop", {"n": "high_late"}, priority=10)
    high_early = services.enqueue("noop", {"n": "high_early"}, priority=10)
    Job.objects.filter(pk=high_early.pk).update(available_at=now - timedelta(minutes=5))
    Job.objects.filter(pk=high_late.pk).update(available_at=now - timedelta(minutes=1))
    tie_a = services.enqueue("noop", {"n": "tie_a"})
    tie_b = services.enqueue("noop", {"n": "tie_b"})
    same = now - timedelta(minutes=2)
    Job.objects.filter(pk__in=[tie_a.pk, tie_b.pk]).update(available_at=same, created_at=same)
    future = services.enqueue("noop", {"n": "future"}, priority=100, delay_seconds=3600)

    claimed = services.claim(worker_ids=[f"w-{i}" for i in range(10)])
    assert [c.payload["n"] for c in claimed] == ["high_early", "high_late", "tie_a", "tie_b", "low"]
    assert [c.worker_id for c in claimed] == [f"w-{i}" for i in range(5)]
    assert future.pk not in {c.id for c in claimed}


@pytest.mark.django_db
def test_claim_sets_running_owner_lease_start_attempt_and_writes_no_event():
    job = services.enqueue("noop", {})
    [c] = services.claim(worker_ids=["host-1-1"], lease_seconds=30)
    row = Job.objects.get(pk=job.pk)
    assert row.status == "running" and row.locked_by == "host-1-1"
    assert row.attempts == 1 and row.started_at is not None
    assert row.lease_token == c.lease_token
    assert timedelta(seconds=29) <= row.lease_expires_at - row.started_at <= timedelta(seconds=31)
    # One history row per attempt: the start stays on the row until the outcome carries it.
    assert list(HistoryEvent.objects.filter(job=job).values_list("kind", flat=True)) == ["created"]
    services.complete(job.pk, c.lease_token, worker_id="host-1-1")
    event = HistoryEvent.objects.filter(job=job).last()
    assert event.kind == "succeeded" and event.attempt == 1 and event.worker_id == "host-1-1"
    assert event.data["lease_token"] == str(c.lease_token)
    assert parse_datetime(event.data["started_at"]) == row.started_at
    assert event.data["wait_seconds"] >= 0 and "start_lease_token" not in event.data


@pytest.mark.django_db
def test_each_claim_stamps_a_fresh_lease_token():
    job = services.enqueue("noop", {}, max_attempts=3)
    [first] = services.claim(worker_ids=["a"])
    services.fail(job.pk, first.lease_token, worker_id="a", error="x")
    Job.objects.filter(pk=job.pk).update(available_at=timezone.now() - timedelta(seconds=1))
    [second] = services.claim(worker_ids=["b"])
    assert second.id == job.pk and second.lease_token != first.lease_token


@pytest.mark.django_db
def test_claim_only_takes_the_given_queues():
    services.enqueue("noop", {}, queue="emails")
    reports = services.enqueue("noop", {}, queue="reports")
    claimed = services.claim(worker_ids=["w"] * 5, queues=["reports"])
    assert [c.id for c in claimed] == [reports.pk]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claimers_never_get_the_same_job():
    services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(400)])
    got: list[int] = []
    lock = threading.Lock()

    def claimer(n):
        try:
            while True:
                batch = services.claim(worker_ids=[f"t{n}-{k}" for k in range(3)])
                if not batch:
                    return
                with lock:
                    got.extend(c.id for c in batch)
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 400 and len(set(got)) == 400


CLAIMER_SCRIPT = r"""
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django; django.setup()
from django.db import connection
from django_pg_jobqueue import services
got, lock = [], threading.Lock()
def run(n):
    try:
        while True:
            batch = services.claim(worker_ids=[f"p{os.getpid()}-{n}"] * 1)
            if not batch:
                return
            for c in batch:
                services.complete(c.id, c.lease_token, worker_id=c.worker_id, result={"by": os.getpid()})
            with lock:
                got.extend(c.id for c in batch)
    finally:
        connection.close()
ts = [threading.Thread(target=run, args=(i,)) for i in range(int(sys.argv[2]))]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(got))
"""


@pytest.mark.django_db(transaction=True)
def test_exactly_once_claiming_with_8_threads_in_2_processes_over_2000_jobs():
    services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(2000)])
    env = {"DATABASE_URL": worker_database_url(), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", CLAIMER_SCRIPT, str(REPO / "backend"), "8"],
                         stdout=subprocess.PIPE, env=env, text=True)
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=240)[0]) for p in procs]
    all_ids = results[0] + results[1]
    assert len(all_ids) == 2000, "every job claimed"
    assert len(set(all_ids)) == 2000, "no job claimed twice"
    assert results[0] and results[1], "both processes took part"
    assert Job.objects.filter(status="succeeded").count() == 2000
    # One row per attempt: each success carries its claim's start and lease token.
    assert not HistoryEvent.objects.filter(kind="claimed").exists()
    assert HistoryEvent.objects.filter(kind="succeeded", data__has_key="started_at").count() == 2000
    assert len(set(HistoryEvent.objects.filter(kind="succeeded")
                   .values_list("data__lease_token", flat=True))) == 2000


@pytest.mark.django_db
def test_claim_uses_the_partial_index_at_100k_queued_rows():
    with connection.cursor() as cur:
        cur.execute("""
            INSERT INTO jobs (type, queue, payload, status, priority, attempts, max_attempts,
                              available_at, created_at, updated_at, progress_message)
            SELECT 'noop', 'default', '{}'::jsonb, 'queued', (g % 201) - 100, 0, 3,
                   now() - (g || ' seconds')::interval, now(), now(), ''
            FROM generate_series(1, 100000) AS g
        """)
        cur.execute("""
            INSERT INTO jobs (type, queue, payload, status, priority, attempts, max_attempts,
                              available_at, created_at, updated_at, finished_at, progress_message)
            SELECT 'noop', 'default', '{}'::jsonb, 'succeeded', 0, 1, 3, now(), now(), now(), now(), ''
            FROM generate_series(1, 20000) AS g
        """)
        cur.execute("ANALYZE jobs")
        query = sql.CLAIM.format(queue_filter="")
        cur.execute("EXPLAIN (FORMAT JSON) " + query,
                    {"limit": 10, "worker_ids": json.dumps(["w"] * 10), "lease_seconds": 30.0, "queues": []})
        plan = json.dumps(cur.fetchone()[0])
    assert "jobs_claim_order_idx" in plan, plan
    # the claim really returns the best row: priority 100 with the oldest available_at
    [c] = services.claim(worker_ids=["w"])
    assert c.priority == 100
