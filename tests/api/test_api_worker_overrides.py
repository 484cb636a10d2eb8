"""A host's queue overrides through the API: PUT and DELETE
/api/v1/workers/hosts/{hostname}/queues/{queue}/ (change_queuesetting), GET
/api/v1/workers/overrides/ (view_job); bad input is a 400 naming the field, an unknown queue
or host a 404, never a 500."""
import pytest

from django_pg_jobqueue import services

pytestmark = pytest.mark.django_db

LIST = "/api/v1/workers/overrides/"


def url(hostname="vm-1", queue="reports"):
    return f"/api/v1/workers/hosts/{hostname}/queues/{queue}/"


@pytest.fixture(autouse=True)
def host_and_queue():
    services.heartbeat("vm-1-100", hostname="vm-1", pid=100, threads=4, queues=["*"])
    services.enqueue("noop", queue="reports")


@pytest.fixture
def configurer(client_for, make_user):
    return client_for(make_user("configurer", perms=["view_job", "change_queuesetting"]))


def test_set_list_change_and_remove_an_override(configurer):
    response = configurer.put(url(), {"stopped": True}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert {k: body[k] for k in ("hostname", "queue", "threads", "stopped", "actor")} == {
        "hostname": "vm-1", "queue": "reports", "threads": None, "stopped": True,
        "actor": "configurer"}
    assert configurer.put(url(), {"threads": 1}, format="json").json()["threads"] == 1
    [listed] = configurer.get(LIST).json()
    assert (listed["threads"], listed["stopped"]) == (1, False)
    assert configurer.delete(url()).status_code == 204
    assert configurer.get(LIST).json() == []
    assert configurer.delete(url()).status_code == 204  # none left: still fine


@pytest.mark.parametrize("body, field", [
    ({"threads": -1}, "threads"),
    ({"threads": 10_001}, "threads"),
    ({"threads": "many"}, "threads"),
    ({"stopped": "maybe"}, "stopped"),
    ({}, "threads"),
    ({"threads": None, "stopped": False}, "threads"),
    ({"threads": 1, "paused": True}, "paused"),
])
def test_a_bad_body_is_a_400_naming_the_field(configurer, body, field):
    response = configurer.put(url(), body, format="json")
    assert response.status_code == 400, response.content
    assert field in str(response.json())


@pytest.mark.parametrize("hostname, queue, field", [
    ("vm:1!", "reports", "hostname"), ("vm-1", "bad%20queue", "queue")])
def test_a_bad_name_in_the_path_is_a_400_naming_it(configurer, hostname, queue, field):
    response = configurer.put(url(hostname, queue), {"threads": 1}, format="json")
    assert response.status_code == 400, response.content
    assert field in str(response.json())


def test_an_unknown_queue_or_host_is_a_404(configurer):
    response = configurer.put(url(queue="nope"), {"threads": 1}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "queue_not_found")
    response = configurer.put(url(hostname="vm-9"), {"threads": 1}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "host_not_found")


def test_an_operator_may_list_overrides_but_not_set_them(operator_client, client_for):
    assert operator_client.get(LIST).status_code == 200
    assert operator_client.put(url(), {"threads": 1}, format="json").status_code == 403
    assert operator_client.delete(url()).status_code == 403
    assert client_for(None).put(url(), {"threads": 1}, format="json").status_code == 401
