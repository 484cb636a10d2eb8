"""The queues API: list with live counts, pause, resume and the concurrency limit."""
from datetime import timedelta

import pytest
from django.test import Client

from django_pg_jobqueue import services
from django_pg_jobqueue.api.authentication import forget_all
from django_pg_jobqueue.models import QueueSetting
from django_pg_jobqueue.services.claiming import forget_cached_limits

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_limits")]

QUEUES = "/api/v1/queues/"


@pytest.fixture
def operator(queue_operator):
    """conftest's operator, who may also set limits (change_queuesetting)."""
    return queue_operator


# A queue that is not fair and does not age its jobs (docs/how-to/fairness.md).
PLAIN = {"fair": False, "aging_seconds": None, "aging_max_priority": None, "fairness_weights": {}}


def _row(body, name):
    [row] = [q for q in body if q["name"] == name]
    return row


def test_list_shows_every_queue_with_jobs_or_a_setting_with_its_counts(operator_client):
    services.enqueue("noop", queue="emails")
    services.enqueue("noop", queue="emails", delay_seconds=timedelta(hours=1))
    services.enqueue("noop", queue="reports")
    services.enqueue("noop", queue="reports")
    assert len(services.claim(worker_ids=["w-1"], queues=["reports"])) == 1
    done = services.enqueue("noop", queue="old")
    [c] = services.claim(worker_ids=["w-2"], job_ids=[done.id])
    services.complete(c.id, c.lease_token, worker_id="w-2", result={})
    QueueSetting.objects.create(queue="idle", paused=True, concurrency_limit=3)  # its jobs pruned

    response = operator_client.get(QUEUES)

    assert response.status_code == 200
    assert response.json() == [
        {"name": "emails", "paused": False, "concurrency_limit": None, **PLAIN,
         "queued": 2, "runnable": 1, "running": 0},
        {"name": "idle", "paused": True, "concurrency_limit": 3, **PLAIN,
         "queued": 0, "runnable": 0, "running": 0},
        {"name": "old", "paused": False, "concurrency_limit": None, **PLAIN,
         "queued": 0, "runnable": 0, "running": 0},
        {"name": "reports", "paused": False, "concurrency_limit": None, **PLAIN,
         "queued": 1, "runnable": 1, "running": 1},
    ]


def test_list_is_a_fixed_number_of_queries_however_many_queues(operator_client,
                                                               django_assert_num_queries):
    services.enqueue("noop", queue="q0")
    # token+user, user perms, group perms, counts by queue, settings (counted cold: the API
    # remembers tokens and permissions for a few seconds).
    forget_all()
    with django_assert_num_queries(5):
        assert len(operator_client.get(QUEUES).json()) == 1
    services.enqueue_many([{"type": "noop", "queue": f"q{i}"} for i in range(1, 30)])
    for i in range(0, 30, 3):
        services.pause_queue(f"q{i}")
    forget_all()
    with django_assert_num_queries(5):
        body = operator_client.get(QUEUES).json()
    assert len(body) == 30 and sum(q["paused"] for q in body) == 10


def test_pause_stops_claims_from_that_queue_and_resume_restores_them(operator_client):
    job = services.enqueue("noop", queue="reports")
    other = services.enqueue("noop", queue="emails")

    paused = operator_client.post(f"{QUEUES}reports/pause/")

    assert paused.status_code == 200, paused.json()
    assert paused.json() == {"name": "reports", "paused": True, "concurrency_limit": None, **PLAIN,
                             "queued": 1, "runnable": 1, "running": 0}
    assert QueueSetting.objects.get(queue="reports").paused
    claimed = services.claim(worker_ids=["w-1", "w-2"])
    assert [c.id for c in claimed] == [other.id]  # the paused queue's job stays queued
    assert operator_client.post(f"{QUEUES}reports/pause/").status_code == 200  # idempotent

    resumed = operator_client.post(f"{QUEUES}reports/resume/")

    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    assert [c.id for c in services.claim(worker_ids=["w-3"])] == [job.id]
    assert _row(operator_client.get(QUEUES).json(), "reports")["running"] == 1


def test_a_queue_a_handler_declares_can_be_paused_before_its_jobs_arrive(operator_client):
    from django_pg_jobqueue.registry import registry

    registry.register("export_for_test", lambda ctx, payload: None, queue="nightly.exports:v2")
    try:
        response = operator_client.post(f"{QUEUES}nightly.exports:v2/pause/")
        assert response.status_code == 200
        assert _row(operator_client.get(QUEUES).json(), "nightly.exports:v2")["paused"] is True
        services.enqueue("noop", queue="nightly.exports:v2")
        assert services.claim(worker_ids=["w"]) == []
    finally:
        registry.unregister("export_for_test")


def test_patch_sets_and_removes_the_concurrency_limit(operator_client):
    services.enqueue_many([{"type": "noop", "queue": "reports"}] * 3)

    response = operator_client.patch(f"{QUEUES}reports/", {"concurrency_limit": 1}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["concurrency_limit"] == 1 and response.json()["queued"] == 3
    assert len(services.claim(worker_ids=["a", "b", "c"])) == 1  # the limit holds in the claim
    forget_cached_limits()
    cleared = operator_client.patch(f"{QUEUES}reports/", {"concurrency_limit": None}, format="json")
    assert cleared.status_code == 200 and cleared.json()["concurrency_limit"] is None
    assert QueueSetting.objects.get(queue="reports").concurrency_limit is None
    assert len(services.claim(worker_ids=["a", "b", "c"])) == 2


def test_an_empty_patch_changes_nothing(operator_client):
    services.enqueue("noop", queue="reports")
    services.set_queue_limit("reports", 4)
    response = operator_client.patch(f"{QUEUES}reports/", {}, format="json")
    assert response.status_code == 200 and response.json()["concurrency_limit"] == 4


@pytest.mark.parametrize("body", [
    {"concurrency_limit": 0}, {"concurrency_limit": -1}, {"concurrency_limit": "many"},
    {"concurrency_limit": 1.5}, {"concurrency_limit": 2**31},
])
def test_a_bad_limit_is_a_400_naming_the_field(operator_client, body):
    response = operator_client.patch(f"{QUEUES}reports/", body, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"concurrency_limit"}
    assert not QueueSetting.objects.exists()


def test_unknown_and_read_only_fields_are_refused(operator_client):
    response = operator_client.patch(f"{QUEUES}reports/", {"paused": True, "queued": 0},
                                     format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"paused", "queued"}
    assert not QueueSetting.objects.exists()


@pytest.mark.parametrize("name", ["has%20space", "x" * 101, "%C3%A9t%C3%A9", "a%2Bb", "semi;colon"])
def test_a_bad_queue_name_is_a_400_and_changes_nothing(operator_client, name):
    for response in (operator_client.post(f"{QUEUES}{name}/pause/"),
                     operator_client.post(f"{QUEUES}{name}/resume/"),
                     operator_client.patch(f"{QUEUES}{name}/", {"concurrency_limit": 2},
                                           format="json")):
        assert response.status_code == 400, name
        body = response.json()
        assert body["code"] == "invalid" and set(body["errors"]) == {"name"}
    assert not QueueSetting.objects.exists()


def test_queue_names_are_validated_like_a_jobs_queue_field(operator_client):
    """The same names are refused when enqueuing and when pausing."""
    for name in ["has space", "x" * 101]:
        create = operator_client.post("/api/v1/jobs/", {"type": "noop", "queue": name},
                                      format="json")
        assert create.status_code == 400 and "queue" in create.json()["errors"]
    services.enqueue("noop", queue="x" * 100)
    assert operator_client.post(f"{QUEUES}{'x' * 100}/pause/").status_code == 200


def test_a_viewer_can_list_but_not_pause(viewer, client_for):
    client = client_for(viewer)
    assert client.get(QUEUES).status_code == 200
    for response in (client.post(f"{QUEUES}reports/pause/"),
                     client.post(f"{QUEUES}reports/resume/"),
                     client.patch(f"{QUEUES}reports/", {"concurrency_limit": 1}, format="json")):
        assert response.status_code == 403
    assert not QueueSetting.objects.exists()


def test_there_is_no_put_or_delete(operator_client):
    # Methods without a handler are refused by the permission check first (as for jobs).
    assert operator_client.put(f"{QUEUES}reports/", {"concurrency_limit": 1},
                               format="json").status_code in (403, 405)
    assert operator_client.delete(f"{QUEUES}reports/").status_code in (403, 405)
    assert operator_client.get(f"{QUEUES}reports/pause/").status_code == 405
    assert not QueueSetting.objects.exists()


# -- the admin's pause and resume actions (the same services) -------------------------------

@pytest.fixture
def admin_for(make_user):
    def login(perms):
        client = Client()
        client.force_login(make_user("admin-user", perms=perms, is_staff=True))
        return client
    return login


def test_admin_actions_pause_and_resume_through_the_services(admin_for):
    client = admin_for(["view_queuesetting", "change_queuesetting"])
    services.enqueue_many([{"type": "noop", "queue": "reports"}, {"type": "noop", "queue": "emails"}])
    services.resume_queue("reports")
    services.resume_queue("emails")
    response = client.post("/admin/django_pg_jobqueue/queuesetting/",
                           {"action": "pause", "_selected_action": ["reports", "emails"]})
    assert response.status_code == 302
    assert set(QueueSetting.objects.filter(paused=True).values_list("queue", flat=True)) == {
        "reports", "emails"}
    client.post("/admin/django_pg_jobqueue/queuesetting/", {"action": "resume", "_selected_action": ["emails"]})
    assert set(QueueSetting.objects.filter(paused=True).values_list("queue", flat=True)) == {
        "reports"}


def test_admin_pause_needs_the_change_permission(admin_for):
    client = admin_for(["view_queuesetting"])
    services.enqueue("noop", queue="reports")
    services.resume_queue("reports")
    page = client.get("/admin/django_pg_jobqueue/queuesetting/")
    assert page.status_code == 200
    form = page.context["action_form"]  # None: no action at all for this user
    assert form is None or "pause" not in dict(form.fields["action"].choices)
    client.post("/admin/django_pg_jobqueue/queuesetting/", {"action": "pause", "_selected_action": ["reports"]})
    assert not QueueSetting.objects.get(queue="reports").paused
