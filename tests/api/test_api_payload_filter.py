"""?payload=path:value on the job list: the jobs whose payload contains that value (JSONB
containment, served by job_search_text_payload_idx: tests/contracts/test_search_plan.py reads
the plan); a term the filter cannot read is a 400 naming `payload`, never a 500."""

import pytest

from django_pg_jobqueue import services

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def listed(client, term, **params):
    response = client.get(JOBS, {"payload": term, "page_size": 100, **params})
    assert response.status_code == 200, response.json()
    return {j["id"] for j in response.json()["results"]}


def test_a_number_matches_the_number_and_not_the_string(operator_client):
    number = services.enqueue("noop", {"customer_id": 42, "to": "a@example.com"}).id
    string = services.enqueue("noop", {"customer_id": "42"}).id
    services.enqueue("noop", {"customer_id": 43})
    services.enqueue("noop")
    assert listed(operator_client, "customer_id:42") == {number}
    assert listed(operator_client, 'customer_id:"42"') == {string}


def test_a_value_that_is_not_json_is_matched_as_text(operator_client):
    lyon = services.enqueue("noop", {"city": "Lyon"}).id
    services.enqueue("noop", {"city": "Lyons"})
    assert listed(operator_client, "city:Lyon") == {lyon}
    assert listed(operator_client, " city : Lyon ") == {lyon}


def test_a_dotted_path_reaches_into_nested_objects(operator_client):
    nested = services.enqueue("noop", {"customer": {"address": {"city": "Oslo"}, "id": 7}}).id
    services.enqueue("noop", {"city": "Oslo"})
    assert listed(operator_client, "customer.address.city:Oslo") == {nested}
    assert listed(operator_client, "customer.id:7") == {nested}


def test_booleans_null_and_array_members_match_by_containment(operator_client):
    tagged = services.enqueue("noop", {"tags": ["vip", "eu"], "urgent": True, "note": None}).id
    services.enqueue("noop", {"tags": ["eu"], "urgent": False})
    assert listed(operator_client, 'tags:["vip"]') == {tagged}
    assert listed(operator_client, "urgent:true") == {tagged}
    assert listed(operator_client, "note:null") == {tagged}


def test_it_combines_with_the_other_filters(operator_client):
    noop = services.enqueue("noop", {"customer_id": 42}).id
    sleep = services.enqueue("sleep", {"customer_id": 42, "seconds": 0}).id
    assert listed(operator_client, "customer_id:42") == {noop, sleep}
    assert listed(operator_client, "customer_id:42", type="sleep") == {sleep}


def test_a_debounced_jobs_replaced_payload_is_the_one_matched(operator_client):
    first = services.enqueue("noop", {"customer_id": 1},
                             debounce={"key": "k", "period_seconds": 60})
    again = services.enqueue("noop", {"customer_id": 2},
                             debounce={"key": "k", "period_seconds": 60})
    assert again.id == first.id
    assert listed(operator_client, "customer_id:2") == {first.id}
    assert listed(operator_client, "customer_id:1") == set()


@pytest.mark.parametrize(("term", "says"), [
    ("customer_id", "must be path:value"),
    ("customer_id:", "no value after the colon"),
    (":42", "empty key"),
    ("a..b:1", "empty key"),
    ('note:"\\u0000"', "NUL"),
    ('note:"\\ud800"', "lone surrogate"),
    ("n:1e400", "JSON cannot hold"),
    ("n:NaN", "JSON cannot hold"),
    ("x:" + "[" * 70 + "]" * 70, "nests deeper"),
    ("x:" + "a" * 600, "at most 500"),
])
def test_a_term_it_cannot_read_is_a_400_naming_payload(operator_client, term, says):
    response = operator_client.get(JOBS, {"payload": term})
    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body["errors"]) == ["payload"], body
    assert says in " ".join(body["errors"]["payload"]), body


def test_an_empty_payload_filter_filters_nothing(operator_client):
    job = services.enqueue("noop").id
    assert job in listed(operator_client, "  ")


def test_a_bulk_action_by_filter_takes_the_payload_filter(operator_client):
    hit = services.enqueue("noop", {"customer_id": 42}).id
    other = services.enqueue("noop", {"customer_id": 43}).id
    response = operator_client.post("/api/v1/jobs/actions/", {
        "action": "cancel", "filter": {"payload": "customer_id:42"}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["done"] == 1
    statuses = {j["id"]: j["status"] for j in operator_client.get(JOBS).json()["results"]}
    assert statuses == {hit: "cancelled", other: "queued"}
    bad = operator_client.post("/api/v1/jobs/actions/", {
        "action": "cancel", "filter": {"payload": "customer_id"}}, format="json")
    assert bad.status_code == 400
    assert "payload" in bad.json()["errors"]["filter"], bad.json()
