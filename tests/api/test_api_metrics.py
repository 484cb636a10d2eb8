"""Metrics JSON and the health endpoint."""
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, WorkerProcess

pytestmark = pytest.mark.django_db

METRICS = "/api/v1/metrics/"


def _run(job_id, *, worker="host-1-0", ok=True, seconds=2.0):
    claimed = services.claim(worker_ids=[worker], job_ids=[job_id])[0]
    if ok:
        services.complete(job_id, claimed.lease_token, worker_id=worker, result={})
    else:
        services.fail(job_id, claimed.lease_token, worker_id=worker, error="x", permanent=True)
    # Pretend the attempt took `seconds` (started_at is the database's claim time).
    Job.objects.filter(pk=job_id).update(started_at=timezone.now() - timedelta(seconds=seconds),
                                         finished_at=timezone.now())


def test_metrics_after_a_known_workload(operator_client):
    ok = [services.enqueue("noop") for _ in range(3)]
    bad = services.enqueue("noop")
    for job in ok:
        _run(job.id, seconds=2)
    _run(bad.id, ok=False, seconds=10)
    services.enqueue("noop", priority=5, queue="reports")
    services.enqueue("noop", priority=5)
    services.enqueue("noop", delay_seconds=600)
    old = services.enqueue("noop")
    Job.objects.filter(pk=old.pk).update(available_at=timezone.now() - timedelta(seconds=90))
    running = services.enqueue("sleep")
    services.claim(worker_ids=["host-7-3"], job_ids=[running.id])
    WorkerProcess.objects.create(id="host-7", hostname="host", pid=7, threads=4, queues=["default"])
    WorkerProcess.objects.create(id="host-8", hostname="host", pid=8, threads=4, queues=[],
                                 heartbeat_at=timezone.now() - timedelta(minutes=5))

    m = operator_client.get(METRICS).json()
    assert m["counts_by_status"] == {"queued": 4, "running": 1, "succeeded": 3, "failed": 1,
                                     "cancelled": 0}
    assert m["queued"]["total"] == 4 and m["queued"]["scheduled"] == 1 and m["queued"]["runnable"] == 3
    assert m["queued"]["by_priority"] == [{"priority": 5, "count": 2}, {"priority": 0, "count": 2}]
    assert {q["queue"]: q["count"] for q in m["queued"]["by_queue"]} == {"default": 3, "reports": 1}
    assert 85 <= m["oldest_runnable_age_seconds"] <= 120
    assert m["finished"]["last_1m"] == {"succeeded": 3, "failed": 1}
    assert m["finished"]["last_15m"] == {"succeeded": 3, "failed": 1}
    assert m["run_time_seconds"]["sample_size"] == 4
    assert m["run_time_seconds"]["mean"] == pytest.approx(4.0, abs=0.5)
    assert m["run_time_seconds"]["p95"] == pytest.approx(8.8, abs=0.5)
    assert m["retry_rate"] == 0
    assert len(m["throughput"]) == 15
    assert m["throughput"][-1]["succeeded"] == 3 and m["throughput"][-1]["failed"] == 1
    assert sum(p["succeeded"] for p in m["throughput"][:-1]) == 0
    workers = m["workers"]
    assert workers["active"] == 1 and workers["threads"] == 4 and workers["busy_threads"] == 1
    assert workers["lost"] == 1
    process, silent = workers["processes"]
    assert (process["id"], process["state"], silent["id"], silent["state"]) == (
        "host-7", "alive", "host-8", "lost")
    assert [(j["id"], j["worker_id"]) for j in process["running_jobs"]] == [(running.id, "host-7-3")]


def test_a_lost_process_is_listed_as_lost_and_not_counted_among_active_workers(operator_client):
    # Killed a few seconds ago: past two heartbeat intervals (lost, as the workers page says),
    # well within the 15 s after which its row may be forgotten. It still holds its job.
    job = services.enqueue("sleep")
    services.claim(worker_ids=["host-5-1"], job_ids=[job.id])
    WorkerProcess.objects.create(id="host-5", hostname="host", pid=5, threads=3, queues=[],
                                 heartbeat_interval_seconds=2.0,
                                 heartbeat_at=timezone.now() - timedelta(seconds=7))
    WorkerProcess.objects.create(id="host-6", hostname="host", pid=6, threads=4, queues=[])
    workers = operator_client.get(METRICS).json()["workers"]
    assert (workers["active"], workers["lost"], workers["threads"], workers["busy_threads"]) == (
        1, 1, 4, 0)
    lost, alive = workers["processes"]
    assert (lost["id"], lost["state"], alive["id"], alive["state"]) == (
        "host-5", "lost", "host-6", "alive")
    assert [j["id"] for j in lost["running_jobs"]] == [job.id]


def test_a_prefetching_process_counts_busy_threads_up_to_its_threads(operator_client):
    jobs = [services.enqueue("noop", {"i": i}) for i in range(5)]
    services.claim(worker_ids=["host-9-1", "host-9-2"] + ["host-9-prefetch"] * 3,
                   job_ids=[j.id for j in jobs])
    WorkerProcess.objects.create(id="host-9", hostname="host", pid=9, threads=2, queues=[])
    workers = operator_client.get(METRICS).json()["workers"]
    assert (workers["threads"], workers["busy_threads"]) == (2, 2)
    (process,) = workers["processes"]
    assert sorted(j["worker_id"] for j in process["running_jobs"]) == [
        "host-9-1", "host-9-2", "host-9-prefetch", "host-9-prefetch", "host-9-prefetch"]


@override_settings(JOB_MAX_QUEUE_DEPTH=50)
def test_metrics_show_the_depth_limit(operator_client):
    assert operator_client.get(METRICS).json()["queued"]["max_depth"] == 50


def test_metrics_on_an_empty_queue(operator_client, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        m = operator_client.get(METRICS).json()
    assert m["oldest_runnable_age_seconds"] is None and m["retry_rate"] is None
    assert m["run_time_seconds"] == {"mean": None, "p95": None, "sample_size": 0}


def test_health_is_200_when_ready(client):
    response = client.get("/api/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "migrations": "ok"}


def test_health_is_503_with_pending_migrations_and_200_again_once_applied(client):
    from django.db import connection

    from django_pg_jobqueue.migrations import __path__ as migrations_path

    latest = max(p.stem for p in Path(migrations_path[0]).glob("0*.py"))
    assert client.get("/api/health/").status_code == 200
    with connection.cursor() as cur:  # as if the newest migration had not been applied yet
        cur.execute("DELETE FROM django_migrations WHERE app = 'django_pg_jobqueue' AND name = %s"
                    " RETURNING app, name, applied", [latest])
        row = cur.fetchone()
    response = client.get("/api/health/")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["migrations"] == f"pending: django_pg_jobqueue.{latest}"
    with connection.cursor() as cur:
        cur.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)", row)
    assert client.get("/api/health/").json()["migrations"] == "ok"


def test_a_current_health_check_asks_the_database_once_and_loads_no_migration_files(
        client, django_assert_num_queries):
    assert client.get("/api/health/").status_code == 200  # the plan found empty once
    with mock.patch("django.db.migrations.executor.MigrationExecutor") as executor, \
            django_assert_num_queries(1):
        assert client.get("/api/health/").status_code == 200
    executor.assert_not_called()


def test_health_is_503_when_the_database_does_not_answer(client):
    down = mock.Mock(cursor=mock.Mock(side_effect=OperationalError("down")))
    with mock.patch("django_pg_jobqueue.selectors.queue_connection", return_value=down):
        response = client.get("/api/health/")
    assert response.status_code == 503
    assert response.json()["database"].startswith("unavailable")


def test_a_database_outage_is_503_json_with_retry_after(operator_client):
    operator_client.get("/api/v1/jobs/")  # warm the token
    with mock.patch("django_pg_jobqueue.selectors.job_list", side_effect=OperationalError("connection refused")):
        response = operator_client.get("/api/v1/jobs/")
    assert response.status_code == 503
    assert response.json()["code"] == "database_unavailable"
    assert response["Retry-After"] == "5"
    with mock.patch("django_pg_jobqueue.services.enqueue_or_get", side_effect=OperationalError("server closed")):
        response = operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json")
    assert response.status_code == 503 and "Traceback" not in response.content.decode()


def test_a_paused_queues_backlog_does_not_count_as_the_oldest_runnable_job(operator_client):
    """Jobs in a paused queue wait on purpose: they are not the backlog alarm's business."""
    services.enqueue("noop", queue="reports")  # makes the queue exist, so it can be paused
    stuck = services.enqueue("noop", queue="reports")
    fresh = services.enqueue("noop")
    Job.objects.filter(pk=stuck.pk).update(available_at=timezone.now() - timedelta(minutes=30))
    Job.objects.filter(pk=fresh.pk).update(available_at=timezone.now() - timedelta(seconds=20))
    services.pause_queue("reports")

    m = operator_client.get(METRICS).json()
    assert 15 <= m["oldest_runnable_age_seconds"] <= 60
    assert m["queued"]["runnable"] == 3  # still due: the count says how many are due

    services.resume_queue("reports")
    assert operator_client.get(METRICS).json()["oldest_runnable_age_seconds"] >= 1700
