"""DELETE /api/v1/jobs/{id}/: finished jobs go, with their events; others are refused."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.services.deleting import delete

pytestmark = pytest.mark.django_db


def url(job_id) -> str:
    return f"/api/v1/jobs/{job_id}/"


def running() -> int:
    job = services.enqueue("noop")
    services.claim(worker_ids=["w-1"], job_ids=[job.id])
    return job.id


def succeeded() -> int:
    job = services.enqueue("noop")
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.complete(c.id, c.lease_token, worker_id="w-1", result={"ok": True})
    return job.id


def failed() -> int:
    job = services.enqueue("noop", max_attempts=1)
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.fail(c.id, c.lease_token, worker_id="w-1", error="boom", permanent=True)
    return job.id


def cancelled() -> int:
    job = services.enqueue("noop")
    services.cancel(job.id)
    return job.id


@pytest.fixture
def deleter(make_user, client_for):
    return client_for(make_user("deleter", perms=["view_job", "delete_job"]))


@pytest.mark.parametrize("make", [succeeded, failed, cancelled])
def test_a_finished_job_is_deleted_with_its_events_then_is_not_found(deleter, make):
    job_id = make()
    other = succeeded()
    assert HistoryEvent.objects.filter(job_id=job_id).count() >= 2

    response = deleter.delete(url(job_id))

    assert response.status_code == 204, response.content
    assert response.content == b""
    assert not Job.objects.filter(pk=job_id).exists()
    assert not HistoryEvent.objects.filter(job_id=job_id).exists()
    assert deleter.get(url(job_id)).status_code == 404
    again = deleter.delete(url(job_id))
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    # Nothing else went.
    assert Job.objects.filter(pk=other).exists()
    assert HistoryEvent.objects.filter(job_id=other).exists()


@pytest.mark.parametrize("make, status", [(lambda: services.enqueue("noop").id, "queued"),
                                          (running, "running")])
def test_a_queued_or_running_job_is_refused_with_409_naming_its_status(deleter, make, status):
    job_id = make()
    events = HistoryEvent.objects.filter(job_id=job_id).count()

    response = deleter.delete(url(job_id))

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "invalid_transition" and body["status"] == status
    assert "delete" in body["detail"]
    assert Job.objects.get(pk=job_id).status == status
    assert HistoryEvent.objects.filter(job_id=job_id).count() == events


@pytest.mark.parametrize("job_id", ["999999999", "abc", "0", "-1", str(2**63)])
def test_an_unknown_or_malformed_id_is_404(deleter, job_id):
    response = deleter.delete(url(job_id))
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_a_superuser_may_delete(make_user, client_for):
    """Before `destroy` existed, DELETE had no permission to check and got 403 even here."""
    admin = client_for(make_user("root", is_superuser=True, is_staff=True))
    job_id = succeeded()
    assert admin.delete(url(job_id)).status_code == 204


def test_delete_needs_delete_job_not_change_job(operator_client, client_for):
    job_id = succeeded()
    response = operator_client.delete(url(job_id))  # view, add and change: not delete
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert client_for(None).delete(url(job_id)).status_code == 401
    assert Job.objects.filter(pk=job_id).exists()


def test_me_reports_whether_the_user_may_delete(operator_client, deleter):
    assert operator_client.get("/api/v1/auth/me/").json()["can"]["delete"] is False
    assert deleter.get("/api/v1/auth/me/").json()["can"]["delete"] is True


def test_the_service_refuses_unfinished_jobs_and_tells_unknown_ones_apart():
    from django_pg_jobqueue.exceptions import InvalidTransition, JobNotFound

    queued = services.enqueue("noop").id
    with pytest.raises(InvalidTransition) as refused:
        delete(queued)
    assert refused.value.status == "queued"
    with pytest.raises(JobNotFound):
        delete(10**12)
    done = succeeded()
    events = HistoryEvent.objects.filter(job_id=done).count()
    assert events >= 2  # created, succeeded (which carries its start: no claimed row)
    assert delete(done) == events  # it says how many events went with the job
    assert not Job.objects.filter(pk=done).exists()
