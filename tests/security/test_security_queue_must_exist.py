"""A queue must exist to be paused, resumed or limited: no phantom queue from a typo.
A queue exists when it holds jobs (of any status), when a registered handler or the
Tasks backend's QUEUES or a periodic schedule names it, or when it already has a setting."""
import pytest
from django.test import Client, override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import QueueNotFound
from django_pg_jobqueue.models import QueueSetting
from django_pg_jobqueue.registry import registry

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_limits")]

QUEUES = "/api/v1/queues/"


@pytest.fixture
def operator(queue_operator):
    """conftest's operator, who may also set limits (change_queuesetting)."""
    return queue_operator


def _writes(client, name):
    return [client.post(f"{QUEUES}{name}/pause/"), client.post(f"{QUEUES}{name}/resume/"),
            client.patch(f"{QUEUES}{name}/", {"concurrency_limit": 2}, format="json")]


def test_pausing_an_unknown_queue_is_a_404_and_creates_nothing(operator_client):
    services.enqueue("noop", queue="reports")
    for response in _writes(operator_client, "reprots"):
        assert response.status_code == 404
        body = response.json()
        assert body["code"] == "queue_not_found"
        assert "reprots" in body["detail"] and "no jobs" in body["detail"]
    assert not QueueSetting.objects.exists()
    assert [q["name"] for q in operator_client.get(QUEUES).json()] == ["reports"]


def test_a_queue_holding_jobs_can_be_paused(operator_client):
    job = services.enqueue("noop", queue="reports")
    services.cancel(job.id)  # finished jobs count too
    assert [r.status_code for r in _writes(operator_client, "reports")] == [200, 200, 200]


def test_a_queue_a_handler_declares_can_be_paused_before_its_first_job(operator_client):
    registry.register("thumbnail_for_test", lambda ctx, payload: None, queue="media")
    try:
        response = operator_client.post(f"{QUEUES}media/pause/")
        assert response.status_code == 200 and response.json()["paused"] is True
    finally:
        registry.unregister("thumbnail_for_test")


@override_settings(TASKS={"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
                                      "QUEUES": ["default", "emails"]}})
def test_a_queue_the_tasks_backend_allows_can_be_paused(operator_client):
    assert operator_client.post(f"{QUEUES}emails/pause/").status_code == 200


@override_settings(JOB_PERIODIC={"nightly": {"cron": "0 3 * * *", "type": "noop", "queue": "nightly"}})
def test_a_queue_a_periodic_schedule_names_can_be_paused(operator_client):
    assert operator_client.post(f"{QUEUES}nightly/pause/").status_code == 200


def test_a_queue_with_a_setting_stays_writable_after_its_jobs_are_gone(operator_client):
    job = services.enqueue("noop", queue="reports")
    services.pause_queue("reports")
    services.set_queue_limit("reports", 3)
    services.cancel(job.id)
    job.delete()  # pruned
    assert operator_client.patch(f"{QUEUES}reports/", {"concurrency_limit": 5},
                                 format="json").status_code == 200
    resumed = operator_client.post(f"{QUEUES}reports/resume/")
    assert resumed.status_code == 200 and resumed.json()["concurrency_limit"] == 5
    assert [q["name"] for q in operator_client.get(QUEUES).json()] == ["reports"]
    # Once its setting says nothing, a queue nothing else makes exist is gone.
    assert operator_client.patch(f"{QUEUES}reports/", {"concurrency_limit": None},
                                 format="json").status_code == 200
    assert operator_client.get(QUEUES).json() == []
    assert operator_client.post(f"{QUEUES}reports/pause/").status_code == 404


def test_a_phantom_queue_from_before_disappears_once_resumed(operator_client):
    # What the old pause of a typo left: a setting for a queue that has nothing else.
    QueueSetting.objects.create(queue="reprots", paused=True)
    assert [q["name"] for q in operator_client.get(QUEUES).json()] == ["reprots"]
    assert operator_client.post(f"{QUEUES}reprots/resume/").status_code == 200
    assert operator_client.get(QUEUES).json() == []
    assert not QueueSetting.objects.exists()


def test_python_callers_get_queue_not_found_naming_the_queue():
    with pytest.raises(QueueNotFound, match="reprots"):
        services.pause_queue("reprots")
    with pytest.raises(LookupError):  # QueueNotFound is a LookupError
        services.set_queue_limit("reprots", 2)
    assert not QueueSetting.objects.exists()


# -- the admin -----------------------------------------------------------------------------

@pytest.fixture
def admin_client(make_user):
    client = Client()
    client.force_login(make_user("queue-admin", is_staff=True,
                                 perms=["view_queuesetting", "add_queuesetting", "change_queuesetting"]))
    return client


def test_the_admin_refuses_a_setting_for_an_unknown_queue_with_a_form_error(admin_client):
    response = admin_client.post("/admin/django_pg_jobqueue/queuesetting/add/",
                                 {"queue": "reprots", "paused": "on", "concurrency_limit": ""})
    assert response.status_code == 200  # the form again
    assert "reprots" in str(response.context["adminform"].form.errors["queue"])
    assert not QueueSetting.objects.exists()


def test_the_admin_adds_a_setting_for_a_queue_that_exists(admin_client):
    services.enqueue("noop", queue="reports")
    response = admin_client.post("/admin/django_pg_jobqueue/queuesetting/add/",
                                 {"queue": "reports", "paused": "on", "concurrency_limit": "2"})
    assert response.status_code == 302
    setting = QueueSetting.objects.get(queue="reports")
    assert setting.paused and setting.concurrency_limit == 2
