"""The database itself refuses every impossible job shape, whatever code path writes it."""
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import Now

from django_pg_jobqueue.models import Job, JobEvent, allow_direct_job_writes
from django_pg_jobqueue.services import enqueue
from django_pg_jobqueue.states import PRIORITY_MAX, PRIORITY_MIN

pytestmark = pytest.mark.django_db

LOCK = dict(locked_by="w-1", lease_token=uuid.uuid4())


def running_job():
    job = enqueue("noop", {})
    Job.objects.filter(pk=job.pk).update(
        status="running", attempts=1, started_at=Now(), lease_expires_at=Now(), **LOCK)
    return job


def finished_job(status="succeeded"):
    job = enqueue("noop", {})
    Job.objects.filter(pk=job.pk).update(status=status, attempts=1, finished_at=Now())
    return job


def assert_refused(constraint: str, job, **changes):
    with pytest.raises(IntegrityError) as err, transaction.atomic():
        Job.objects.filter(pk=job.pk).update(**changes)
    assert constraint in str(err.value)


@pytest.mark.parametrize("changes", [
    {"locked_by": "w-1"}, {"lease_token": uuid.uuid4()}, {"lease_expires_at": Now()},
    {"finished_at": Now()}, {"cancel_requested_at": Now()},
])
def test_queued_job_cannot_hold_a_lock_or_a_finish_time(changes):
    assert_refused("job_queued_has_no_lock_and_no_finish", enqueue("noop"), **changes)


@pytest.mark.parametrize("missing", ["locked_by", "lease_token", "lease_expires_at", "started_at"])
def test_running_job_must_have_owner_token_deadline_and_start(missing):
    assert_refused("job_running_has_lease", running_job(), **{missing: None})


def test_running_job_cannot_have_a_finish_time():
    assert_refused("job_running_has_lease", running_job(), finished_at=Now())


def test_setting_running_without_a_lease_is_refused():
    assert_refused("job_running_has_lease", enqueue("noop"), status="running", attempts=1)


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_finished_job_has_finish_time(status):
    assert_refused("job_finished_has_finish_time_and_no_lock", finished_job(status),
                   finished_at=None)


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_finished_job_holds_no_lock(status):
    assert_refused("job_finished_has_finish_time_and_no_lock", finished_job(status),
                   locked_by="w-1")


def test_finishing_a_running_job_without_clearing_the_lock_is_refused():
    assert_refused("job_finished_has_finish_time_and_no_lock", running_job(),
                   status="succeeded", finished_at=Now())


def test_attempts_never_exceed_max_attempts():
    job = running_job()
    assert_refused("job_attempts_within_max", job, attempts=4)


def test_attempts_are_never_negative():
    # attempts is a PositiveIntegerField: Django adds its own >= 0 check as well.
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=enqueue("noop").pk).update(attempts=-1)


def test_queued_job_has_an_attempt_left():
    job = enqueue("noop", max_attempts=2)
    assert_refused("job_queued_has_attempt_left", job, attempts=2)


def test_max_attempts_at_least_one():
    assert_refused("job_max_attempts_positive", enqueue("noop"), max_attempts=0)


@pytest.mark.parametrize("priority", [PRIORITY_MIN - 1, PRIORITY_MAX + 1])
def test_priority_within_tasks_framework_range(priority):
    assert_refused("job_priority_in_range", enqueue("noop"), priority=priority)


def test_unknown_status_is_refused():
    assert_refused("job_status_known", enqueue("noop"), status="paused")


def test_progress_is_a_percentage():
    assert_refused("job_progress_is_a_percentage", running_job(), progress_percent=101)


def test_timeout_is_positive():
    assert_refused("job_timeout_positive", enqueue("noop"), timeout_seconds=0)


def test_payload_must_be_a_json_object_even_from_raw_sql():
    job = enqueue("noop")
    with pytest.raises(IntegrityError) as err, transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("UPDATE jobs SET payload = '[1, 2]'::jsonb WHERE id = %s", [job.pk])
    assert "job_payload_is_object" in str(err.value)


def test_raw_sql_insert_of_an_impossible_row_is_refused():
    with pytest.raises(IntegrityError) as err, transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("INSERT INTO jobs (type, status, locked_by) VALUES ('noop', 'queued', 'x')")
    assert "job_queued_has_no_lock_and_no_finish" in str(err.value)


def test_idempotency_key_is_unique_when_present():
    # Direct inserts, past enqueue()'s replay of a known key: the unique index itself refuses.
    # Jobs are not created through the ORM outside allow_direct_job_writes() (models.py).
    with allow_direct_job_writes():
        Job.objects.create(type="noop", idempotency_key="k1")
        Job.objects.create(type="noop")
        Job.objects.create(type="noop")  # many rows without a key are fine
        with pytest.raises(IntegrityError), transaction.atomic():
            Job.objects.create(type="noop", idempotency_key="k1")


def test_event_kind_must_be_known():
    job = enqueue("noop")
    with pytest.raises(IntegrityError) as err, transaction.atomic():
        JobEvent.objects.create(job=job, kind="exploded")
    assert "job_event_kind_known" in str(err.value)
