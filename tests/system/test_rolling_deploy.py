"""A rolling deploy: workers of the old code (without a handler for a new job type) and of the
new code run side by side while producers on the new code enqueue the new type. An old
worker that claims such a job gives it back without charging the attempt, and leaves the type
out of its claims for a while; a new worker runs it."""
import signal
from datetime import timedelta

import pytest
from django.test import override_settings

from django_pg_jobqueue import services, testing
from django_pg_jobqueue.metrics import snapshot
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import retry_handlers  # noqa: F401 - registers deployed_later for enqueue()
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, wait_until_jobs

WORKER_ENV = {"JOB_POLL_INTERVAL_SECONDS": "0.2", "JOB_POLL_JITTER_SECONDS": "0",
              "JOB_WORKER_LOG_LEVEL": "INFO", "JOB_LISTEN_NOTIFY": "true"}


def _start(**env):
    proc = spawn_workers("--threads", "2", env={**WORKER_ENV, **env})
    out = Output(proc)
    out.wait_for_line("running (", timeout=60)
    return proc, out


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(30)


def _kinds(job):
    return list(HistoryEvent.objects.filter(job_id=job.pk).order_by("id")
                .values_list("kind", "attempt", "worker_id"))


@pytest.mark.django_db(transaction=True)
def test_a_new_type_runs_on_a_new_worker_without_an_attempt_charged_by_an_old_one(
        operator_client):
    # The old code: no handler for deployed_later (its claims logged, at DEBUG).
    old, old_out = _start(JOB_WORKER_LOG_LEVEL="DEBUG")
    new = None
    try:
        job = services.enqueue("deployed_later", {}, max_attempts=5)  # a producer on new code
        # The old worker (another process) gives it back, and says so once it has.
        old_out.wait_for_line(f"job={job.pk} type=deployed_later: no handler", timeout=30)
        released = HistoryEvent.objects.get(job_id=job.pk, kind="released")
        row = Job.objects.get(pk=job.pk)
        assert (row.status, row.attempts, row.last_error) == ("queued", 0, None)
        assert released.data["reason"] == "unknown_type" and released.attempt == 1
        # It says what it waits for: the job's detail, and a metric.
        body = operator_client.get(f"/api/v1/jobs/{job.pk}/").json()
        assert body["waiting_for_handler"] is True and body["unknown_type_at"]
        assert snapshot().waiting_for_handler == {"deployed_later": 1}
        # The old worker leaves the type alone now (it would give the job back again).
        # Three more of its claims, by its log: each would have taken the job again.
        polls = len(old_out.matching("polled, claimed"))
        old_out.wait_for_line("polled, claimed", count=polls + 3, timeout=30)
        # Not taken again: still queued, one attempt started (the released one carries its
        # start; the claim writes no event of its own).
        assert HistoryEvent.objects.filter(job_id=job.pk, data__has_key="started_at").count() == 1
        assert Job.objects.get(pk=job.pk).status == "queued"

        new, new_out = _start(JOB_EXTRA_HANDLER_MODULES="tests.handlers.retry_handlers")
        wait_until_jobs("succeeded", pk=job.pk, message="a new worker to run the job")
    finally:
        _stop(old)
        if new is not None:
            _stop(new)
    row = Job.objects.get(pk=job.pk)
    old_worker = released.worker_id
    assert row.attempts == 1  # the old worker's claim was not charged
    assert not row.result["ran_on"].startswith(old_worker.rsplit("-", 1)[0] + "-")
    # Each attempt's start, carried by its outcome: the old worker's, then the new one's.
    claims = list(HistoryEvent.objects.filter(job_id=job.pk, data__has_key="started_at")
                  .order_by("id").values_list("attempt", "worker_id"))
    assert claims == [(1, old_worker), (1, row.result["ran_on"])]
    assert snapshot().waiting_for_handler == {}


@pytest.mark.django_db(transaction=True)
def test_a_type_no_worker_knows_fails_after_the_configured_wait_saying_why():
    job = services.enqueue("deployed_later", {}, max_attempts=5)
    Job.objects.filter(pk=job.pk).update(type="removed_type")
    with override_settings(JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS=3600):
        assert testing.drain().ran == 1
        assert Job.objects.get(pk=job.pk).status == "queued"
        # an hour later, the next worker to claim it fails it
        Job.objects.filter(pk=job.pk).update(
            unknown_type_at=Job.objects.get(pk=job.pk).unknown_type_at
            - timedelta(hours=1, seconds=1))
        testing.drain()
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts) == ("failed", 1)
    assert "no handler registered for job type 'removed_type'" in row.last_error
    assert "JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS" in row.last_error


@pytest.mark.django_db(transaction=True)
def test_an_operator_retry_of_such_a_job_starts_a_fresh_wait():
    job = services.enqueue("deployed_later", {}, max_attempts=5)
    Job.objects.filter(pk=job.pk).update(type="removed_type")
    with override_settings(JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS=0):
        testing.drain()
    assert Job.objects.get(pk=job.pk).status == "failed"
    services.retry(job.pk)
    assert Job.objects.get(pk=job.pk).unknown_type_at is None
