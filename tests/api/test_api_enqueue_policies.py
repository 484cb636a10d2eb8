"""POST /api/v1/jobs/ and jobs/bulk/ take enqueue()'s policies (debounce, throttle,
expires_at, expires_in_seconds) with the same rules: an enqueue that returns the pending or
throttled job answers 200 with `created: false`, and a bad policy is a 400 naming its field,
nothing written."""
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from tests.utils import job_owner_pk

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
BULK = "/api/v1/jobs/bulk/"


def test_a_debounced_post_updates_the_pending_job_and_answers_200(operator_client):
    body = {"type": "noop", "debounce": {"key": "doc:1", "period_seconds": 2}}
    first = operator_client.post(JOBS, {**body, "payload": {"v": 1}}, format="json")
    second = operator_client.post(JOBS, {**body, "payload": {"v": 2}}, format="json")
    assert first.status_code == 201 and second.status_code == 200, second.json()
    assert second.json()["id"] == first.json()["id"] and second.json()["created"] is False
    assert second.json()["payload"] == {"v": 2}
    job = Job.objects.get()
    # The key is the sending user's own (keys.py), as a unique key is.
    assert job.debounce_key == f"noop:api:{job_owner_pk(operator_client)}:debounce:key:doc:1"
    python_job = services.enqueue("noop", {"v": 3}, debounce={"key": "doc:1", "period_seconds": 2})
    assert python_job.id != job.id, "Python's global key never meets an API user's"


def test_a_throttled_post_returns_the_first_job(operator_client):
    body = {"type": "noop", "throttle": {"key": "mail", "period_seconds": 60}}
    first = operator_client.post(JOBS, {**body, "payload": {"n": 1}}, format="json")
    second = operator_client.post(JOBS, {**body, "payload": {"n": 2}}, format="json")
    assert first.status_code == 201 and second.status_code == 200
    assert second.json()["id"] == first.json()["id"] and second.json()["payload"] == {"n": 1}


def test_a_deadline_is_stored_and_shown(operator_client):
    at = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    by_time = operator_client.post(JOBS, {"type": "noop", "expires_at": at.isoformat()},
                                   format="json")
    by_seconds = operator_client.post(JOBS, {"type": "noop", "expires_in_seconds": 90},
                                      format="json")
    assert by_time.status_code == by_seconds.status_code == 201
    assert Job.objects.get(pk=by_time.json()["id"]).expires_at == at
    job = Job.objects.get(pk=by_seconds.json()["id"])
    assert 89 < (job.expires_at - job.created_at).total_seconds() <= 90
    assert by_seconds.json()["expires_at"] is not None


def test_bulk_items_take_the_policies(operator_client):
    response = operator_client.post(BULK, {"jobs": [
        {"type": "noop", "payload": {"v": 1}, "debounce": {"key": "b", "period_seconds": 5}},
        {"type": "noop", "payload": {"v": 2}, "debounce": {"key": "b", "period_seconds": 5}},
        {"type": "noop", "throttle": {"key": "t", "period_seconds": 5}},
        {"type": "noop", "expires_in_seconds": 30},
    ]}, format="json")
    assert response.status_code == 201, response.json()
    ids = [job["id"] for job in response.json()["jobs"]]
    assert ids[0] == ids[1] and len(set(ids)) == 3
    assert Job.objects.get(pk=ids[0]).payload == {"v": 2}


@pytest.mark.parametrize(("body", "field"), [
    ({"debounce": {"key": "k"}}, "debounce"),
    ({"debounce": {"key": "k", "period_seconds": -1}}, "debounce"),
    ({"debounce": {"key": "k", "period_seconds": 1, "states": ["queued"]}}, "debounce"),
    ({"debounce": "k"}, "debounce"),
    ({"debounce": {"key": "k", "period_seconds": 1}, "delay_seconds": 3}, "delay_seconds"),
    ({"debounce": {"key": "k", "period_seconds": 1}, "after": [1]}, "after"),
    ({"throttle": {"period_seconds": 1, "key": ""}}, "throttle"),
    ({"throttle": {"key": "k"}}, "throttle"),
    ({"throttle": {"key": "k", "period_seconds": 1}, "unique": {"key": "k"}}, "throttle"),
    ({"expires_in_seconds": 0}, "expires_in_seconds"),
    ({"expires_in_seconds": "soon"}, "expires_in_seconds"),
    ({"expires_in_seconds": 10, "delay_seconds": 20}, "expires_in_seconds"),
    ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
    ({"expires_at": "2030-01-01T00:00:00"}, "expires_at"),  # no offset
    ({"expires_at": "2030-01-01T00:00:00Z", "expires_in_seconds": 5}, "expires_in_seconds"),
])
def test_a_bad_policy_is_a_400_naming_its_field(operator_client, body, field):
    response = operator_client.post(JOBS, {"type": "noop", **body}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"], response.json()
    bulk = operator_client.post(BULK, {"jobs": [{"type": "noop"}, {"type": "noop", **body}]},
                                format="json")
    assert bulk.status_code == 400, bulk.json()
    assert f"jobs[1].{field}" in bulk.json()["detail"], bulk.json()
    assert not Job.objects.exists()


@override_settings(JOB_API_MAX_DELAY_SECONDS=60)
def test_a_debounce_period_is_bounded_as_a_delay_is(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "debounce": {
        "key": "k", "period_seconds": 61}}, format="json")
    assert response.status_code == 400 and "debounce" in response.json()["errors"]
    assert "JOB_API_MAX_DELAY_SECONDS" in response.json()["errors"]["debounce"][0]
