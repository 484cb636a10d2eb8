"""Guards on the API's inputs: a parameter it cannot honour is a 400 naming it, never a silent
200 with something else; a method a resource does not have is a 405, not a 403."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
ACTIONS = "/api/v1/jobs/actions/"


@pytest.fixture
def superuser_client(make_user, client_for):
    return client_for(make_user("root", is_superuser=True, is_staff=True))


@pytest.mark.parametrize("params, name", [
    ({"ordering": "nope"}, "ordering"),
    ({"ordering": "-nope"}, "ordering"),
    ({"ordering": "id,payload"}, "ordering"),
    ({"ordering": "last_traceback"}, "ordering"),
    ({"page_size": "abc"}, "page_size"),
    ({"page_size": "0"}, "page_size"),
    ({"page_size": "-3"}, "page_size"),
    ({"page_size": "101"}, "page_size"),
    ({"page_size": "2.5"}, "page_size"),
])
def test_a_bad_ordering_or_page_size_on_the_job_list_is_a_400_naming_it(
        operator_client, params, name):
    services.enqueue("noop")
    response = operator_client.get(JOBS, params)
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "invalid"
    assert name in body["errors"], body


@pytest.mark.parametrize("params", [
    {"ordering": "-created_at"}, {"ordering": "priority,-id"}, {"ordering": "queue"},
    {"page_size": "1"}, {"page_size": "100"}, {"page_size": " 7 "},
    {"page_size": ""},  # blank is not given, as with the filters
])
def test_a_good_ordering_or_page_size_still_works(operator_client, params):
    ids = [services.enqueue("noop").id for _ in range(3)]
    response = operator_client.get(JOBS, params)
    assert response.status_code == 200, response.json()
    assert {j["id"] for j in response.json()["results"]} <= set(ids)


def test_page_size_is_honoured(operator_client):
    for _ in range(3):
        services.enqueue("noop")
    body = operator_client.get(JOBS, {"page_size": "2", "ordering": "id"}).json()
    assert body["count"] == 3 and len(body["results"]) == 2


# -- the actions endpoint: an empty filter is not "every job" by accident ----------------------

@pytest.fixture
def bulk_client(make_user, client_for):
    return client_for(make_user("bulk", perms=["view_job", "change_job", "delete_job"]))


@pytest.mark.parametrize("body", [
    {"action": "cancel", "filter": {}},
    {"action": "cancel", "filter": {"status": "", "type": ""}},  # blank ones are dropped
    {"action": "cancel", "filter": {"priority": None}},
    {"action": "cancel", "all": False},
])
def test_an_empty_filter_is_refused_and_cancels_nothing(bulk_client, body):
    job_id = services.enqueue("noop").id
    response = bulk_client.post(ACTIONS, body, format="json")
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert {"filter", "all", "non_field_errors"} & errors.keys(), errors
    assert "all" in str(errors)  # the message says how to mean every job
    assert Job.objects.get(pk=job_id).status == "queued"


@pytest.mark.parametrize("body", [
    {"action": "cancel", "all": True, "filter": {"type": "noop"}},
    {"action": "cancel", "all": True, "ids": [1]},
    {"action": "cancel", "all": "yes"},
])
def test_all_goes_alone(bulk_client, body):
    job_id = services.enqueue("noop").id
    response = bulk_client.post(ACTIONS, body, format="json")
    assert response.status_code == 400, response.json()
    assert Job.objects.get(pk=job_id).status == "queued"


@pytest.mark.parametrize("body", [
    {"action": "cancel", "all": True},
    {"action": "cancel", "all": True, "filter": {}},
])
def test_all_true_is_the_explicit_every_job(bulk_client, body):
    ids = [services.enqueue("noop").id for _ in range(3)]
    response = bulk_client.post(ACTIONS, body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["done"] == 3
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"cancelled"}


# -- methods a resource does not have: 405 ------------------------------------------------------

def test_put_on_a_job_is_a_405_for_a_superuser(superuser_client):
    """A job is changed in part (PATCH: its priority and run time, before it starts), never
    replaced whole."""
    job = services.enqueue("noop")
    response = superuser_client.put(f"{JOBS}{job.id}/", {"priority": 5}, format="json")
    assert response.status_code == 405, response.content
    assert response.json()["code"] == "method_not_allowed"
    assert "GET" in response["Allow"] and "PATCH" in response["Allow"]
    assert "PUT" not in response["Allow"]
    assert Job.objects.get(pk=job.id).priority == job.priority


def test_put_on_a_job_is_a_405_for_an_operator(operator_client):
    job = services.enqueue("noop")
    assert operator_client.put(f"{JOBS}{job.id}/", {}, format="json").status_code == 405


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_anonymous_still_gets_401_for_a_method_a_job_lacks(client_for, method):
    job = services.enqueue("noop")
    response = getattr(client_for(None), method)(f"{JOBS}{job.id}/", {}, format="json")
    assert response.status_code == 401
    assert Job.objects.filter(pk=job.id).exists()


def test_put_on_the_job_list_and_delete_on_a_queue_are_405(superuser_client):
    services.enqueue("noop")
    assert superuser_client.put(JOBS, {}, format="json").status_code == 405
    assert superuser_client.delete("/api/v1/queues/default/").status_code == 405
