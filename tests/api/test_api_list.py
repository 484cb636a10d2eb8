"""GET /api/v1/jobs/: filters (a bad one is a 400, never a 500), pagination, and a fixed
number of queries whatever the page holds."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.api.authentication import forget_all

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


@pytest.fixture
def some_jobs():
    a = services.enqueue("noop", {"n": 1}, priority=5, queue="alpha", idempotency_key="key-a")
    b = services.enqueue("email_send", {"to": "x@example.com"}, priority=-5)
    c = services.enqueue("noop", {"n": 3})
    services.cancel(c.id)
    return a, b, c


def _ids(response):
    assert response.status_code == 200, response.json()
    return [j["id"] for j in response.json()["results"]]


def test_list_filters(operator_client, some_jobs):
    a, b, c = some_jobs
    assert _ids(operator_client.get(JOBS)) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"status": "queued"})) == [b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"status": "queued,cancelled"})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"type": "email_send"})) == [b.id]
    assert _ids(operator_client.get(JOBS, {"queue": "alpha"})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"priority": 5})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"priority_max": 0})) == [c.id, b.id]
    assert _ids(operator_client.get(JOBS, {"search": "key-a"})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"search": str(b.id)})) == [b.id]
    assert _ids(operator_client.get(JOBS, {"search": "99999999999999999999999"})) == []
    future = (timezone.now() + timedelta(days=1)).isoformat()
    assert _ids(operator_client.get(JOBS, {"created_after": future})) == []
    assert _ids(operator_client.get(JOBS, {"created_before": future})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"ordering": "priority"})) == [b.id, c.id, a.id]


def test_a_list_without_filters_builds_no_filter_set(operator_client, some_jobs, monkeypatch):
    from django_pg_jobqueue.api.filters import JobFilter

    built = []
    original = JobFilter.__init__
    monkeypatch.setattr(JobFilter, "__init__",
                        lambda self, *a, **kw: built.append(kw.get("data")) or original(self, *a, **kw))
    a, b, c = some_jobs
    assert _ids(operator_client.get(JOBS, {"page_size": 10, "ordering": "id", "x": "1"})) == [
        a.id, b.id, c.id]
    assert built == []
    # A named filter, even an empty one, takes django-filter's way, as before.
    assert _ids(operator_client.get(JOBS, {"status": ""})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"priority_max": 0})) == [c.id, b.id]
    assert len(built) == 2


@pytest.mark.parametrize("query", [{"status": "sleeping"}, {"priority": "high"},
                                   {"priority": 1000}, {"created_after": "yesterday"},
                                   {"ordering": "payload"}, {"type": "a\x00b"}])
def test_bad_filters_are_400_never_500(operator_client, some_jobs, query):
    response = operator_client.get(JOBS, query)
    # An unknown ordering field too (DRF would ignore it): tests/api/test_api_guards.py.
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_pagination(operator_client):
    services.enqueue_many([{"type": "noop"}] * 30)
    page1 = operator_client.get(JOBS, {"page_size": 20}).json()
    assert page1["count"] == 30 and len(page1["results"]) == 20 and page1["previous"] is None
    page2 = operator_client.get(page1["next"]).json()
    assert len(page2["results"]) == 10 and page2["next"] is None
    # Past 100: a 400 naming page_size, not a silent cap (tests/api/test_api_guards.py).
    assert operator_client.get(JOBS, {"page_size": 1000}).status_code == 400
    assert len(operator_client.get(JOBS, {"page_size": 100}).json()["results"]) == 30
    assert operator_client.get(JOBS, {"page": 9}).status_code == 404


def test_list_runs_a_fixed_number_of_queries(operator_client, django_assert_num_queries):
    services.enqueue_many([{"type": "noop"}] * 3)
    # token+user, user perms, group perms, count, page: the same for 3 rows or 43. Counted
    # cold: the API remembers tokens and permissions for a few seconds (test_api_auth_cache).
    forget_all()
    with django_assert_num_queries(5):
        operator_client.get(JOBS)
    services.enqueue_many([{"type": "noop"}] * 40)
    forget_all()
    with django_assert_num_queries(5):
        operator_client.get(JOBS, {"page_size": 50})
