"""POST jobs/actions/ and the dead letter's POST jobs/retry/ by filter over every database
(services/bulk_actions.py apply_to_matching_everywhere, retry_matching_everywhere), in one
process: with JOB_SHARDS empty they answer the same keys as before; with a shard whose server
refuses connections they act on JOB_DATABASE's jobs and say the shard is down.
tests/system/test_merged_console.py runs them on three real databases, the actions bounded so
that one `after` goes on across them."""
import pytest

from django_pg_jobqueue.models import Job
from tests.api.test_api_latency import ran
from tests.api.test_api_merged_list import refused_shard  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db,
              pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")]

ACTIONS = "/api/v1/jobs/actions/"


def test_without_shards_a_bulk_action_by_filter_answers_as_before(operator_client):
    ran(wait=1, run=2, status="failed")
    body = operator_client.post(ACTIONS, {"action": "retry", "filter": {"status": "failed"}},
                                content_type="application/json").json()
    assert body == {"done": 1, "refused": [], "refused_count": 0, "after": None,
                    "remaining": 0}


def test_a_bulk_action_by_filter_skips_a_shard_that_refuses_and_says_so(
        operator_client, refused_shard):  # noqa: F811
    for _ in range(3):
        ran(wait=1, run=2, status="failed")
    response = operator_client.post(ACTIONS, {"action": "retry", "filter": {"status": "failed"}},
                                    content_type="application/json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["done"], body["refused_count"], body["after"], body["remaining"]) == (
        3, 0, None, 0)
    assert [(s["alias"], s["number"], s["up"]) for s in body["shards"]] == [
        ("default", 0, True), ("shard_c", 2, False)]
    assert body["shards"][1]["error"]


RETRY = "/api/v1/jobs/retry/"


def test_without_shards_the_dead_letter_s_retry_by_filter_answers_as_before(operator_client):
    ran(wait=1, run=2, status="failed")
    body = operator_client.post(RETRY, {"type": "noop"}, content_type="application/json").json()
    assert body == {"retried": 1, "not_retried": []}


def test_the_dead_letter_s_retry_by_filter_skips_a_shard_that_refuses_and_says_so(
        operator_client, refused_shard):  # noqa: F811
    failed = [ran(wait=1, run=2, status="failed") for _ in range(3)]
    response = operator_client.post(RETRY, {"all": True}, content_type="application/json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["retried"], body["not_retried"]) == (3, [])
    assert [(s["alias"], s["number"], s["up"]) for s in body["shards"]] == [
        ("default", 0, True), ("shard_c", 2, False)]
    assert set(Job.objects.filter(id__in=failed).values_list("status", flat=True)) == {"queued"}
    # A bad window is refused before any database is written, naming the field.
    response = operator_client.post(RETRY, {"finished_after": "2026-01-02T00:00:00Z",
                                            "finished_before": "2026-01-01T00:00:00Z"},
                                    content_type="application/json")
    assert response.status_code == 400 and set(response.json()["errors"]) == {"finished_before"}


def test_a_bulk_action_s_filter_naming_a_shard_acts_on_that_database_alone(
        operator_client, refused_shard):  # noqa: F811
    failed = [ran(wait=1, run=2, status="failed") for _ in range(2)]
    body = operator_client.post(ACTIONS, {"action": "retry", "filter": {
        "status": "failed", "shard": "default"}}, content_type="application/json").json()
    assert (body["done"], body["remaining"], body["after"]) == (2, 0, None)
    assert [(s["alias"], s["up"]) for s in body["shards"]] == [("default", True)]
    assert set(Job.objects.filter(id__in=failed).values_list("status", flat=True)) == {"queued"}
    # The shard alone (it filters: the other databases are left alone); down, so said.
    body = operator_client.post(ACTIONS, {"action": "cancel", "filter": {"shard": "shard_c"}},
                                content_type="application/json").json()
    assert body["done"] == 0 and [(s["alias"], s["up"]) for s in body["shards"]] == [
        ("shard_c", False)]
    assert Job.objects.filter(status="cancelled").count() == 0


@pytest.mark.parametrize("shards", [False, True])
def test_a_bulk_action_s_filter_naming_no_database_is_a_400_naming_it(
        operator_client, request, shards):
    if shards:
        request.getfixturevalue("refused_shard")
    response = operator_client.post(ACTIONS, {"action": "cancel", "filter": {
        "status": "queued", "shard": "shard_b"}}, content_type="application/json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert list(errors) == ["filter"] and list(errors["filter"]) == ["shard"], errors
    message = errors["filter"]["shard"][0]
    assert message.startswith("must be one of default") and "'shard_b'" in message


def test_without_shards_a_filter_of_only_job_database_s_name_filters_nothing(operator_client):
    ran(wait=1, run=2, status="failed")
    for shard in ("default", ""):  # a blank one is dropped, as any blank filter
        response = operator_client.post(ACTIONS, {"action": "cancel", "filter": {"shard": shard}},
                                        content_type="application/json")
        assert response.status_code == 400 and list(response.json()["errors"]) == ["filter"]
    body = operator_client.post(ACTIONS, {"action": "retry", "filter": {
        "status": "failed", "shard": "default"}}, content_type="application/json").json()
    assert body == {"done": 1, "refused": [], "refused_count": 0, "after": None,
                    "remaining": 0}
