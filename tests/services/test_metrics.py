"""GET /metrics: after a known workload, the exposition carries exactly the expected values."""
from datetime import timedelta
from unittest import mock

import pytest
from django.db import OperationalError, connection
from django.test import override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, QueueSetting, WorkerProcess
from django_pg_jobqueue.services import claiming
from django_pg_jobqueue.services.lifecycle import Completion


def scrape(client, **headers):
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    values = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return values


def value(values, name, **labels):
    return values.get((name, tuple(sorted(labels.items()))))


def claim(job):
    [c] = services.claim(worker_ids=[f"test-{job.id}"], job_ids=[job.id])
    return c


@pytest.fixture
def workload(db):
    """A workload with one of everything, all through the services:
    default: 2 noop succeeded, 1 queued and runnable for 120 s, 1 scheduled in an hour, 1 running
    mail:    1 fail failed for good, 1 fail scheduled for a retry, 1 reaped after its lease
             expired, 1 released by a shutdown, 1 cancelled while queued"""
    now = timezone.now()
    ok = [services.enqueue("noop", {"i": i}) for i in range(2)]
    Job.objects.filter(pk=ok[0].pk).update(available_at=now - timedelta(seconds=20))
    done = [claim(j) for j in ok]
    services.complete_many([Completion(c.id, c.lease_token, c.worker_id, {}) for c in done])
    waiting = services.enqueue("noop", {"waiting": True})
    Job.objects.filter(pk=waiting.pk).update(available_at=now - timedelta(seconds=120))
    services.enqueue("noop", {"later": True}, delay_seconds=3600)
    claim(services.enqueue("noop", {"running": True}))

    dead = claim(services.enqueue("fail", {}, queue="mail"))
    services.fail(dead.id, dead.lease_token, worker_id=dead.worker_id, error="boom", permanent=True)
    again = claim(services.enqueue("fail", {}, queue="mail"))
    services.fail(again.id, again.lease_token, worker_id=again.worker_id, error="flaky")
    lost = claim(services.enqueue("fail", {}, queue="mail"))
    Job.objects.filter(pk=lost.id).update(lease_expires_at=now - timedelta(seconds=5))
    assert services.reap() == {"queued": 1}
    gone = claim(services.enqueue("fail", {}, queue="mail"))
    services.release_many([(gone.id, gone.lease_token, gone.worker_id)])
    services.cancel(services.enqueue("fail", {}, queue="mail").id)

    QueueSetting.objects.create(queue="mail", paused=True, concurrency_limit=3)
    WorkerProcess.objects.create(id="host-a-1", hostname="host-a", pid=1, threads=4,
                                 queues=["*"])
    stale = WorkerProcess.objects.create(id="host-b-2", hostname="host-b", pid=2, threads=8,
                                         queues=["mail"])
    WorkerProcess.objects.filter(pk=stale.pk).update(heartbeat_at=now - timedelta(minutes=5))


@pytest.mark.django_db
def test_metrics_after_a_known_workload(client, workload):
    with override_settings(JOB_MAX_QUEUE_DEPTH=1000):
        m = scrape(client)

    jobs = {(dict(k[1])["queue"], dict(k[1])["status"]): v
            for k, v in m.items() if k[0] == "jobqueue_jobs"}
    assert jobs == {
        ("default", "succeeded"): 2, ("default", "queued"): 2, ("default", "running"): 1,
        ("mail", "failed"): 1, ("mail", "queued"): 3, ("mail", "cancelled"): 1,
    }
    assert value(m, "jobqueue_queue_depth", queue="default") == 2
    assert value(m, "jobqueue_queue_runnable", queue="default") == 1
    assert value(m, "jobqueue_queue_depth", queue="mail") == 3
    assert value(m, "jobqueue_queue_depth_limit") == 1000
    assert 119 <= value(m, "jobqueue_oldest_runnable_age_seconds", queue="default") <= 200
    assert value(m, "jobqueue_workers_alive") == 1
    assert value(m, "jobqueue_worker_threads_alive") == 4
    assert value(m, "jobqueue_queue_paused", queue="mail") == 1
    assert value(m, "jobqueue_queue_concurrency_limit", queue="mail") == 3

    processed = {tuple(sorted(dict(k[1]).items())): v
                 for k, v in m.items() if k[0] == "jobqueue_processed_recent"}
    assert processed == {
        (("outcome", "succeeded"), ("type", "noop")): 2,
        (("outcome", "failed"), ("type", "fail")): 1,
        (("outcome", "retry_scheduled"), ("type", "fail")): 1,
    }  # the cancel of a queued job is no attempt; the release and the expiry are counted apart
    assert value(m, "jobqueue_claimed_recent", type="noop") == 3
    assert value(m, "jobqueue_claimed_recent", type="fail") == 4
    assert value(m, "jobqueue_lease_expired_recent", type="fail") == 1
    assert value(m, "jobqueue_retries_scheduled_recent", type="fail") == 1
    assert value(m, "jobqueue_released_recent", type="fail") == 1
    assert value(m, "jobqueue_retried_recent", type="fail") is None
    assert value(m, "jobqueue_metrics_window_seconds") == 300

    # Run time: the two successes, bucketed (all instantaneous inside the test transaction).
    assert value(m, "jobqueue_run_seconds_recent_bucket", type="noop", outcome="succeeded",
                 le="0.005") == 2
    assert value(m, "jobqueue_run_seconds_recent_bucket", type="noop", outcome="succeeded",
                 le="+Inf") == 2
    assert value(m, "jobqueue_run_seconds_recent_gcount", type="noop", outcome="succeeded") == 2
    # Claim wait: one noop waited 20 s, the other none; the running one none.
    wait = {dict(k[1])["le"]: v for k, v in m.items()
            if k[0] == "jobqueue_claim_wait_seconds_recent_bucket" and ("type", "noop") in k[1]}
    assert wait["0.005"] == 2 and wait["10.0"] == 2 and wait["30.0"] == 3 and wait["+Inf"] == 3
    assert 19.5 <= value(m, "jobqueue_claim_wait_seconds_recent_gsum", type="noop") <= 20.5


@pytest.mark.django_db
def test_each_rate_limit_in_force_shows_its_window_use(client):
    with override_settings(JOB_RATE_LIMITS=[{"queue": "default", "max_starts": 100,
                                             "period_seconds": 60}]):
        services.set_rate_limit(type="noop", max_starts=2, period_seconds=1)
        services.set_rate_limit(key="customer:*", max_starts=5, period_seconds=10)
        services.enqueue("noop")
        services.enqueue("noop", concurrency_key="customer:1", concurrency_key_limit=10)
        try:
            services.claim(worker_ids=["w1", "w2"])
            m = scrape(client)
        finally:  # the claim's cache of the limits must not outlive their rows
            claiming.forget_cached_limits()
    assert value(m, "jobqueue_rate_limit_max_starts", scope="type:noop") == 2
    assert value(m, "jobqueue_rate_limit_period_seconds", scope="key:customer:1") == 10
    assert value(m, "jobqueue_rate_limit_used", scope="type:noop") == 2
    assert value(m, "jobqueue_rate_limit_used", scope="queue:default") == 2
    assert value(m, "jobqueue_rate_limit_used", scope="key:customer:1") == 1


@pytest.mark.django_db
def test_events_older_than_the_window_are_not_counted(client, workload):
    with override_settings(JOB_METRICS_WINDOW_SECONDS=60):
        from django_pg_jobqueue.models import JobEvent

        JobEvent.objects.update(created_at=timezone.now() - timedelta(minutes=2))
        with connection.cursor() as cur:  # and the outcomes kept on the job rows: their time
            cur.execute("UPDATE jobs SET finished_at = now() - interval '2 minutes'"
                        " WHERE finished_at IS NOT NULL")
        m = scrape(client)
    assert value(m, "jobqueue_metrics_window_seconds") == 60
    assert not [k for k in m if k[0] == "jobqueue_processed_recent"]
    assert value(m, "jobqueue_jobs", queue="default", status="succeeded") == 2  # not windowed


@pytest.mark.django_db
def test_the_depth_limit_is_absent_when_backpressure_is_off(client):
    services.enqueue("noop", {})
    m = scrape(client)
    assert value(m, "jobqueue_queue_depth_limit") is None
    assert value(m, "jobqueue_queue_depth", queue="default") == 1
    assert value(m, "jobqueue_workers_alive") == 0


@pytest.mark.django_db
def test_a_token_when_set_is_required_as_a_bearer_header(client):
    with override_settings(JOB_METRICS_TOKEN="s3cret-token"):
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics").headers["WWW-Authenticate"].startswith("Bearer")
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        assert client.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-token").status_code == 401
        scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-token")
    scrape(client)  # public when no token is configured


@pytest.mark.django_db
def test_a_database_failure_is_a_503_not_a_500(client):
    with mock.patch("django_pg_jobqueue.metrics.snapshot", side_effect=OperationalError("connection refused")):
        response = client.get("/metrics")
    assert response.status_code == 503 and b"connection refused" in response.content
    assert client.post("/metrics").status_code == 405


@pytest.mark.django_db(transaction=True)
def test_metrics_count_what_a_worker_pool_ran(client, worker_pool):
    jobs = [services.enqueue("noop", {"i": i}) for i in range(5)]
    jobs.append(services.enqueue("fail", {"permanent": True}))
    pool = worker_pool(threads=2)
    pool.test_signals.wait_finished([j.id for j in jobs])
    pool.test_signals.wait_passes(pool.test_signals.renewed, since=0)  # its heartbeat
    m = scrape(client)
    assert value(m, "jobqueue_processed_recent", type="noop", outcome="succeeded") == 5
    assert value(m, "jobqueue_processed_recent", type="fail", outcome="failed") == 1
    assert value(m, "jobqueue_claimed_recent", type="noop") == 5
    assert value(m, "jobqueue_workers_alive") == 1
    assert value(m, "jobqueue_worker_threads_alive") == 2
    assert value(m, "jobqueue_run_seconds_recent_gcount", type="noop", outcome="succeeded") == 5
    assert value(m, "jobqueue_queue_depth", queue="default") == 0
    pool.shutdown(grace=2)
    assert value(scrape(client), "jobqueue_workers_alive") == 0
