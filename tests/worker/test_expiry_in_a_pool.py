"""A running worker pool never starts a job past its expires_at: the claim passes it over and
the maintenance leader's reaper pass ends it, with its `expired` event, while jobs without a
deadline (and with one still ahead) run."""
from datetime import timedelta

import pytest
from django.db.models.functions import Now

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent
from tests.utils import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pool_never_runs_a_job_that_expired_while_its_queue_was_paused(worker_pool):
    doomed = services.enqueue("noop", {"n": 1}, queue="late", expires_in_seconds=0.3)
    on_time = services.enqueue("noop", {"n": 2}, queue="late", expires_in_seconds=600)
    plain = services.enqueue("noop", {"n": 3}, queue="late")
    services.pause_queue("late")
    worker_pool(threads=2)
    # Past the first job's deadline, its queue still paused: the deadline moved into the past,
    # as the database's clock would.
    Job.objects.filter(pk=doomed.pk).update(expires_at=Now() - timedelta(seconds=1))
    services.resume_queue("late")
    wait_for(lambda: Job.objects.filter(pk__in=[on_time.pk, plain.pk], status="succeeded"
                                        ).count() == 2, message="the others ran")
    wait_for(lambda: Job.objects.get(pk=doomed.pk).status == "cancelled",
             message="the leader's reaper pass ended the expired job")
    row = Job.objects.get(pk=doomed.pk)
    assert row.attempts == 0 and row.started_at is None
    kinds = list(JobEvent.objects.filter(job_id=doomed.pk).values_list("kind", flat=True))
    assert kinds == ["created", "expired"]
