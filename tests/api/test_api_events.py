"""Event feeds: cursor polling, oldest first, global and per job."""
import pytest

from django_pg_jobqueue import keyset, services
from django_pg_jobqueue.api.authentication import forget_all
from django_pg_jobqueue.models import JobEvent
from tests.api.test_api_merged_list import refused_shard  # noqa: F401 (a fixture)
from tests.utils import wait_for

# The global feed only returns events of committed transactions older than every one still
# in flight (django_pg_jobqueue/feed.py), so these tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)

FEED = "/api/v1/events/"


def poll(client, path, query, expect):
    """The page once it shows `expect` events, or these ids (a list: the start of the feed,
    the newest events): other transactions on the server may hold the feed's horizon back
    for a moment."""
    def shown(body) -> bool:
        ids = [e["id"] for e in body["results"]]
        return ids == expect if isinstance(expect, list) else len(ids) >= expect

    return wait_for(lambda: (body := client.get(path, query).json()) and shown(body) and body, 10)


def test_global_feed_polls_with_a_cursor_oldest_first(operator_client):
    jobs = [services.enqueue("noop", {"i": i}) for i in range(5)]
    everything = list(JobEvent.objects.order_by("id").values_list("id", flat=True))
    first = poll(operator_client, FEED, {"after": 0, "limit": 3}, 3)
    assert [e["id"] for e in first["results"]] == everything[:3]
    assert first["has_more"] is True and first["next_after"] == everything[2]
    second = poll(operator_client, FEED, {"after": first["next_after"], "limit": 3}, 2)
    assert [e["id"] for e in second["results"]] == everything[3:5]
    assert second["has_more"] is False
    idle = operator_client.get(FEED, {"after": second["next_after"]}).json()
    assert idle == {"results": [], "has_more": False, "next_after": second["next_after"],
                    "next_cursor": second["next_cursor"]}
    services.cancel(jobs[0].id)
    new = poll(operator_client, FEED, {"after": second["next_after"]}, 1)["results"]
    assert [(e["job_id"], e["kind"], e["job_type"], e["job_status"]) for e in new] == [
        (jobs[0].id, "cancelled", "noop", "cancelled")]


def test_global_feed_without_a_cursor_starts_at_the_latest(operator_client):
    for i in range(10):
        services.enqueue("noop", {"i": i})
    ids = list(JobEvent.objects.order_by("id").values_list("id", flat=True))
    body = poll(operator_client, FEED, {"limit": 4}, ids[-4:])  # the newest, oldest first
    assert body["next_after"] == ids[-1]


def test_event_rows_have_the_documented_shape(operator_client):
    job = services.enqueue("email_send", {"to": "a@example.com"})
    row = poll(operator_client, FEED, {}, 1)["results"][0]
    assert set(row) == {"id", "job_id", "job_type", "job_status", "kind", "attempt", "worker_id",
                        "message", "data", "created_at", "shard"}
    assert row["shard"] == "default"
    assert row["job_id"] == job.id and row["kind"] == "created" and row["data"]["queue"] == "default"


def test_job_feed_has_only_that_jobs_events(operator_client):
    a = services.enqueue("noop")
    b = services.enqueue("noop")
    services.cancel(a.id)
    body = operator_client.get(f"/api/v1/jobs/{a.id}/events/", {"after": 0}).json()
    assert [e["kind"] for e in body["results"]] == ["created", "cancelled"]
    assert all(e["job_id"] == a.id for e in body["results"])
    later = operator_client.get(f"/api/v1/jobs/{a.id}/events/", {"after": body["next_after"]}).json()
    assert later["results"] == []
    assert operator_client.get(f"/api/v1/jobs/{b.id}/events/").json()["results"][0]["job_id"] == b.id


def test_feeds_run_a_fixed_number_of_queries(operator_client, django_assert_num_queries):
    for i in range(30):
        services.enqueue("noop", {"i": i})
    poll(operator_client, FEED, {"after": 0}, 30)
    # token+user, user perms, group perms, the cursor's tx id, ids in commit order, rows
    # (counted cold: the API remembers tokens and permissions for a few seconds)
    forget_all()
    with django_assert_num_queries(6):
        response = operator_client.get(FEED, {"after": 0})
    assert len(response.json()["results"]) == 30


def test_global_feed_pages_by_its_cursor_from_the_start_on(operator_client):
    for i in range(6):
        services.enqueue("noop", {"i": i})
    ids = list(JobEvent.objects.order_by("id").values_list("id", flat=True))
    start = poll(operator_client, FEED, {"limit": 2}, ids[-2:])
    assert "shards" not in start
    new = [services.enqueue("noop", {"i": i}) for i in range(5)]
    later = list(JobEvent.objects.filter(job__in=new).order_by("id").values_list("id", flat=True))
    first = poll(operator_client, FEED, {"cursor": start["next_cursor"], "limit": 3}, 3)
    assert [e["id"] for e in first["results"]] == later[:3] and first["has_more"] is True
    # The integer cursor and the composite one say the same place in JOB_DATABASE's feed.
    assert first["next_after"] == later[2]
    second = poll(operator_client, FEED, {"cursor": first["next_cursor"], "limit": 3}, 2)
    assert [e["id"] for e in second["results"]] == later[3:]
    assert second["has_more"] is False
    by_after = poll(operator_client, FEED, {"after": first["next_after"], "limit": 3}, 2)
    assert by_after["results"] == second["results"]


@pytest.mark.parametrize("query", [{"after": -1}, {"after": "x"}, {"limit": 0}, {"limit": 501},
                                   {"after": 2**64}, {"cursor": "nope"},
                                   {"cursor": "eyJ2IjoxfQ=="},  # {"v":1}: not the feed's
                                   {"cursor": "eyJ2IjoxLCJmIjoiZXZlbnRzIiwicCI6eyJkZWZhdWx0IjpbMV19fQ=="},
                                   {"after": 1, "cursor": "x"}])
def test_bad_cursor_parameters_are_400(operator_client, query):
    response = operator_client.get(FEED, query)
    assert response.status_code == 400
    errors = set(response.json()["errors"])
    if "cursor" in query:
        assert errors == {"cursor"}
    else:
        assert errors <= {"after", "limit"}


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_shards_a_shard_that_refuses_is_reported_down_and_keeps_its_position(
        operator_client, refused_shard):  # noqa: F811
    jobs = [services.enqueue("noop", {"i": i}) for i in range(3)]
    ids = list(JobEvent.objects.order_by("id").values_list("id", flat=True))
    start = poll(operator_client, FEED, {}, ids)
    assert {e["shard"] for e in start["results"]} == {"default"}
    assert [(s["alias"], s["number"], s["up"]) for s in start["shards"]] == [
        ("default", 0, True), ("shard_c", 2, False)]
    assert start["shards"][1]["error"]
    # Down when the feed started: no position yet (it starts at its latest once back).
    assert set(keyset.decode_feed(start["next_cursor"])) == {"default"}
    # A position it had is kept while it is down; one of a database no longer configured
    # is dropped, not refused.
    positions = {**keyset.decode_feed(start["next_cursor"]), "shard_c": (5, 9),
                 "gone": (1, 1)}
    services.cancel(jobs[0].id)
    body = poll(operator_client, FEED, {"cursor": keyset.encode_feed(positions)}, 1)
    assert [(e["shard"], e["job_id"], e["kind"]) for e in body["results"]] == [
        ("default", jobs[0].id, "cancelled")]
    assert keyset.decode_feed(body["next_cursor"]) == {
        "default": keyset.decode_feed(body["next_cursor"])["default"], "shard_c": (5, 9)}
    assert body["next_after"] == body["results"][-1]["id"]
