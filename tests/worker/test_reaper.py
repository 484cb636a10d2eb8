"""The reaper's run-once step, called directly (no sleeping for its loop)."""
from datetime import timedelta

import pytest
from django.utils.dateparse import parse_datetime

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import Job, JobEvent, TxNow
from django_pg_jobqueue.worker.reaper import Reaper

pytestmark = pytest.mark.django_db


def expired_job(max_attempts=3, attempts_used=1):
    job = services.enqueue("noop", {}, max_attempts=max_attempts)
    for _ in range(attempts_used):
        [c] = services.claim(worker_ids=["w-dead"], queues=["default"])
    Job.objects.filter(pk=job.pk).update(lease_expires_at=TxNow() - timedelta(seconds=1))
    return job, c


def test_run_once_requeues_expired_leases_with_backoff_and_an_event():
    job, claim = expired_job()
    assert Reaper().run_once() == {"queued": 1}
    row = Job.objects.get(pk=job.pk)
    assert row.status == "queued" and row.locked_by is None and row.attempts == 1
    assert "lease expired" in row.last_error
    event = JobEvent.objects.filter(job_id=job.pk).last()
    assert event.kind == "lease_expired" and event.data["lease_token"] == str(claim.lease_token)
    assert event.worker_id == "w-dead" and event.data["delay_seconds"] is not None


def test_run_once_fails_the_job_when_attempts_are_spent():
    job, _ = expired_job(max_attempts=1)
    assert Reaper().run_once() == {"failed": 1}
    row = Job.objects.get(pk=job.pk)
    assert row.status == "failed" and row.finished_at is not None


def test_live_leases_are_left_alone():
    job = services.enqueue("noop", {})
    services.claim(worker_ids=["w-live"], lease_seconds=60)
    assert Reaper().run_once() == {}
    assert Job.objects.get(pk=job.pk).status == "running"


def test_after_an_outage_the_reaper_gives_renewers_time_to_come_back():
    job, _ = expired_job()
    reaper = Reaper()
    reaper.on_connection_error()
    assert reaper.run_once() == {}, "holds off right after reconnecting"
    assert Job.objects.get(pk=job.pk).status == "running"
    reaper.hold_until = 0
    assert reaper.run_once() == {"queued": 1}


def prefetched_expired_job(max_attempts=1, adopted_by=None):
    """A job claimed into a prefetch buffer (`<process>-prefetch`) whose lease then expired;
    with `adopted_by`, an executor thread of that process had taken it and started it."""
    job = services.enqueue("noop", {}, max_attempts=max_attempts)
    [c] = services.claim(worker_ids=["vm-1-prefetch"], queues=["default"])
    if adopted_by:
        assert services.adopt_prefetched([(c.id, c.lease_token, adopted_by)]) == {c.id}
    Job.objects.filter(pk=job.pk).update(lease_expires_at=TxNow() - timedelta(seconds=1))
    return job, c


def test_a_job_whose_lease_expired_before_any_thread_started_it_is_requeued_uncharged():
    job, claim = prefetched_expired_job(max_attempts=1)
    assert Reaper().run_once() == {"released": 1}
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts, row.last_error, row.locked_by) == ("queued", 0, None, None)
    assert row.available_at == row.updated_at  # due at once: no backoff
    event = JobEvent.objects.filter(job_id=job.pk).last()
    assert (event.kind, event.attempt, event.worker_id) == ("released", 1, "vm-1-prefetch")
    # With the start of the attempt it gives back (the claim wrote no event of its own),
    # read as a time: PostgreSQL writes 5 fraction digits when the microseconds end in 0.
    data = dict(event.data)
    assert parse_datetime(data.pop("started_at")) == claim.started_at
    assert data == {"lease_token": str(claim.lease_token), "reason": "unstarted",
                    "wait_seconds": 0.0}
    assert not JobEvent.objects.filter(job_id=job.pk, kind="lease_expired").exists()
    # The executor that took it too late does not run it: its start is refused.
    assert services.adopt_prefetched([(claim.id, claim.lease_token, "vm-1-1")]) == set()
    assert audit(job_ids=[job.pk]).ok


def test_a_prefetched_job_that_an_executor_started_is_charged_when_its_lease_expires():
    job, claim = prefetched_expired_job(max_attempts=1, adopted_by="vm-1-1")
    assert Reaper().run_once() == {"failed": 1}
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts) == ("failed", 1)
    assert row.last_error == "lease expired: worker vm-1-1 stopped renewing it"
    event = JobEvent.objects.filter(job_id=job.pk).last()
    assert (event.kind, event.worker_id) == ("lease_expired", "vm-1-1")


def test_a_cancel_requested_while_prefetched_still_wins_at_lease_expiry():
    job, _ = prefetched_expired_job(max_attempts=3)
    services.cancel(job.pk)
    assert Reaper().run_once() == {"cancelled": 1}
    assert Job.objects.get(pk=job.pk).status == "cancelled"


def test_run_once_ends_queued_jobs_past_their_deadline_with_an_expired_event():
    job = services.enqueue("noop", {}, expires_in_seconds=60)
    kept = services.enqueue("noop", {}, expires_in_seconds=60)
    Job.objects.filter(pk=job.pk).update(expires_at=TxNow() - timedelta(seconds=1))
    assert Reaper().run_once() == {"expired": 1}
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts, row.started_at) == ("cancelled", 0, None)
    assert JobEvent.objects.filter(job_id=job.pk).last().kind == "expired"
    assert Job.objects.get(pk=kept.pk).status == "queued"
    assert Reaper().run_once() == {}
    assert audit(job_ids=[job.pk]).ok
