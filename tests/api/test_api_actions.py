"""POST /api/v1/jobs/actions/: cancel, retry or delete many jobs, by ids or by filter."""
import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services import bulk_actions
from tests.api.test_api_delete import cancelled, failed, running, succeeded

pytestmark = pytest.mark.django_db

ACTIONS = "/api/v1/jobs/actions/"


def queued(type="noop") -> int:
    return services.enqueue(type).id


def status(job_id) -> str | None:
    job = Job.objects.filter(pk=job_id).first()
    return job.status if job else None


@pytest.fixture
def admin_client(make_user, client_for):
    return client_for(make_user("ops-admin", perms=["view_job", "change_job", "delete_job"]))


def post(client, body):
    return client.post(ACTIONS, body, format="json")


def test_cancel_by_ids_cancels_what_it_may_and_lists_the_rest_with_reasons(admin_client):
    q, r, s = queued(), running(), succeeded()
    response = post(admin_client, {"action": "cancel", "ids": [q, r, s, 10**12, q]})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["done"] == 2  # the duplicate id counts once
    assert body["refused_count"] == 2
    assert body["refused"] == [
        {"id": s, "reason": "invalid_transition", "status": "succeeded",
         "detail": f"cannot cancel job {s}: it is succeeded"},
        {"id": 10**12, "reason": "not_found", "status": None,
         "detail": f"job {10**12} does not exist"},
    ]
    assert status(q) == "cancelled"
    assert Job.objects.get(pk=r).cancel_requested_at is not None  # asked to stop
    assert status(s) == "succeeded"


def test_retry_by_ids_goes_through_the_single_job_retry(admin_client):
    f, c, q = failed(), cancelled(), queued()
    body = post(admin_client, {"action": "retry", "ids": [f, c, q]}).json()
    assert body["done"] == 2
    assert [(x["id"], x["status"]) for x in body["refused"]] == [(q, "queued")]
    assert status(f) == status(c) == "queued"
    assert JobEvent.objects.filter(job_id=f, kind="retried").count() == 1


def test_delete_by_ids_removes_finished_jobs_and_their_events_only(admin_client):
    s, f, r = succeeded(), failed(), running()
    body = post(admin_client, {"action": "delete", "ids": [s, f, r]}).json()
    assert body["done"] == 2
    assert body["refused"] == [{"id": r, "reason": "invalid_transition", "status": "running",
                                "detail": f"cannot delete job {r}: it is running"}]
    assert status(s) is None and status(f) is None and status(r) == "running"
    assert not JobEvent.objects.filter(job_id__in=[s, f]).exists()
    assert JobEvent.objects.filter(job_id=r).exists()


def test_a_filter_selects_the_same_jobs_as_the_list_endpoint(admin_client):
    mine = [failed() for _ in range(3)]
    other_type = services.enqueue("sleep", {"seconds": 0}).id
    services.cancel(other_type)
    kept_running = running()
    listed = admin_client.get("/api/v1/jobs/", {"status": "failed,cancelled", "type": "noop"}).json()

    body = post(admin_client, {"action": "delete",
                               "filter": {"status": "failed,cancelled", "type": "noop"}}).json()

    assert body == {"done": 3, "refused": [], "refused_count": 0, "after": None, "remaining": 0}
    assert listed["count"] == 3
    assert not Job.objects.filter(pk__in=mine).exists()
    assert status(other_type) == "cancelled" and status(kept_running) == "running"


def test_all_means_every_job_and_refuses_the_unfinished_ones(admin_client):
    s, q = succeeded(), queued()
    body = post(admin_client, {"action": "delete", "all": True}).json()
    assert body["done"] == 1
    assert [(x["id"], x["status"]) for x in body["refused"]] == [(q, "queued")]
    assert status(s) is None and status(q) == "queued"


def test_the_refused_list_is_capped_and_counted(admin_client, monkeypatch):
    monkeypatch.setattr(bulk_actions, "MAX_REFUSED_LISTED", 3)
    ids = [queued() for _ in range(5)]
    body = post(admin_client, {"action": "retry", "ids": ids}).json()
    assert body["done"] == 0 and body["refused_count"] == 5
    assert [x["id"] for x in body["refused"]] == ids[:3]


@pytest.mark.parametrize("body, field", [
    ({"action": "delete"}, "non_field_errors"),
    ({"action": "delete", "ids": [1], "filter": {}}, "non_field_errors"),
    ({"action": "purge", "ids": [1]}, "action"),
    ({"ids": [1]}, "action"),
    ({"action": "cancel", "ids": []}, "ids"),
    ({"action": "cancel", "ids": list(range(1, 1002))}, "ids"),
    ({"action": "cancel", "ids": ["x"]}, "ids"),
    ({"action": "cancel", "ids": [0]}, "ids"),
    ({"action": "cancel", "filter": {"status": "bogus"}}, "filter"),
    ({"action": "cancel", "filter": {"priority": "abc"}}, "filter"),
    ({"action": "cancel", "filter": {"priority": 1000}}, "filter"),
    ({"action": "cancel", "filter": {"created_after": "yesterday"}}, "filter"),
    ({"action": "cancel", "filter": {"nope": 1}}, "filter"),
    ({"action": "cancel", "filter": ["status"]}, "filter"),
    ({"action": "cancel", "ids": [1], "extra": True}, "extra"),
])
def test_a_bad_body_is_a_400_naming_the_field_and_changes_nothing(admin_client, body, field):
    job_id = queued()
    response = post(admin_client, body)
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid"
    assert field in response.json()["errors"], response.json()
    assert status(job_id) == "queued"


def test_each_action_needs_the_single_job_actions_permission(make_user, client_for):
    operator = client_for(make_user("op", perms=["view_job", "change_job"]))
    deleter = client_for(make_user("del", perms=["view_job", "delete_job"]))
    viewer = client_for(make_user("view", perms=["view_job"]))
    s, q = succeeded(), queued()

    refused = post(operator, {"action": "delete", "ids": [s]})
    assert refused.status_code == 403 and "delete_job" in refused.json()["detail"]
    assert post(deleter, {"action": "cancel", "ids": [q]}).status_code == 403
    assert post(viewer, {"action": "cancel", "ids": [q]}).status_code == 403
    assert post(client_for(None), {"action": "cancel", "ids": [q]}).status_code == 401
    assert status(s) == "succeeded" and status(q) == "queued"

    assert post(operator, {"action": "cancel", "ids": [q]}).json()["done"] == 1
    assert post(deleter, {"action": "delete", "ids": [s]}).json()["done"] == 1


def test_the_old_bulk_retry_still_works(admin_client):
    f = failed()
    response = admin_client.post("/api/v1/jobs/retry/", {"ids": [f]}, format="json")
    assert response.json() == {"retried": 1, "not_retried": []}


@pytest.mark.django_db(transaction=True)
def test_a_filter_over_many_jobs_is_processed_in_batches_each_its_own_transaction(
        make_user, client_for, monkeypatch):
    """2,500 matching jobs, batches of 1,000: three transactions (each batch's events carry
    its transaction id), never one holding them all."""
    from django_pg_jobqueue.api.jobs import actions

    monkeypatch.setattr(bulk_actions, "BATCH_SIZE", 1000)
    # What is proved here is the batching within one request; the request's time bound has
    # its own test below, and on a busy machine 2,500 cancels can pass it.
    monkeypatch.setattr(actions, "MAX_SECONDS_PER_REQUEST", 600)
    client = client_for(make_user("bulk", perms=["view_job", "change_job"]))
    services.enqueue_many([{"type": "noop", "queue": "bulk"} for _ in range(2500)])
    elsewhere = services.enqueue("noop", queue="other").id
    calls = []
    real = bulk_actions._apply_batch
    monkeypatch.setattr(bulk_actions, "_apply_batch",
                        lambda *a, **k: (calls.append(len(a[1])), real(*a, **k))[1])

    body = post(client, {"action": "cancel", "filter": {"queue": "bulk", "status": "queued"}}).json()

    assert body == {"done": 2500, "refused": [], "refused_count": 0, "after": None,
                    "remaining": 0}
    assert calls == [1000, 1000, 500]
    with connection.cursor() as cur:
        cur.execute("SELECT count(DISTINCT e.tx_id) FROM job_events e JOIN jobs j ON j.id = e.job_id"
                    " WHERE j.queue = 'bulk' AND e.kind = 'cancelled'")
        assert cur.fetchone()[0] == 3
    assert Job.objects.filter(queue="bulk", status="cancelled").count() == 2500
    assert status(elsewhere) == "queued"


def test_an_action_by_search_matches_the_callers_own_key_as_the_job_list_does(
        make_user, client_for):
    alice = make_user("alice-ops", perms=["add_job", "view_job", "change_job"])
    mallory = make_user("mallory-ops", perms=["add_job", "view_job", "change_job"])
    as_alice, as_mallory = client_for(alice), client_for(mallory)
    created = as_alice.post("/api/v1/jobs/", {"type": "noop", "idempotency_key": "shared-key-1"},
                            format="json")
    assert created.status_code == 201, created.json()
    job_id = created.json()["id"]
    listed = as_alice.get("/api/v1/jobs/", {"search": "shared-key-1"}).json()["results"]
    assert [j["id"] for j in listed] == [job_id]

    # Another user neither finds nor acts on it, by her key nor by its stored form.
    for search in ("shared-key-1", f"api:{alice.pk}:shared-key-1"):
        assert as_mallory.get("/api/v1/jobs/", {"search": search}).json()["results"] == []
        body = post(as_mallory, {"action": "cancel", "filter": {"search": search}}).json()
        assert body["done"] == 0, body
    assert status(job_id) == "queued"

    body = post(as_alice, {"action": "cancel", "filter": {"search": "shared-key-1"}}).json()
    assert body["done"] == 1, body
    assert status(job_id) == "cancelled"


def test_an_action_by_filter_is_bounded_per_request_and_goes_on_with_after(
        admin_client, monkeypatch):
    from django_pg_jobqueue.api.jobs import actions

    monkeypatch.setattr(bulk_actions, "BATCH_SIZE", 5)
    monkeypatch.setattr(actions, "MAX_JOBS_PER_REQUEST", 5)
    ids = [queued() for _ in range(12)]
    request = {"action": "cancel", "filter": {"status": "queued"}}

    first = post(admin_client, request).json()
    assert (first["done"], first["after"], first["remaining"]) == (5, ids[4], 7), first
    assert Job.objects.filter(status="cancelled").count() == 5
    second = post(admin_client, {**request, "after": first["after"]}).json()
    assert (second["done"], second["after"], second["remaining"]) == (5, ids[9], 2), second
    last = post(admin_client, {**request, "after": second["after"]}).json()
    assert (last["done"], last["after"], last["remaining"]) == (2, None, 0), last
    assert set(Job.objects.values_list("status", flat=True)) == {"cancelled"}

    # The time bound too: with none left, one batch a request.
    monkeypatch.setattr(actions, "MAX_JOBS_PER_REQUEST", 10**6)
    monkeypatch.setattr(actions, "MAX_SECONDS_PER_REQUEST", 0)
    body = post(admin_client, {"action": "delete", "all": True}).json()
    assert (body["done"], body["after"], body["remaining"]) == (5, ids[4], 7), body
    refused = post(admin_client, {"action": "cancel", "ids": [ids[5]], "after": 3})
    assert refused.status_code == 400 and "after" in refused.json()["errors"]
