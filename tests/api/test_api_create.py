"""POST /api/v1/jobs/: a job created from a type and options, each bad field named in a
400, the fields the queue maintains refused, and GET /api/v1/job-types/ listing what may be
created."""
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue.models import Job
from tests.utils import job_owner_pk

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def test_create_with_only_a_type_uses_the_types_defaults(operator_client):
    response = operator_client.post(JOBS, {"type": "email_send"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["type"] == "email_send"
    assert body["max_attempts"] == 5 and body["timeout_seconds"] == 30  # the type's defaults
    assert body["payload"] == {} and body["progress"] == {"percent": None, "message": ""}
    assert "X-Idempotency-Replay" not in response
    job = Job.objects.get(pk=body["id"])
    assert job.events.get().kind == "created"


@override_settings(JOB_API_QUEUES=["reports"], JOB_API_MAX_PRIORITY=100)
def test_create_with_every_option(operator_client):
    run_at = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    response = operator_client.post(JOBS, {
        "type": "noop", "payload": {"a": [1, 2, {"b": None}]}, "priority": 100,
        "max_attempts": 7, "queue": "reports", "run_at": run_at.isoformat(),
        "timeout_seconds": 9, "idempotency_key": "k-every",
    }, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.priority, job.max_attempts, job.queue, job.timeout_seconds) == (100, 7, "reports", 9)
    assert job.available_at == run_at and job.payload == {"a": [1, 2, {"b": None}]}
    # Stored in the user's own namespace (api/idempotency.py), shown as sent.
    assert job.idempotency_key == f"api:{job_owner_pk(operator_client)}:k-every"
    assert response.json()["idempotency_key"] == "k-every"


def test_delay_seconds_makes_the_job_available_later(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "delay_seconds": 120}, format="json")
    job = Job.objects.get(pk=response.json()["id"])
    assert job.available_at > timezone.now() + timedelta(seconds=100)
    assert not Job.objects.runnable().filter(pk=job.pk).exists()


@pytest.mark.parametrize(("body", "bad_fields"), [
    ({"type": "no-such-type"}, {"type"}),
    ({}, {"type"}),
    ({"type": "noop", "payload": [1, 2]}, {"payload"}),
    ({"type": "noop", "payload": "text"}, {"payload"}),
    ({"type": "noop", "priority": 101}, {"priority"}),
    ({"type": "noop", "priority": -101, "max_attempts": 0}, {"priority", "max_attempts"}),
    ({"type": "noop", "timeout_seconds": 0, "delay_seconds": -1}, {"timeout_seconds", "delay_seconds"}),
    ({"type": "noop", "priority": 1.5}, {"priority"}),
    ({"type": "noop", "queue": "has space"}, {"queue"}),
    ({"type": "noop", "idempotency_key": "x" * 256}, {"idempotency_key"}),
    ({"type": "noop", "run_at": "2030-01-01T00:00:00Z", "delay_seconds": 5}, {"delay_seconds"}),
    ({"type": "x" * 101}, {"type"}),
])
def test_bad_fields_get_a_400_naming_each_one(operator_client, body, bad_fields):
    response = operator_client.post(JOBS, body, format="json")
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid"
    assert set(error["errors"]) == bad_fields
    for field in bad_fields:
        assert field in error["detail"]
    assert not Job.objects.exists()


def test_unknown_type_error_lists_the_types_the_api_may_create(operator_client):
    error = operator_client.post(JOBS, {"type": "nope"}, format="json").json()
    assert "unknown job type 'nope'" in error["errors"]["type"][0]
    assert "email_send" in error["errors"]["type"][0]


@pytest.mark.parametrize("field", ["status", "attempts", "locked_by", "lease_token",
                                   "lease_expires_at", "result", "finished_at", "id"])
def test_mass_assignment_of_queue_maintained_fields_is_refused(operator_client, field):
    response = operator_client.post(JOBS, {"type": "noop", field: "succeeded"}, format="json")
    assert response.status_code == 400
    assert "read-only" in response.json()["errors"][field][0]
    assert not Job.objects.exists()


def test_unknown_fields_are_refused_by_name(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "colour": "red", "prio": 1}, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"colour", "prio"}


@override_settings(JOB_MAX_PAYLOAD_BYTES=1000)
def test_payload_over_the_limit_is_413(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "payload": {"x": "y" * 1000}}, format="json")
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert "1000" in response.json()["detail"]
    ok = operator_client.post(JOBS, {"type": "noop", "payload": {"x": "y" * 900}}, format="json")
    assert ok.status_code == 201



def test_job_types_lists_the_registry_with_defaults(operator_client):
    types = {t["name"]: t for t in operator_client.get("/api/v1/job-types/").json()}
    assert {"noop", "sleep", "email_send"} <= set(types)
    assert types["email_send"]["max_attempts"] == 5
    assert types["email_send"]["payload_example"] == {"to": "ada@example.com", "subject": "Welcome"}
    assert types["noop"]["queue"] == "default"
