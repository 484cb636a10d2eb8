"""The operator API importable from the package: cancel, retry, delete, pause_queue,
resume_queue and set_queue_limit are the services the REST API and the admin call, with their
guards and their events."""
import pytest

import django_pg_jobqueue as jobqueue
from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import InvalidTransition, JobNotFound, QueueNotFound
from django_pg_jobqueue.models import Job, JobEvent, QueueSetting

pytestmark = pytest.mark.django_db


def test_the_package_exports_the_operator_services_the_api_calls():
    for name in ("cancel", "retry", "delete", "pause_queue", "resume_queue", "set_queue_limit"):
        assert name in jobqueue.__all__
        assert getattr(jobqueue, name) is getattr(services, name)


def test_cancel_then_retry_then_cancel_then_delete_a_job_through_the_package():
    job = jobqueue.enqueue("noop")
    assert jobqueue.cancel(job.id, actor="ops").status == "cancelled"
    with pytest.raises(InvalidTransition):
        jobqueue.cancel(job.id)
    retried = jobqueue.retry(job.id, actor="ops")
    assert retried.status == "queued"
    assert JobEvent.objects.filter(job_id=job.id, kind="retried",
                                   message="retried from cancelled by ops").exists()
    with pytest.raises(InvalidTransition):
        jobqueue.retry(job.id)  # queued: nothing to retry
    with pytest.raises(InvalidTransition):
        jobqueue.delete(job.id)  # not finished
    jobqueue.cancel(job.id)
    assert jobqueue.delete(job.id) >= 1
    assert not Job.objects.filter(pk=job.id).exists()
    for action in (jobqueue.cancel, jobqueue.retry, jobqueue.delete):
        with pytest.raises(JobNotFound):
            action(job.id)
        with pytest.raises(JobNotFound):
            action("not an id")


def test_pause_limit_and_resume_a_queue_through_the_package():
    jobqueue.enqueue("noop", queue="reports")
    assert jobqueue.pause_queue("reports").paused is True
    assert jobqueue.set_queue_limit("reports", 2).concurrency_limit == 2
    setting = jobqueue.resume_queue("reports")
    assert (setting.paused, setting.concurrency_limit) == (False, 2)
    assert QueueSetting.objects.get(queue="reports").concurrency_limit == 2
    with pytest.raises(ValueError, match="concurrency_limit"):
        jobqueue.set_queue_limit("reports", 0)
    with pytest.raises(QueueNotFound):
        jobqueue.pause_queue("no-such-queue")
