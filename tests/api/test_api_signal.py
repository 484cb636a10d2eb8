"""POST /api/v1/jobs/{id}/signal/: a signal for a job's durable wait, kept for the job (and
waking it when it is parked for it); 404 for no such job, 409 for a finished job or a name
sent before, 400 naming a bad field, 403 without change_job."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import JobEvent, JobSignal

pytestmark = pytest.mark.django_db


def _url(job_id) -> str:
    return f"/api/v1/jobs/{job_id}/signal/"


def test_a_signal_is_kept_for_the_job_and_names_its_sender(operator_client):
    job = services.enqueue("noop", {})
    response = operator_client.post(_url(job.id), {"name": "approved", "data": {"by": "ann"}},
                                    format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {"job_id": job.id, "name": "approved", "woke": False}
    assert JobSignal.objects.get(job_id=job.id, name="approved").data == {"by": "ann"}
    event = JobEvent.objects.get(job_id=job.id, kind="signalled")
    assert event.data == {"signal": "approved", "woke": False, "actor": "operator"}


def test_a_signal_for_no_such_job_is_404_and_for_a_finished_one_or_twice_409(operator_client):
    assert operator_client.post(_url(10**12), {"name": "a"}, format="json").status_code == 404
    assert operator_client.post(_url("nope"), {"name": "a"}, format="json").status_code == 404
    job = services.enqueue("noop", {})
    assert operator_client.post(_url(job.id), {"name": "a"}, format="json").status_code == 200
    again = operator_client.post(_url(job.id), {"name": "a"}, format="json")
    assert again.status_code == 409 and "already got signal 'a'" in again.json()["detail"]
    services.cancel(job.id)
    finished = operator_client.post(_url(job.id), {"name": "b"}, format="json")
    assert finished.status_code == 409 and "it is cancelled" in finished.json()["detail"]


@pytest.mark.parametrize("body, field", [
    ({}, "name"), ({"name": ""}, "name"), ({"name": 5}, "name"), ({"name": "x" * 201}, "name"),
    ({"name": "a", "extra": 1}, "extra"),
])
def test_a_bad_signal_is_400_naming_the_field(operator_client, body, field):
    job = services.enqueue("noop", {})
    response = operator_client.post(_url(job.id), body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"]


def test_a_signal_needs_change_job(client_for, viewer):
    job = services.enqueue("noop", {})
    response = client_for(viewer).post(_url(job.id), {"name": "a"}, format="json")
    assert response.status_code == 403
    assert not JobSignal.objects.exists()


def test_the_job_detail_names_the_signal_a_parked_job_waits_for_until_it_is_sent(
        operator_client, custom_handler):
    from django_pg_jobqueue.testing import drain

    custom_handler("approval", lambda ctx, payload: ctx.wait_for_signal("approved"))
    job = services.enqueue("approval", {})
    assert operator_client.get(f"/api/v1/jobs/{job.id}/").json()["awaiting_signal"] is None
    drain("approval")  # parks it
    assert operator_client.get(f"/api/v1/jobs/{job.id}/").json()["awaiting_signal"] == "approved"
    assert operator_client.post(_url(job.id), {"name": "approved", "data": 1},
                                format="json").json()["woke"] is True
    assert operator_client.get(f"/api/v1/jobs/{job.id}/").json()["awaiting_signal"] is None
