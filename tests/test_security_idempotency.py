"""Idempotency keys sent to the API belong to the user who sent them.

Another user's key is, for you, a key you never used: your request creates a job of your own,
and nothing about theirs (its id, payload, result, even that it exists) comes back. Python
callers of enqueue() keep one global key namespace, apart from the API's."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
BODY = {"type": "noop", "payload": {"to": "ada@example.com"}, "idempotency_key": "order-7"}


@pytest.fixture
def alice(make_user, client_for):
    return client_for(make_user("alice", perms=["add_job", "view_job", "change_job"]))


@pytest.fixture
def mallory(make_user, client_for):
    # May create jobs, nothing else: reads are 403 for her.
    return client_for(make_user("mallory", perms=["add_job"]))


def _finish(job_id: int, result: dict) -> None:
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job_id])
    services.complete(claimed.id, claimed.lease_token, worker_id="w", result=result)


def test_another_users_key_with_the_same_body_is_a_new_job_of_their_own(alice, mallory):
    first = alice.post(JOBS, BODY, format="json")
    assert first.status_code == 201
    _finish(first.json()["id"], {"secret": "alice's result"})

    other = mallory.post(JOBS, BODY, format="json")

    assert other.status_code == 201, other.json()  # not a 200 replay of alice's job
    assert "X-Idempotency-Replay" not in other
    body = other.json()
    assert body["id"] != first.json()["id"]
    assert body["result"] is None and body["status"] == "queued"
    assert body["idempotency_key"] == "order-7"  # the key as she sent it
    assert Job.objects.count() == 2


def test_another_users_key_with_a_different_body_is_no_conflict_and_names_no_job(alice, mallory):
    first = alice.post(JOBS, BODY, format="json").json()
    other = mallory.post(JOBS, {**BODY, "payload": {"to": "eve@example.com"}}, format="json")
    assert other.status_code == 201, other.json()  # not a 409 naming alice's job
    assert other.json()["id"] != first["id"] and "job_id" not in other.json()


def test_the_same_user_still_gets_replays_and_conflicts(alice):
    first = alice.post(JOBS, BODY, format="json")
    replay = alice.post(JOBS, BODY, format="json")
    assert replay.status_code == 200 and replay["X-Idempotency-Replay"] == "true"
    assert replay.json()["id"] == first.json()["id"]
    assert replay.json()["idempotency_key"] == "order-7"
    conflict = alice.post(JOBS, {**BODY, "priority": 5}, format="json")
    assert conflict.status_code == 409
    assert conflict.json()["job_id"] == first.json()["id"]
    assert "'order-7'" in conflict.json()["detail"]  # her key, as she sent it


def test_the_header_form_is_scoped_the_same_way(alice, mallory):
    body = {"type": "noop"}
    a = alice.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="nightly")
    m = mallory.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="nightly")
    assert (a.status_code, m.status_code) == (201, 201)
    assert a.json()["id"] != m.json()["id"]
    again = mallory.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="nightly")
    assert again.status_code == 200 and again.json()["id"] == m.json()["id"]


def test_bulk_keys_are_scoped_per_user_too(alice, mallory):
    items = {"jobs": [{"type": "noop", "idempotency_key": "a"}, {"type": "noop", "idempotency_key": "b"}]}
    a = alice.post(f"{JOBS}bulk/", items, format="json")
    m = mallory.post(f"{JOBS}bulk/", items, format="json")
    assert (a.status_code, m.status_code) == (201, 201)
    assert not {j["id"] for j in a.json()["jobs"]} & {j["id"] for j in m.json()["jobs"]}
    assert [j["idempotency_key"] for j in m.json()["jobs"]] == ["a", "b"]
    again = mallory.post(f"{JOBS}bulk/", items, format="json")
    assert [j["id"] for j in again.json()["jobs"]] == [j["id"] for j in m.json()["jobs"]]
    assert Job.objects.count() == 4


def test_python_callers_keep_a_global_namespace_apart_from_the_apis(alice):
    from_python = services.enqueue("noop", idempotency_key="order-7")
    assert services.enqueue("noop", idempotency_key="order-7").id == from_python.id  # global
    from_api = alice.post(JOBS, {"type": "noop", "idempotency_key": "order-7"}, format="json")
    assert from_api.status_code == 201 and from_api.json()["id"] != from_python.id


def test_the_longest_key_the_api_accepts_is_scoped_and_replayed(alice, mallory):
    key = "k" * 255
    a = alice.post(JOBS, {"type": "noop", "idempotency_key": key}, format="json")
    assert a.status_code == 201, a.json()
    again = alice.post(JOBS, {"type": "noop", "idempotency_key": key}, format="json")
    assert again.status_code == 200 and again.json()["id"] == a.json()["id"]
    m = mallory.post(JOBS, {"type": "noop", "idempotency_key": key}, format="json")
    assert m.status_code == 201 and m.json()["id"] != a.json()["id"]


def test_search_by_key_finds_the_readers_own_job_and_python_jobs(alice, make_user, client_for):
    mine = alice.post(JOBS, {"type": "noop", "idempotency_key": "report-1"}, format="json").json()
    client_for(make_user("bob", perms=["add_job"])).post(
        JOBS, {"type": "noop", "idempotency_key": "report-1"}, format="json")
    python_job = services.enqueue("noop", idempotency_key="report-2")
    assert [j["id"] for j in alice.get(JOBS, {"search": "report-1"}).json()["results"]] == [mine["id"]]
    assert [j["id"] for j in alice.get(JOBS, {"search": "report-2"}).json()["results"]] == [python_job.id]
