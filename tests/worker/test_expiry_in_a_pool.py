"""A running worker pool never starts a job past its expires_at: the claim passes it over and
the maintenance leader's reaper pass ends it, with its `expired` event, while jobs without a
deadline (and with one still ahead) run."""
from datetime import timedelta

import pytest
from django.db.models.functions import Now

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pool_never_runs_a_job_that_expired_while_its_queue_was_paused(worker_pool):
    doomed = services.enqueue("noop", {"n": 1}, queue="late", expires_in_seconds=0.3)
    on_time = services.enqueue("noop", {"n": 2}, queue="late", expires_in_seconds=600)
    plain = services.enqueue("noop", {"n": 3}, queue="late")
    services.pause_queue("late")
    signals = worker_pool(threads=2).test_signals
    # Past the first job's deadline, its queue still paused: the deadline moved into the past,
    # as the database's clock would.
    Job.objects.filter(pk=doomed.pk).update(expires_at=Now() - timedelta(seconds=1))
    services.resume_queue("late")
    signals.wait_ended([on_time.pk, plain.pk], "succeeded")
    signals.reaped.wait(lambda passes: any(p.get("expired") for p in passes),
                        message="the leader's reaper pass to end the expired job")
    row = Job.objects.get(pk=doomed.pk)
    assert (row.status, row.attempts, row.started_at) == ("cancelled", 0, None)
    kinds = list(JobEvent.objects.filter(job_id=doomed.pk).values_list("kind", flat=True))
    assert kinds == ["created", "expired"]
