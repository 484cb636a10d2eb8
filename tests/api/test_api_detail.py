"""GET /api/v1/jobs/{id}/: every field and the latest events, in a fixed number of
queries; an unknown or malformed id is a 404."""

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.api.authentication import forget_all
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def test_detail_has_every_model_field_and_the_latest_50_events(operator_client):
    job = services.enqueue("sleep", {"seconds": 1})
    claimed = services.claim(worker_ids=["test-1-0"])[0]
    for n in range(60):
        services.log_message(job.id, claimed.lease_token, worker_id="test-1-0", message=f"line {n}")
    body = operator_client.get(f"{JOBS}{job.id}/").json()
    model_fields = {f.name for f in Job._meta.fields}
    assert model_fields <= set(body)
    assert body["progress"] == {"percent": None, "message": ""}
    events = body["events"]
    all_ids = list(JobEvent.objects.filter(job=job).order_by("id").values_list("id", flat=True))
    assert [e["id"] for e in events] == all_ids[-50:]
    assert events[-1]["job_type"] == "sleep" and events[-1]["job_status"] == "running"
    assert events[-1]["message"] == "line 59" and events[-1]["kind"] == "log"
    assert body["locked_by"] == "test-1-0" and body["lease_token"] == str(claimed.lease_token)


def test_detail_runs_a_fixed_number_of_queries(operator_client, django_assert_num_queries):
    job = services.enqueue("noop")
    claimed = services.claim(worker_ids=["test-1-0"])[0]
    for n in range(20):
        services.log_message(job.id, claimed.lease_token, worker_id="test-1-0", message=str(n))
    forget_all()  # counted cold, as above
    # token+user, user perms, group perms, job, events, and the running job's lease owner's
    # process (alive or lost): a job with no dependencies and no concurrency key pays no
    # query for them
    with django_assert_num_queries(6):
        response = operator_client.get(f"{JOBS}{job.id}/")
    assert len(response.json()["events"]) == 21  # created and the logs: the claim writes none


@pytest.mark.parametrize("job_id", ["0", "abc", "99999999999999999999999", "-1", "12345678"])
def test_unknown_job_is_404(operator_client, job_id):
    for response in (operator_client.get(f"{JOBS}{job_id}/"),
                     operator_client.post(f"{JOBS}{job_id}/cancel/"),
                     operator_client.post(f"{JOBS}{job_id}/retry/"),
                     operator_client.get(f"{JOBS}{job_id}/events/")):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_a_queued_jobs_detail_reads_no_rate_limits_when_none_is_set(operator_client,
                                                                    django_assert_num_queries):
    job = services.enqueue("noop")
    forget_all()
    # token+user, user perms, group perms, the job (with whether a rate limit is set), events
    with django_assert_num_queries(5):
        body = operator_client.get(f"{JOBS}{job.id}/").json()
    assert body["rate_limit_wait"] == ""


def test_a_queued_jobs_detail_says_its_rate_limit_is_full(operator_client):
    services.set_rate_limit(type="noop", max_starts=1, period_seconds=30)
    services.enqueue("noop")
    assert len(services.claim(worker_ids=["test-1-0"])) == 1  # its start fills the window
    waiting = services.enqueue("noop")
    body = operator_client.get(f"{JOBS}{waiting.id}/").json()
    assert body["rate_limit_wait"].startswith(
        "rate limit of type noop: 1 of 1 started in the last 30 s; room for it in ")
