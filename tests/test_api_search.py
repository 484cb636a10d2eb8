"""?search= on the job list: an id, an exact idempotency key, or text in the payload or the
last error, among the newest SEARCH_SCAN_LIMIT jobs only (a bounded cost, said in the body)."""
import json

import pytest
from django.db import connection

from django_pg_jobqueue import selectors, services

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def search(client, value, **params):
    response = client.get(JOBS, {"search": value, "page_size": 100, **params})
    assert response.status_code == 200, response.json()
    return response.json()


def ids(body):
    return {j["id"] for j in body["results"]}


def failed_with(error: str) -> int:
    job = services.enqueue("noop", max_attempts=1)
    claimed = services.claim(worker_ids=["s-1-0"], job_ids=[job.id])[0]
    services.fail(job.id, claimed.lease_token, worker_id="s-1-0", error=error)
    return job.id


def test_text_in_the_payload_is_found_case_insensitively(operator_client):
    hit = services.enqueue("noop", {"to": "Ada.Lovelace@example.com"}).id
    services.enqueue("noop", {"to": "grace@example.com"})
    body = search(operator_client, "ada.lovelace")
    assert ids(body) == {hit}
    assert body["search"] == {"jobs_searched": 2, "limit": selectors.SEARCH_SCAN_LIMIT,
                              "limited": False}


def test_text_in_the_last_error_is_found(operator_client):
    hit = failed_with("SMTPServerDisconnected: Connection unexpectedly closed")
    failed_with("ValueError: bad address")
    assert ids(search(operator_client, "unexpectedly closed")) == {hit}


def test_like_wildcards_in_the_search_are_literal(operator_client):
    literal = services.enqueue("noop", {"note": "100%_done"}).id
    services.enqueue("noop", {"note": "100 and done"})
    assert ids(search(operator_client, "100%_")) == {literal}
    assert ids(search(operator_client, "a\\b")) == set()


def test_an_id_or_key_still_matches_and_combines_with_other_filters(operator_client):
    by_key = services.enqueue("noop", idempotency_key="order-7781").id
    in_payload = services.enqueue("sleep", {"seconds": 0, "ref": "order-7781"}).id
    assert ids(search(operator_client, "order-7781")) == {by_key, in_payload}
    assert ids(search(operator_client, "order-7781", type="sleep")) == {in_payload}
    assert ids(search(operator_client, str(by_key))) >= {by_key}


def test_a_short_value_is_not_a_text_search(operator_client):
    services.enqueue("noop", {"x": "ab"})
    body = search(operator_client, "ab")
    assert body["results"] == [] and "search" not in body


def test_the_text_search_looks_at_the_newest_jobs_only_and_says_so(operator_client, monkeypatch):
    monkeypatch.setattr(selectors, "SEARCH_SCAN_LIMIT", 5)
    all_ids = [services.enqueue("noop", {"tag": "needle"}).id for _ in range(8)]
    body = search(operator_client, "needle")
    assert ids(body) == set(all_ids[-5:])  # the 3 oldest were not looked at
    assert body["count"] == 5
    assert body["search"] == {"jobs_searched": 5, "limit": 5, "limited": True}
    # An id still finds an old job: only the text part is bounded.
    assert all_ids[0] in ids(search(operator_client, str(all_ids[0])))


def test_no_search_no_search_key(operator_client):
    services.enqueue("noop")
    assert "search" not in operator_client.get(JOBS).json()


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def test_the_pattern_is_matched_against_at_most_the_limit_of_rows(monkeypatch):
    """The cost bound, read from the plan: the ILIKE filter sees at most `limit` rows however
    many jobs there are (here 400 jobs, limit 50), and the jobs are read through a Limit."""
    services.enqueue_many([{"type": "noop", "payload": {"n": i, "tag": "needle"}}
                           for i in range(400)])
    match, scope = selectors.text_search("needle", limit=50)
    assert scope.limited and scope.jobs_searched == 50
    qs = selectors.job_list().filter(match)
    query, params = qs.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("ANALYZE jobs")
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params)
        (plan,) = cur.fetchone()
    plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]
    nodes = list(_nodes(plan["Plan"]))
    filtered = [n for n in nodes if "~~*" in n.get("Filter", "")]
    assert filtered, json.dumps(plan, indent=1)[:3000]
    for node in filtered:
        seen = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        assert seen <= 50, json.dumps(node, indent=1)[:2000]
    assert any(n["Node Type"] == "Limit" and n["Actual Rows"] <= 50 for n in nodes)
    assert qs.count() == 50


def test_text_search_refuses_a_short_value_or_a_bad_limit():
    with pytest.raises(ValueError, match="value"):
        selectors.text_search("  a ")
    with pytest.raises(ValueError, match="limit"):
        selectors.text_search("needle", limit=0)


def test_the_schedule_filter_lists_the_jobs_a_schedule_enqueued(operator_client):
    mine = services.enqueue("noop", idempotency_key="periodic:nightly:2026-01-01T03:00:00+00:00").id
    services.enqueue("noop", idempotency_key="periodic:nightly-2:2026-01-01T03:00:00+00:00")
    services.enqueue("noop", idempotency_key="nightly")
    body = operator_client.get(JOBS, {"schedule": "nightly", "type": "noop"}).json()
    assert ids(body) == {mine}
    bulk = operator_client.get(JOBS, {"schedule": "nightly%"}).json()
    assert bulk["results"] == []  # the name is literal, not a pattern
