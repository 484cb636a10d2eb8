"""Re-running a succeeded job makes a new copy (services.rerun, POST jobs/{id}/rerun/, the
admin's action): same type, payload, queue, priority, attempts and timeout; the original
keeps its result and history; the copy's created event names the original."""
import pytest
from django.test import Client

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import InvalidTransition, JobNotFound
from django_pg_jobqueue.models import Job, JobEvent
from tests.api.test_api_delete import cancelled, failed, running

pytestmark = pytest.mark.django_db


def succeeded_job() -> Job:
    job = services.enqueue("noop", {"to": "ada@example.com"}, queue="emails", priority=7,
                           max_attempts=4, timeout_seconds=45, idempotency_key="welcome-ada")
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.complete(c.id, c.lease_token, worker_id="w-1", result={"sent": True})
    return Job.objects.get(pk=job.id)


def test_rerun_enqueues_a_copy_and_leaves_the_original_as_it_was():
    original = succeeded_job()
    copy = services.rerun(original.id, actor="ops")

    assert copy.id != original.id and copy.status == "queued" and copy.attempts == 0
    assert (copy.type, copy.payload, copy.queue, copy.priority, copy.max_attempts,
            copy.timeout_seconds) == ("noop", {"to": "ada@example.com"}, "emails", 7, 4, 45)
    assert copy.idempotency_key is None
    created = JobEvent.objects.get(job_id=copy.id, kind="created")
    assert created.data == {"rerun_of": original.id}
    assert created.message == f"re-run of job #{original.id} by ops"
    again = Job.objects.get(pk=original.id)
    assert (again.status, again.result, again.attempts) == ("succeeded", {"sent": True}, 1)
    assert services.rerun(original.id).id not in (original.id, copy.id)  # each call: a copy


@pytest.mark.parametrize("make", [failed, cancelled, running, lambda: services.enqueue("noop").id])
def test_only_a_succeeded_job_is_rerun(make):
    job_id = make()
    with pytest.raises(InvalidTransition, match="cannot rerun"):
        services.rerun(job_id)
    with pytest.raises(JobNotFound):
        services.rerun(10**12)


def test_the_api_answers_201_with_the_copy_and_409_for_another_status(operator_client):
    original = succeeded_job()
    response = operator_client.post(f"/api/v1/jobs/{original.id}/rerun/")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["id"] != original.id and body["status"] == "queued" and body["queue"] == "emails"

    refused = operator_client.post(f"/api/v1/jobs/{failed()}/rerun/")
    assert refused.status_code == 409
    assert refused.json()["code"] == "invalid_transition"
    assert operator_client.post("/api/v1/jobs/999999999999/rerun/").status_code == 404


def test_the_api_needs_change_job(make_user, client_for):
    original = succeeded_job()
    viewer = client_for(make_user("look", perms=["view_job"]))
    assert viewer.post(f"/api/v1/jobs/{original.id}/rerun/").status_code == 403
    assert Job.objects.count() == 1


def test_the_admin_action_reruns_succeeded_jobs_and_says_which_were_refused(make_user):
    client = Client()
    client.force_login(make_user("ops", perms=["view_job", "change_job"], is_staff=True))
    original, other = succeeded_job(), failed()
    response = client.post("/admin/django_pg_jobqueue/job/", {
        "action": "rerun_jobs", "_selected_action": [original.id, other]}, follow=True)
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any("Re-ran (as new copies) 1 job(s)" in m for m in shown), shown
    assert any("cannot rerun" in m for m in shown), shown
    assert JobEvent.objects.filter(kind="created", data__rerun_of=original.id).count() == 1
