"""?search= on the job list: an id, an exact idempotency key, or text in the payload or the
last error of any job, however old (trigram indexes serve it; tests/contracts/test_search_plan.py reads
the plan); a value too short for a text search is a 400 unless it is a job id."""

import pytest

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


@pytest.mark.parametrize("value", ["ab", " x ", "é1"])
def test_a_value_too_short_for_a_text_search_is_a_400_saying_so(operator_client, value):
    services.enqueue("noop", {"x": "ab"})
    response = operator_client.get(JOBS, {"search": value})
    assert response.status_code == 400
    [message] = response.json()["errors"]["search"]
    assert "at least 3 characters" in message


def test_a_short_job_id_is_a_search_not_a_400(operator_client):
    # (an id of any length finds its job: test_an_id_or_key_still_matches...)
    assert search(operator_client, "7")["count"] in (0, 1)
    assert search(operator_client, "42")["count"] in (0, 1)


def test_a_failed_job_older_than_the_newest_ten_thousand_is_found(operator_client):
    """The search reads every job: the failed one was enqueued before 10,000 newer jobs."""
    old = failed_with("CardError: card declined by the issuer")
    services.enqueue_many([{"type": "noop", "payload": {"n": i}} for i in range(10_000)])
    body = search(operator_client, "card declined", status="failed")
    assert ids(body) == {old} and body["count"] == 1
    body = search(operator_client, "CARD DECLINED")
    assert ids(body) == {old}


def test_no_search_no_search_key(operator_client):
    services.enqueue("noop")
    assert "search" not in operator_client.get(JOBS).json()


def test_text_search_refuses_a_short_value():
    with pytest.raises(ValueError, match="at least 3 characters"):
        selectors.text_search("  ab ")


def test_the_schedule_filter_lists_the_jobs_a_schedule_enqueued(operator_client):
    mine = services.enqueue("noop", idempotency_key="periodic:nightly:2026-01-01T03:00:00+00:00").id
    services.enqueue("noop", idempotency_key="periodic:nightly-2:2026-01-01T03:00:00+00:00")
    services.enqueue("noop", idempotency_key="nightly")
    body = operator_client.get(JOBS, {"schedule": "nightly", "type": "noop"}).json()
    assert ids(body) == {mine}
    bulk = operator_client.get(JOBS, {"schedule": "nightly%"}).json()
    assert bulk["results"] == []  # the name is literal, not a pattern


def test_the_job_holding_a_unique_key_is_found_by_the_key(operator_client):
    held = services.enqueue("noop", {"n": 1}, unique={"key": "invoice-93"})
    assert services.enqueue("noop", {"n": 2}, unique={"key": "invoice-93"}).id == held.id
    detail = operator_client.get(f"{JOBS}{held.id}/").json()
    assert detail["unique_key"] == "noop:key:invoice-93"
    assert ids(search(operator_client, "noop:key:invoice-93")) == {held.id}
