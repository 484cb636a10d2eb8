"""GET /api/v1/audit/: the operator actions newest first, paginated, filtered by actor,
action and target; actions taken through the API record the requesting user; only users
with view_auditlogentry read it, whatever JOB_API_PUBLIC_READ says."""
import pytest

from django_pg_jobqueue import services

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit/"


@pytest.fixture
def auditor(make_user):
    return make_user("auditor", perms=["add_job", "change_job", "view_job", "delete_job",
                                       "change_queuesetting", "view_auditlogentry"])


@pytest.fixture
def auditor_client(client_for, auditor):
    return client_for(auditor)


def test_actions_through_the_api_are_listed_newest_first_with_the_user(auditor_client):
    job = services.enqueue("noop", queue="media")
    assert auditor_client.post(f"/api/v1/jobs/{job.id}/cancel/").status_code == 200
    assert auditor_client.post("/api/v1/queues/media/pause/").status_code == 200
    assert auditor_client.patch("/api/v1/queues/media/", {"concurrency_limit": 2},
                                format="json").status_code == 200

    response = auditor_client.get(AUDIT)

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [(r["actor"], r["action"], r["target_kind"], r["target"], r["data"])
            for r in body["results"]] == [
        ("auditor", "set_queue_limit", "queue", "media", {"concurrency_limit": [None, 2]}),
        ("auditor", "pause_queue", "queue", "media", {"paused": [False, True]}),
        ("auditor", "cancel", "job", str(job.id), {"status": "queued"}),
    ]
    assert body["results"][0]["at"].endswith("Z")


def test_bulk_actions_through_the_api_record_each_job(auditor_client):
    jobs = [services.enqueue("noop") for _ in range(2)]
    response = auditor_client.post("/api/v1/jobs/actions/", {
        "action": "cancel", "ids": [j.id for j in jobs]}, format="json")
    assert response.json()["done"] == 2
    results = auditor_client.get(AUDIT, {"action": "cancel"}).json()["results"]
    assert sorted(int(r["target"]) for r in results) == [j.id for j in jobs]


def test_filters_by_actor_action_and_target_combine(auditor_client):
    a, b = services.enqueue("noop"), services.enqueue("noop", queue="media")
    services.cancel(a.id, actor="alice")
    services.cancel(b.id, actor="bob")
    services.pause_queue("media", actor="alice")

    def targets(**params):
        return [r["target"] for r in auditor_client.get(AUDIT, params).json()["results"]]

    assert targets(actor="alice") == ["media", str(a.id)]
    assert targets(action="cancel") == [str(b.id), str(a.id)]
    assert targets(target_kind="job", target=str(b.id)) == [str(b.id)]
    assert targets(actor="alice", action="cancel") == [str(a.id)]
    assert targets(actor="nobody") == []


def test_pages_follow_page_size(auditor_client):
    for _ in range(3):
        services.cancel(services.enqueue("noop").id, actor="alice")
    first = auditor_client.get(AUDIT, {"page_size": 2}).json()
    assert (first["count"], len(first["results"]), first["next"] is not None) == (3, 2, True)
    second = auditor_client.get(AUDIT, {"page_size": 2, "page": 2}).json()
    assert len(second["results"]) == 1


def test_an_unknown_action_or_target_kind_is_a_400_naming_it(auditor_client):
    response = auditor_client.get(AUDIT, {"action": "explode"})
    assert response.status_code == 400
    assert "action" in str(response.json())
    response = auditor_client.get(AUDIT, {"target_kind": "planet"})
    assert response.status_code == 400
    assert "target_kind" in str(response.json())


def test_only_users_with_view_auditlogentry_read_it(client_for, operator, settings):
    assert client_for().get(AUDIT).status_code == 401
    assert client_for(operator).get(AUDIT).status_code == 403  # view_job, change_job: not enough
    settings.JOB_API_PUBLIC_READ = True
    assert client_for().get(AUDIT).status_code == 401
    assert client_for(operator).get(AUDIT).status_code == 403


def test_the_users_can_flags_say_whether_they_read_it(client_for, operator, auditor):
    assert client_for(operator).get("/api/v1/auth/me/").json()["can"]["view_audit_log"] is False
    assert client_for(auditor).get("/api/v1/auth/me/").json()["can"]["view_audit_log"] is True


def test_admin_actions_are_recorded_with_the_admin_and_the_admin_lists_them_read_only(
        admin_client, admin_user):
    job = services.enqueue("noop")
    response = admin_client.post("/admin/django_pg_jobqueue/job/", {
        "action": "cancel_jobs", "_selected_action": [job.id]})
    assert response.status_code == 302
    from django_pg_jobqueue.models import AuditLogEntry

    [entry] = AuditLogEntry.objects.all()
    assert (entry.actor, entry.action, entry.target) == (admin_user.username, "cancel", str(job.id))
    page = admin_client.get("/admin/django_pg_jobqueue/auditlogentry/")
    assert page.status_code == 200 and f">{job.id}<" in page.content.decode()
    assert admin_client.get("/admin/django_pg_jobqueue/auditlogentry/add/").status_code == 403
    change = admin_client.post(f"/admin/django_pg_jobqueue/auditlogentry/{entry.pk}/change/",
                               {"actor": "someone else"})
    assert change.status_code in (302, 403)
    entry.refresh_from_db()
    assert entry.actor == admin_user.username
