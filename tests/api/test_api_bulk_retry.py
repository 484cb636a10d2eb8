"""POST /api/v1/jobs/retry/: the dead letter's bulk retry, by filter, all, or selected ids."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db

RETRY = "/api/v1/jobs/retry/"


def failed(type="noop", *, error="boom", finished_ago=timedelta(minutes=1)) -> int:
    """A job that really failed (claimed, then failed for good), finished `finished_ago` ago."""
    job = services.enqueue(type, {}, max_attempts=1)
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.fail(c.id, c.lease_token, worker_id="w-1", error=error, permanent=True)
    Job.objects.filter(pk=job.id).update(finished_at=timezone.now() - finished_ago)
    return job.id


def cancelled() -> int:
    job = services.enqueue("noop")
    services.cancel(job.id)
    return job.id


def status(job_id) -> str:
    return Job.objects.get(pk=job_id).status


@pytest.mark.parametrize("body", [{}, {"all": False}, {"error_contains": ""},
                                  {"error_contains": "   "}, {"type": None}])
def test_a_body_that_names_no_jobs_is_refused_and_retries_nothing(operator_client, body):
    job_id = failed()
    response = operator_client.post(RETRY, body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    if not body or body == {"all": False}:
        assert '{"all": true}' in response.json()["detail"]  # it says how to mean it
    assert status(job_id) == "failed"


def test_filters_retry_only_the_failed_jobs_matching_all_of_them(operator_client, operator):
    match = failed("email_send", error="SMTP timeout after 30 s", finished_ago=timedelta(hours=2))
    other_error = failed("email_send", error="mailbox full", finished_ago=timedelta(hours=2))
    other_type = failed("noop", error="SMTP timeout", finished_ago=timedelta(hours=2))
    too_old = failed("email_send", error="smtp TIMEOUT", finished_ago=timedelta(days=3))
    not_failed = cancelled()
    now = timezone.now()

    response = operator_client.post(RETRY, {
        "type": "email_send", "error_contains": "smtp timeout",
        "finished_after": (now - timedelta(days=1)).isoformat(),
        "finished_before": (now - timedelta(hours=1)).isoformat()}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json() == {"retried": 1, "not_retried": []}
    assert status(match) == "queued"
    assert [status(j) for j in (other_error, other_type, too_old)] == ["failed"] * 3
    assert status(not_failed) == "cancelled"
    event = JobEvent.objects.filter(job_id=match).last()
    assert event.kind == "retried" and event.message.endswith(f"by {operator.username}")


def test_all_true_retries_every_failed_job_and_nothing_else(operator_client):
    ids = [failed(), failed("email_send"), failed(error="other")]
    still_cancelled = cancelled()
    response = operator_client.post(RETRY, {"all": True}, format="json")
    assert response.status_code == 200
    assert response.json() == {"retried": 3, "not_retried": []}
    assert {status(j) for j in ids} == {"queued"}
    assert status(still_cancelled) == "cancelled"
    again = operator_client.post(RETRY, {"all": True}, format="json")
    assert again.json() == {"retried": 0, "not_retried": []}


def test_ids_retry_the_selected_failed_and_cancelled_jobs_and_list_the_others(operator_client):
    a, b = failed(), cancelled()
    queued = services.enqueue("noop").id
    untouched = failed()
    response = operator_client.post(RETRY, {"ids": [a, queued, b, 987654321, a]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {"retried": 2, "not_retried": [queued, 987654321]}
    assert status(a) == status(b) == "queued"
    assert status(untouched) == "failed"
    assert JobEvent.objects.filter(job_id=a, kind="retried").count() == 1  # the duplicate is one


@pytest.mark.parametrize(("body", "field"), [
    ({"ids": [1], "all": True}, "ids"),
    ({"ids": [1], "type": "noop"}, "ids"),
    ({"all": True, "type": "noop"}, "all"),
    ({"ids": []}, "ids"),
    ({"ids": [0]}, "ids"),
    ({"ids": ["x"]}, "ids"),
    ({"ids": list(range(1, 1002))}, "ids"),
    ({"ids": 5}, "ids"),
    ({"type": "x" * 101}, "type"),
    ({"finished_after": "yesterday"}, "finished_after"),
    ({"finished_after": "2026-01-02T00:00:00Z", "finished_before": "2026-01-01T00:00:00Z"},
     "finished_before"),
    ({"finished_after": "2026-01-01T00:00:00Z", "finished_before": "2026-01-01T00:00:00Z"},
     "finished_before"),
    ({"status": "failed"}, "status"),
    ({"types": ["noop"]}, "types"),
])
def test_bad_bodies_are_a_400_naming_the_field(operator_client, body, field):
    job_id = failed()
    response = operator_client.post(RETRY, body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"], response.json()
    assert status(job_id) == "failed"


def test_a_time_range_with_offsets_is_compared_in_utc(operator_client):
    job_id = failed(finished_ago=timedelta(minutes=30))
    since = (timezone.now() - timedelta(hours=1)).astimezone(
        timezone.get_fixed_timezone(-14 * 60)).isoformat()
    response = operator_client.post(RETRY, {"finished_after": since}, format="json")
    assert response.json()["retried"] == 1 and status(job_id) == "queued"


def test_a_viewer_may_not_retry(viewer, client_for):
    job_id = failed()
    response = client_for(viewer).post(RETRY, {"all": True}, format="json")
    assert response.status_code == 403 and status(job_id) == "failed"


def test_get_on_the_bulk_route_is_not_a_job_lookup(operator_client):
    assert operator_client.get(RETRY).status_code == 405
