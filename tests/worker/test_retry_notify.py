"""A retry wakes idle workers at commit, as an enqueue does: one statement retries a job
(alone, by ids, in bulk by filter) and sends the NOTIFY; resuming a paused queue notifies too.
The workers poll every 5 s here, so a claim within 1 s can only come from the wake-up."""
import time

import pytest
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.services.bulk_retry import retry_matching

JOBS = "/api/v1/jobs/"


@pytest.fixture
def idle_pool(worker_pool):
    """A pool polling every 5 s, started past the wake-everyone poll that follows its LISTEN.
    No fetch cooldown: that claim found nothing, and a cooldown would hold the next notified
    claim back a moment (the cooldown's own tests: tests/unit/test_wake.py)."""
    with override_settings(JOB_POLL_INTERVAL_SECONDS=5.0, JOB_POLL_JITTER_SECONDS=0.0,
                           JOB_FETCH_COOLDOWN_SECONDS=0.0):
        pool = worker_pool(threads=2)
        pool.test_signals.wait_state(pool.test_signals.listening, True)
        # Past the wake-everyone claim that follows LISTEN's connect: a claim begun with
        # LISTEN up that found nothing. From here the lane sleeps a whole poll interval.
        pool.test_signals.wait_polls(1, since=0, empty=True, listening=True)
        yield pool


def _failed_job(**kwargs) -> Job:
    # Due in an hour, so that the running pool cannot claim it before it is marked failed.
    job = services.enqueue("noop", delay_seconds=3600, **kwargs)
    Job.objects.filter(pk=job.pk).update(status="failed", attempts=1, last_error="boom",
                                         finished_at=job.created_at)
    return job


def _claimed_within(pool, job_id: int, since: float) -> float:
    pool.test_signals.wait_claimed([job_id])
    return time.monotonic() - since


def test_a_single_retry_through_the_api_wakes_an_idle_worker_within_a_second(
        idle_pool, operator_client):
    job = _failed_job()
    started = time.monotonic()
    assert operator_client.post(f"{JOBS}{job.id}/retry/").status_code == 200
    assert _claimed_within(idle_pool, job.id, started) < 1.0


def test_a_retry_of_selected_ids_through_the_api_wakes_an_idle_worker(idle_pool, operator_client):
    job = _failed_job(queue="reports")
    started = time.monotonic()
    response = operator_client.post(f"{JOBS}retry/", {"ids": [job.id, 999_999_999]},
                                    content_type="application/json")
    assert response.json() == {"retried": 1, "not_retried": [999_999_999]}
    assert _claimed_within(idle_pool, job.id, started) < 1.0


def test_a_bulk_retry_by_filter_wakes_an_idle_worker(idle_pool):
    job = _failed_job()
    started = time.monotonic()
    assert retry_matching(error_contains="boom") == 1
    assert _claimed_within(idle_pool, job.id, started) < 1.0


def test_resuming_a_paused_queue_wakes_an_idle_worker(idle_pool):
    services.pause_queue("default")
    since = len(idle_pool.test_signals.polled.seen())
    job = services.enqueue("noop")
    # The enqueue's NOTIFY wakes the lane, whose claim leaves the paused queue's job alone.
    idle_pool.test_signals.wait_polls(1, since=since, empty=True)
    assert not Job.objects.filter(pk=job.pk, started_at__isnull=False).exists()
    started = time.monotonic()
    services.resume_queue("default")
    assert _claimed_within(idle_pool, job.id, started) < 1.0


def test_a_retry_records_one_retried_event_with_the_status_it_left_and_the_actor(transactional_db):
    job = _failed_job()
    Job.objects.filter(pk=job.pk).update(max_attempts=1)
    retried = services.retry(job.id, actor="ops")
    assert (retried.status, retried.attempts, retried.max_attempts) == ("queued", 1, 2)
    event = retried.events.get(kind="retried")
    assert (event.message, event.attempt, event.data) == ("retried from failed by ops", 1, {})
