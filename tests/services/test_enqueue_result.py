"""What enqueue and enqueue_many hand back is the job as stored: every field equal to the row
read back, for one job and for a batch, keyed or not, delayed or scheduled; and every job has
its `created` event, in input order for a batch."""
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import IdempotencyConflict
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in Job._meta.concrete_fields]


def assert_as_stored(job: Job) -> None:
    stored = Job.objects.get(pk=job.pk)
    assert {f: getattr(job, f) for f in FIELDS} == {f: getattr(stored, f) for f in FIELDS}
    assert not job._state.adding and job._state.db == connection.alias
    assert JobEvent.objects.filter(job_id=job.pk, kind="created").count() == 1


def test_enqueue_returns_the_job_as_stored():
    job = services.enqueue("noop", {"a": [1, {"b": None}]})
    assert job.status == "queued" and job.attempts == 0 and job.progress_message == ""
    assert job.available_at == job.created_at == job.updated_at
    assert_as_stored(job)


def test_enqueue_with_every_option_returns_the_job_as_stored():
    run_at = timezone.now() + timedelta(hours=1)
    scheduled = services.enqueue("noop", {"n": 1}, priority=-7, queue="reports", run_at=run_at,
                                 max_attempts=9, timeout_seconds=12, idempotency_key="result-1")
    assert scheduled.available_at == run_at and scheduled.request_fingerprint
    assert_as_stored(scheduled)
    delayed = services.enqueue("noop", delay_seconds=timedelta(seconds=90))
    assert delayed.available_at == delayed.created_at + timedelta(seconds=90)
    assert_as_stored(delayed)


def test_a_replayed_key_returns_the_first_job_and_a_different_request_conflicts():
    first, created = services.enqueue_or_get("noop", {"n": 1}, idempotency_key="result-2")
    again, created_again = services.enqueue_or_get("noop", {"n": 1}, idempotency_key="result-2")
    assert (created, created_again) == (True, False) and again.pk == first.pk
    with pytest.raises(IdempotencyConflict):
        services.enqueue("noop", {"n": 2}, idempotency_key="result-2")
    assert Job.objects.filter(idempotency_key="result-2").count() == 1


def test_enqueue_many_returns_the_jobs_as_stored_in_input_order():
    run_at = timezone.now() + timedelta(minutes=5)
    items = [
        {"type": "noop", "payload": {"i": 0}},
        {"type": "noop", "payload": {"i": 1}, "priority": 3, "queue": "alpha", "delay_seconds": 30},
        {"type": "noop", "payload": {"i": 2}, "run_at": run_at, "idempotency_key": "result-3"},
        {"type": "email_send", "payload": {"to": "x@example.com"}, "timeout_seconds": 5},
    ]
    jobs = services.enqueue_many(items)
    assert [j.payload for j in jobs[:3]] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert [j.id for j in jobs] == sorted(j.id for j in jobs)
    assert jobs[1].available_at == jobs[1].created_at + timedelta(seconds=30)
    assert jobs[2].available_at == run_at and jobs[2].idempotency_key == "result-3"
    assert jobs[3].type == "email_send" and jobs[3].timeout_seconds == 5
    for job in jobs:
        assert_as_stored(job)
    events = JobEvent.objects.filter(job_id__in=[j.id for j in jobs]).order_by("id")
    assert [e.job_id for e in events] == [j.id for j in jobs]
    assert events[1].data == {"queue": "alpha", "priority": 3}


def test_enqueue_many_without_keys_returns_every_job_as_stored():
    jobs = services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(50)])
    assert [j.payload["i"] for j in jobs] == list(range(50))
    assert all(not j.idempotency_key and j.request_fingerprint is None for j in jobs)
    for job in jobs[::10]:
        assert_as_stored(job)


def test_without_prepared_statements_the_same_jobs_come_back(settings):
    settings.JOB_PREPARED_STATEMENTS = False
    run_at = timezone.now() + timedelta(minutes=1)
    assert_as_stored(services.enqueue("noop", {"p": 1}, run_at=run_at, idempotency_key="np-1"))
    jobs = services.enqueue_many([{"type": "noop", "delay_seconds": 5}, {"type": "noop", "run_at": run_at}])
    assert jobs[1].available_at == run_at
    for job in jobs:
        assert_as_stored(job)


def test_a_batch_built_while_a_post_init_receiver_listens_still_sends_the_signal():
    """Jobs are built without Model.__init__ only while nothing listens to its signals."""
    from django.db.models.signals import post_init

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(receiver, sender=Job)
    try:
        jobs = services.enqueue_many([{"type": "noop", "payload": {"i": i}} for i in range(3)])
    finally:
        post_init.disconnect(receiver, sender=Job)
    assert seen == [j.pk for j in jobs]
    for job in jobs:
        assert_as_stored(job)


# Every column of the batch's insert, each set by one item of the batch and left out by the
# others: an int TTL beside float delays and deadlines, JSON columns, a deadline as an instant.
EACH_OPTION = [
    {"priority": -3, "queue": "alpha"},
    {"run_at": timezone.now() + timedelta(minutes=7)},
    {"delay_seconds": 12.5},
    {"idempotency_key": "each-option-1"},
    {"unique": {"key": "each-option", "states": ["queued", "running", "failed"]}},
    {"throttle": {"key": "each-option", "period_seconds": 60}},
    {"retry_policy": {"delays_seconds": [1, 5]}},
    {"concurrency_key": "customer:7", "concurrency_key_limit": 3},
    {"expires_at": timezone.now() + timedelta(hours=2)},
    {"expires_in_seconds": timedelta(minutes=90)},
    {"max_attempts": 7, "timeout_seconds": 200_000},
    {},
]
# What two enqueues of the same arguments store differently: the row, and its clock.
PER_JOB = {"id", "created_at", "updated_at", "available_at", "expires_at",
           "idempotency_expires_at", "idempotency_key", "request_fingerprint", "unique_key"}


def test_enqueue_many_stores_each_option_as_a_single_enqueue_does(settings):
    settings.JOB_IDEMPOTENCY_KEY_TTL_SECONDS = 3600
    items = [{"type": "noop", "payload": {"i": i}, **options}
             for i, options in enumerate(EACH_OPTION)]
    jobs = services.enqueue_many(items)
    assert [j.payload["i"] for j in jobs] == list(range(len(items)))
    for job in jobs:
        assert_as_stored(job)
    Job.objects.all().delete()
    for item, batched in zip(items, jobs, strict=True):
        alone = services.enqueue(**item)
        assert_as_stored(alone)
        assert ({f: getattr(batched, f) for f in FIELDS if f not in PER_JOB}
                == {f: getattr(alone, f) for f in FIELDS if f not in PER_JOB})
        for clock in ("available_at", "expires_at", "idempotency_expires_at"):
            # The same offset from the row's own now() (an instant given: that instant).
            offset = [None if getattr(j, clock) is None else getattr(j, clock) - j.created_at
                      for j in (batched, alone)]
            given = item.get("run_at" if clock == "available_at" else clock)
            assert offset[0] == offset[1] or getattr(batched, clock) == getattr(alone, clock) == given
        for column in ("idempotency_key", "unique_key", "request_fingerprint"):
            assert (getattr(batched, column) is None) == (getattr(alone, column) is None)
