"""Idempotency keys sent to the API: the same key and request replays the first job (in the
body or the Idempotency-Key header), a different request under it is a 409, concurrent
requests with one key create exactly one job, and keys belong to the user who sent them.

Another user's key is, for you, a key you never used: your request creates a job of your own,
and nothing about theirs (its id, payload, result, even that it exists) comes back. Python
callers of enqueue() keep one global key namespace, apart from the API's."""
import threading

import pytest
from django.db import close_old_connections, connection

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent

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
    conflict = alice.post(JOBS, {**BODY, "priority": -5}, format="json")
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


# -- one user's key: a replay, a conflict, one job under concurrent requests --------------

def test_same_key_same_request_replays_the_first_job(operator_client):
    body = {"type": "noop", "payload": {"n": 1}, "idempotency_key": "order-7"}
    first = operator_client.post(JOBS, body, format="json")
    second = operator_client.post(JOBS, body, format="json")
    assert first.status_code == 201 and second.status_code == 200
    assert second["X-Idempotency-Replay"] == "true"
    assert second.json()["id"] == first.json()["id"]
    assert Job.objects.count() == 1


def test_same_key_in_the_header_replays(operator_client):
    body = {"type": "noop", "payload": {"n": 1}}
    first = operator_client.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    second = operator_client.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    in_body = operator_client.post(JOBS, {**body, "idempotency_key": "hdr-1"}, format="json")
    assert (first.status_code, second.status_code, in_body.status_code) == (201, 200, 200)
    assert first.json()["idempotency_key"] == "hdr-1"
    assert Job.objects.count() == 1


def test_same_key_different_request_is_409(operator_client):
    operator_client.post(JOBS, {"type": "noop", "payload": {"n": 1}}, format="json",
                         HTTP_IDEMPOTENCY_KEY="k")
    response = operator_client.post(JOBS, {"type": "noop", "payload": {"n": 2}}, format="json",
                                    HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 409
    error = response.json()
    assert error["code"] == "idempotency_conflict" and "different request" in error["detail"]
    assert error["job_id"] == Job.objects.get().pk


@pytest.mark.parametrize("header", ["x" * 10_000, "   "])
def test_a_bad_idempotency_key_header_is_400(operator_client, header):
    response = operator_client.post(JOBS, {"type": "noop"}, format="json", HTTP_IDEMPOTENCY_KEY=header)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["errors"]


def test_header_and_body_keys_must_agree(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "idempotency_key": "a"}, format="json",
                                    HTTP_IDEMPOTENCY_KEY="b")
    assert response.status_code == 400 and "idempotency_key" in response.json()["errors"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_create_exactly_one_job(client_for, operator):
    threads_n = 8
    barrier = threading.Barrier(threads_n)
    statuses, ids, errors = [], [], []

    def post():
        try:
            client = client_for(operator)
            barrier.wait(timeout=10)
            response = client.post(JOBS, {"type": "noop", "payload": {"n": 1}}, format="json",
                                   HTTP_IDEMPOTENCY_KEY="race-1")
            statuses.append(response.status_code)
            ids.append(response.json().get("id"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(statuses) == [200] * (threads_n - 1) + [201]
    assert len(set(ids)) == 1
    assert Job.objects.filter(idempotency_key__endswith=":race-1").count() == 1  # scoped
    assert JobEvent.objects.filter(kind="created").count() == 1
