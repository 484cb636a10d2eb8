"""Durable waits in a `run_job_workers` process with one thread: a job waiting for a signal
holds no thread (another job runs meanwhile), and runs again within a second of the signal,
measured on the database's clock (the signal's event to the job's finish)."""
import pytest

from django_pg_jobqueue import send_signal, services
from django_pg_jobqueue.models import Job, JobEvent
from tests.handlers.chaos_handlers import Output
from tests.services.test_dependency_results import WORKER_ENV
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_parked_job_frees_the_only_thread_and_resumes_within_a_second_of_its_signal():
    job = services.enqueue("await_approval", {"timeout": 600})
    worker = spawn_workers("--threads", "1", env={**WORKER_ENV, "JOB_WORKER_LOG_LEVEL": "INFO"})
    out = Output(worker)
    try:
        out.wait_for_line(f"parked job={job.pk} (", timeout=30)  # the worker's line, once parked
        other = services.enqueue("pass_add", {"add": 1})
        wait_until_jobs("succeeded", pk=other.pk, timeout=30,
                        message="another job on the only thread while the first one waits")
        assert Job.objects.get(pk=job.pk).status == "queued"
        assert send_signal(job.id, "approved", {"by": "ann"}) is True
        [done] = wait_until_jobs("succeeded", pk=job.pk, timeout=30)
    finally:
        stop_workers(worker)
    assert (done.result, done.attempts) == ({"approved": {"by": "ann"}}, 1)
    signalled = JobEvent.objects.get(job_id=job.pk, kind="signalled")
    assert (done.finished_at - signalled.created_at).total_seconds() < 1.0
