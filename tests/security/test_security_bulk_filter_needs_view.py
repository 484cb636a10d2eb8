"""A bulk action that chooses its jobs by filter, or takes every job, reads them: what it
answers (done, refused, refused_count, remaining) says which jobs match, so by `search`
what their payloads contain. Without view_job it is a 403 that names nothing and changes
nothing; by ids, the action's own permission is enough (as on the single-job endpoints)."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

ACTIONS = "/api/v1/jobs/actions/"
SECRET = {"api_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}


@pytest.fixture
def secrets():
    """Jobs of another tenant, queued and finished, holding a secret in their payloads."""
    queued = services.enqueue("noop", SECRET).id
    done = services.enqueue("noop", SECRET)
    [claimed] = services.claim(worker_ids=["w-1"], job_ids=[done.id])
    services.complete(done.id, claimed.lease_token, worker_id="w-1", result={})
    return {"queued": queued, "succeeded": done.id}


def statuses():
    return dict(Job.objects.values_list("id", "status"))


@pytest.mark.parametrize(("perm", "action", "status"), [
    ("change_job", "retry", "queued"),     # refused for each queued job: the oracle
    ("change_job", "cancel", "succeeded"),
    ("delete_job", "delete", "queued"),
])
def test_an_action_by_filter_without_view_job_is_a_403_that_names_no_job(
        make_user, client_for, secrets, perm, action, status):
    client = client_for(make_user("tenant", perms=[perm]))
    before = statuses()
    for guess in ("sk_live_4", "sk_live_X"):  # a right and a wrong guess answer alike
        response = client.post(ACTIONS, {"action": action, "filter": {
            "search": guess, "status": status}}, format="json")
        assert response.status_code == 403, response.json()
        body = response.json()
        assert body["code"] == "permission_denied" and "view_job" in body["detail"]
        assert set(body) <= {"code", "detail", "errors"}
    everything = client.post(ACTIONS, {"action": action, "all": True}, format="json")
    assert everything.status_code == 403
    assert statuses() == before


def test_the_old_bulk_retry_by_filter_without_view_job_is_a_403(make_user, client_for):
    failed = services.enqueue("noop", SECRET, max_attempts=1)
    [claimed] = services.claim(worker_ids=["w-1"], job_ids=[failed.id])
    services.fail(failed.id, claimed.lease_token, worker_id="w-1", error="sk_live_4eC39 refused")
    client = client_for(make_user("tenant", perms=["change_job"]))
    for body in ({"error_contains": "sk_live_4"}, {"all": True}):
        response = client.post("/api/v1/jobs/retry/", body, format="json")
        assert response.status_code == 403, response.json()
        assert "view_job" in response.json()["detail"]
    assert Job.objects.get(pk=failed.id).status == "failed"
    # By ids, the action's permission is enough.
    by_ids = client.post("/api/v1/jobs/retry/", {"ids": [failed.id]}, format="json")
    assert by_ids.status_code == 200 and by_ids.json()["retried"] == 1


def test_an_action_by_ids_needs_only_the_actions_permission(make_user, client_for, secrets):
    client = client_for(make_user("tenant", perms=["change_job"]))
    response = client.post(ACTIONS, {"action": "cancel", "ids": [secrets["queued"]]},
                           format="json")
    assert response.status_code == 200 and response.json()["done"] == 1


def test_with_view_job_an_action_by_filter_is_allowed(make_user, client_for, secrets):
    client = client_for(make_user("ops", perms=["view_job", "change_job"]))
    response = client.post(ACTIONS, {"action": "cancel", "filter": {"search": "sk_live_4"}},
                           format="json")
    assert response.status_code == 200
    assert response.json()["done"] == 1 and response.json()["refused_count"] == 1


@override_settings(JOB_API_PUBLIC_READ=True)
def test_with_public_reads_a_filter_reveals_nothing_more_than_the_list(
        make_user, client_for, secrets):
    client = client_for(make_user("tenant", perms=["change_job"]))
    response = client.post(ACTIONS, {"action": "cancel", "filter": {"search": "sk_live_4"}},
                           format="json")
    assert response.status_code == 200 and response.json()["done"] == 1
