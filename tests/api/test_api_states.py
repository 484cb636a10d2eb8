"""?state= and ?status= on the job list, the bulk actions by filter and the metrics' counts:
the states an operator thinks in (available, scheduled, retryable, running, succeeded, failed,
cancelled), several at once, comma-separated; a bad or repeated value is a 400 naming it."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from tests.api.test_api_delete import cancelled, failed, running, succeeded

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def retryable() -> int:
    """Failed once, waiting out its backoff."""
    job = services.enqueue("noop", max_attempts=3)
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    new_status, delay = services.fail(c.id, c.lease_token, worker_id="w-1", error="boom")
    assert new_status == "queued" and delay > 0
    return job.id


@pytest.fixture
def one_of_each():
    return {
        "available": services.enqueue("noop").id,
        "scheduled": services.enqueue("noop", delay_seconds=300).id,
        "retryable": retryable(),
        "running": running(),
        "succeeded": succeeded(),
        "failed": failed(),
        "cancelled": cancelled(),
    }


def listed(client, **params) -> set[int]:
    response = client.get(JOBS, {"page_size": 100, **params})
    assert response.status_code == 200, response.json()
    return {j["id"] for j in response.json()["results"]}


def test_each_state_lists_exactly_its_jobs(operator_client, one_of_each):
    for state, job_id in one_of_each.items():
        assert listed(operator_client, state=state) == {job_id}, state


def test_several_states_at_once_comma_separated(operator_client, one_of_each):
    assert listed(operator_client, state="scheduled,retryable") == {
        one_of_each["scheduled"], one_of_each["retryable"]}
    body = operator_client.get(JOBS, {"state": "scheduled,retryable"}).json()
    assert body["count"] == 2


def test_several_statuses_at_once_and_state_with_status_must_both_match(operator_client,
                                                                         one_of_each):
    assert listed(operator_client, status="failed,cancelled") == {
        one_of_each["failed"], one_of_each["cancelled"]}
    assert listed(operator_client, status="queued", state="retryable,running") == {
        one_of_each["retryable"]}


@pytest.mark.parametrize("param", ["state", "status"])
def test_an_unknown_value_is_a_400_naming_it(operator_client, param):
    response = operator_client.get(JOBS, {param: "running,bogus"})
    assert response.status_code == 400
    body = response.json()
    assert param in body["errors"], body
    assert "bogus" in str(body["errors"][param])
    assert "cancelled" in str(body["errors"][param])  # it says what is allowed


@pytest.mark.parametrize("param", ["state", "status"])
def test_a_repeated_parameter_is_a_400_not_the_last_value_winning(operator_client, param):
    response = operator_client.get(f"{JOBS}?{param}=failed&{param}=cancelled")
    assert response.status_code == 400
    assert "comma-separated" in str(response.json()["errors"][param])


def test_a_bulk_action_by_state_acts_on_those_jobs_only(make_user, client_for, one_of_each):
    client = client_for(make_user("ops", perms=["view_job", "change_job"]))
    response = client.post(f"{JOBS}actions/", {"action": "cancel",
                                               "filter": {"state": "scheduled,retryable"}},
                           format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["done"] == 2
    assert set(Job.objects.filter(status="cancelled").values_list("id", flat=True)) == {
        one_of_each["scheduled"], one_of_each["retryable"], one_of_each["cancelled"]}
    assert Job.objects.get(pk=one_of_each["available"]).status == "queued"

    bad = client.post(f"{JOBS}actions/", {"action": "cancel", "filter": {"state": "later"}},
                      format="json")
    assert bad.status_code == 400 and "later" in str(bad.json()), bad.json()


def test_the_metrics_count_every_state(operator_client, one_of_each):
    body = operator_client.get("/api/v1/metrics/").json()
    assert body["counts_by_state"] == {state: 1 for state in one_of_each}
