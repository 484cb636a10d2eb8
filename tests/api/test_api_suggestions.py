"""GET jobs/suggestions/: the distinct queues, types and concurrency keys of the jobs kept
that start with a prefix, bounded; an API user's concurrency keys stay theirs."""

import pytest
from django.db import connection

from django_pg_jobqueue import selectors, services

pytestmark = pytest.mark.django_db

URL = "/api/v1/jobs/suggestions/"


def suggested(client, field, prefix="", **params):
    response = client.get(URL, {"field": field, "prefix": prefix, **params})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["field"] == field and body["prefix"] == prefix
    return body["values"]


def test_queues_and_types_are_distinct_in_order_and_start_with_the_prefix(operator_client):
    for queue in ("emails", "emails", "exports", "billing", "emails-eu"):
        services.enqueue("noop", queue=queue)
    services.enqueue("sleep", {"seconds": 0})
    assert suggested(operator_client, "queue", "em") == ["emails", "emails-eu"]
    assert suggested(operator_client, "queue") == [
        "billing", "default", "emails", "emails-eu", "exports"]
    assert suggested(operator_client, "type", "s") == ["sleep"]
    assert suggested(operator_client, "queue", "zz") == []


def test_limit_bounds_the_answer(operator_client):
    for n in range(5):
        services.enqueue("noop", queue=f"q{n}")
    assert suggested(operator_client, "queue", "q", limit=2) == ["q0", "q1"]


def test_concurrency_keys_are_pythons_and_the_readers_own_never_another_users(
        operator_client, operator):
    services.enqueue("noop", concurrency_key="customer:1", concurrency_key_limit=1)
    services.enqueue("noop", concurrency_key="customer:2", concurrency_key_limit=1)
    services.enqueue("noop", concurrency_key="customer:2", concurrency_key_limit=1)
    services.enqueue("noop", concurrency_key=f"api:{operator.pk}:customer:mine",
                     concurrency_key_limit=1)
    services.enqueue("noop", concurrency_key=f"api:{operator.pk + 1000}:customer:theirs",
                     concurrency_key_limit=1)
    services.enqueue("noop")
    assert suggested(operator_client, "concurrency_key", "cust") == [
        "customer:1", "customer:2", "customer:mine"]
    assert suggested(operator_client, "concurrency_key") == [
        "customer:1", "customer:2", "customer:mine"]
    assert suggested(operator_client, "concurrency_key", "api:") == []


def test_many_api_keys_do_not_crowd_out_pythons(operator_client):
    for n in range(30):
        services.enqueue("noop", concurrency_key=f"api:{n + 5000}:k", concurrency_key_limit=1)
    services.enqueue("noop", concurrency_key="b-key", concurrency_key_limit=1)
    assert suggested(operator_client, "concurrency_key", "", limit=1) == ["b-key"]


def test_the_walk_probes_the_index_a_bounded_number_of_times(operator_client):
    for n in range(300):
        services.enqueue("noop", queue=f"queue-{n:03d}")
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + selectors.sql.DISTINCT_VALUES["queue"],
                    {"prefix": "queue-1", "limit": 3, "steps": 30})
        (plan,) = cur.fetchone()
    text = str(plan)
    assert "jobs_queue_status_idx" in text
    assert "Seq Scan" not in text
    assert suggested(operator_client, "queue", "queue-1", limit=3) == [
        "queue-100", "queue-101", "queue-102"]


@pytest.mark.parametrize(("params", "field"), [
    ({"field": "payload"}, "field"),
    ({}, "field"),
    ({"field": "queue", "limit": 0}, "limit"),
    ({"field": "queue", "limit": 51}, "limit"),
    ({"field": "queue", "limit": "x"}, "limit"),
    ({"field": "queue", "prefix": "a\x00b"}, "prefix"),
    ({"field": "queue", "prefix": "a" * 201}, "prefix"),
    ({"field": "queue", "extra": "1"}, "extra"),
])
def test_a_bad_parameter_is_a_400_naming_it(operator_client, params, field):
    response = operator_client.get(URL, params)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"], response.json()


def test_it_needs_view_job(client_for, make_user):
    assert client_for(make_user("nobody")).get(URL, {"field": "queue"}).status_code == 403
    assert client_for(None).get(URL, {"field": "queue"}).status_code in (401, 403)


def test_a_queue_named_like_an_api_key_is_suggested_as_it_is(operator_client):
    services.enqueue("noop", queue="api:1:x")
    assert suggested(operator_client, "queue", "api") == ["api:1:x"]
