"""POST /api/v1/jobs/bulk/: many jobs in one request, all or nothing, each bad item named
by its index."""

import pytest
from django.test import override_settings

from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


@override_settings(JOB_CREATE_RATE="1000/min")  # every job counts against the rate
def test_bulk_creates_every_job(operator_client):
    jobs = [{"type": "noop", "payload": {"i": i}} for i in range(1000)]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["count"] == 1000
    assert Job.objects.count() == 1000
    assert sorted(j["payload"]["i"] for j in response.json()["jobs"]) == list(range(1000))


def test_bulk_is_all_or_nothing_and_names_the_bad_item(operator_client):
    jobs = [{"type": "noop"}, {"type": "noop", "queue": "no spaces"},
            {"type": "noop", "priority": 500}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400
    errors = response.json()["errors"]["jobs"]
    assert set(errors) == {"1", "2"}  # only the bad items, by index
    assert "queue" in errors["1"] and "priority" in errors["2"]
    # A type no handler is registered for is refused by the service, named by its index too.
    jobs = [{"type": "noop"}, {"type": "nope"}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]["jobs"]) == {"1"}
    assert "jobs[1].type" in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("jobs", [[], [{"type": "noop"}] * 1001])
def test_bulk_takes_1_to_1000_jobs(operator_client, jobs):
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400 and "jobs" in response.json()["errors"]
    assert not Job.objects.exists()


def test_bulk_refuses_a_repeated_idempotency_key(operator_client):
    jobs = [{"type": "noop", "idempotency_key": "a"}, {"type": "noop", "idempotency_key": "a"}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400
    assert "repeats" in response.json()["detail"]


def test_bulk_with_a_conflicting_key_creates_nothing(operator_client):
    operator_client.post(JOBS, {"type": "noop", "idempotency_key": "taken"}, format="json")
    jobs = [{"type": "noop"}, {"type": "noop", "payload": {"other": 1}, "idempotency_key": "taken"}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 409
    assert Job.objects.count() == 1
