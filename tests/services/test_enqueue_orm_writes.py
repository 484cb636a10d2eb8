"""Jobs are created by `enqueue()`, never directly through the ORM.

A row inserted by `Job.objects.create`, `Job(...).save()` or `bulk_create` would have no
`created` event (audit_jobs reports every such job) and send no NOTIFY (idle workers would not
hear of it). Those inserts are refused with an error naming enqueue(); tests of the table
itself use `allow_direct_job_writes()`."""
import threading

import pytest
from django.db import connection

from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.exceptions import DirectJobCreation
from django_pg_jobqueue.models import Job, JobEvent, allow_direct_job_writes
from django_pg_jobqueue.services import enqueue

pytestmark = pytest.mark.django_db


def counts():
    return Job.objects.count(), JobEvent.objects.count()


@pytest.mark.parametrize("insert", [
    lambda: Job.objects.create(type="noop"),
    lambda: Job(type="noop").save(),
    lambda: Job.objects.bulk_create([Job(type="noop"), Job(type="noop")]),
    lambda: Job.objects.get_or_create(type="noop", queue="nowhere"),
    lambda: Job.objects.update_or_create(type="noop", queue="nowhere", defaults={"priority": 1}),
])
def test_inserting_a_job_through_the_orm_is_refused_naming_enqueue(insert):
    before = counts()
    with pytest.raises(DirectJobCreation, match=r"enqueue\(\)"):
        insert()
    assert counts() == before


def test_an_async_orm_insert_is_refused_too():
    import asyncio

    async def insert():
        await Job.objects.acreate(type="noop")

    with pytest.raises(DirectJobCreation):
        asyncio.run(insert())


def test_saving_a_fetched_job_again_is_not_an_insert_and_is_allowed():
    job = Job.objects.get(pk=enqueue("noop").pk)
    job.progress_message = "edited"
    job.save(update_fields=["progress_message"])
    assert Job.objects.get(pk=job.pk).progress_message == "edited"
    with pytest.raises(DirectJobCreation):  # but not forced into a second row
        job.pk = None
        job.save(force_insert=True)


def test_allow_direct_job_writes_lets_a_test_insert_rows_and_is_scoped():
    with allow_direct_job_writes():
        job = Job.objects.create(type="noop", idempotency_key="raw")
        Job.objects.bulk_create([Job(type="noop")])
        # scoped to this thread: another thread is still refused
        errors = []
        thread = threading.Thread(target=lambda: errors.append(_try_create()))
        thread.start()
        thread.join()
        assert isinstance(errors[0], DirectJobCreation)
    with pytest.raises(DirectJobCreation):
        Job.objects.create(type="noop")
    # what the guard prevents: such a row has no created event, and the audit reports it
    assert not JobEvent.objects.filter(job_id=job.pk, kind="created").exists()
    assert any(v.job_id == job.pk for v in audit(job_ids=[job.pk]).violations)


def _try_create():
    try:
        Job.objects.create(type="noop")
    except Exception as exc:
        return exc
    finally:
        connection.close()
    return None


def test_jobs_from_enqueue_have_their_created_event_and_pass_the_audit():
    job = enqueue("noop")
    assert JobEvent.objects.filter(job_id=job.pk, kind="created").count() == 1
    assert not [v for v in audit(job_ids=[job.pk]).violations if v.job_id == job.pk]
