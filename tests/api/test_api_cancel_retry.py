"""POST /api/v1/jobs/{id}/cancel/ and /retry/: what each takes, and the 409 for the rest."""

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import JobEvent
from django_pg_jobqueue.states import Status
from tests.utils import finish_job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def test_cancel_a_queued_job_then_409(operator_client):
    job = services.enqueue("noop")
    response = operator_client.post(f"{JOBS}{job.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    again = operator_client.post(f"{JOBS}{job.id}/cancel/")
    assert again.status_code == 409
    assert again.json() | {"detail": ""} == {"code": "invalid_transition", "status": "cancelled",
                                             "detail": ""}
    event = JobEvent.objects.filter(job=job, kind="cancelled").get()
    assert "operator" in event.message


def test_cancel_a_running_job_requests_a_stop(operator_client):
    job = services.enqueue("noop")
    services.claim(worker_ids=["test-1-0"], queues=None)
    body = operator_client.post(f"{JOBS}{job.id}/cancel/").json()
    assert body["status"] == "running" and body["cancel_requested_at"] is not None


@pytest.mark.parametrize("final", [Status.SUCCEEDED, Status.FAILED])
def test_cancel_a_finished_job_is_409(operator_client, final):
    job = services.enqueue("noop")
    finish_job(job.id, final)
    assert operator_client.post(f"{JOBS}{job.id}/cancel/").status_code == 409


def test_retry_failed_and_cancelled_jobs_only(operator_client):
    failed = services.enqueue("noop")
    finish_job(failed.id, Status.FAILED)
    response = operator_client.post(f"{JOBS}{failed.id}/retry/")
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert response.json()["last_error"]  # history kept
    queued = services.enqueue("noop")
    assert operator_client.post(f"{JOBS}{queued.id}/retry/").status_code == 409
    services.cancel(queued.id)
    assert operator_client.post(f"{JOBS}{queued.id}/retry/").status_code == 200
    succeeded = services.enqueue("noop")
    finish_job(succeeded.id, Status.SUCCEEDED)
    assert operator_client.post(f"{JOBS}{succeeded.id}/retry/").json()["code"] == "invalid_transition"
