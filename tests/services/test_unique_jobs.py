"""Unique jobs: at most one job of a type and key counts at a time, and a duplicate enqueue
returns it; idempotency keys that expire."""
import multiprocessing
from datetime import timedelta

import pytest
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import IdempotencyConflict, InvalidJobArgument, UniqueKeyHeld
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.services.bulk_retry import retry_ids

pytestmark = pytest.mark.django_db

WHILE_LIVE = {"key": "customer:42"}  # the default states: queued, running
TEN_MINUTES = {"key": "digest:ada", "period_seconds": 600}


def _finish(job: Job, *, fail: bool = False) -> None:
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job.id])
    if fail:
        services.fail(claimed.id, claimed.lease_token, worker_id="w", error="boom",
                      permanent=True)
    else:
        services.complete(claimed.id, claimed.lease_token, worker_id="w", result=None)


def _enqueued_ago(job: Job, seconds: float) -> None:
    """As if the job had been enqueued `seconds` earlier (the database clock is not moved:
    the row's own timestamp is)."""
    Job.objects.filter(id=job.id).update(created_at=F("created_at") - timedelta(seconds=seconds))


def _producer(barrier, results) -> None:
    connections.close_all()  # a forked child opens its own connection
    barrier.wait()
    job = services.enqueue("noop", {"n": 1}, unique={"key": "sync:acme"})
    results.put((job.id, job.created))
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_32_concurrent_producers_of_one_unique_job_make_exactly_one_row():
    context = multiprocessing.get_context("fork")
    connections.close_all()  # nothing of the parent's connection is shared with the children
    barrier, results = context.Barrier(32), context.Queue()
    producers = [context.Process(target=_producer, args=(barrier, results)) for _ in range(32)]
    for p in producers:
        p.start()
    outcomes = [results.get(timeout=120) for _ in producers]
    for p in producers:
        p.join(timeout=60)
        assert p.exitcode == 0

    assert Job.objects.filter(type="noop").count() == 1
    [job] = Job.objects.filter(type="noop")
    assert {job_id for job_id, _ in outcomes} == {job.id}, "every producer got the one job"
    assert sorted(created for _, created in outcomes) == [False] * 31 + [True]
    assert job.events.filter(kind="created").count() == 1


def test_a_duplicate_returns_the_job_that_holds_the_key_and_says_so():
    first = services.enqueue("noop", {"n": 1}, unique=WHILE_LIVE)
    again = services.enqueue("noop", {"n": 2}, unique=WHILE_LIVE)  # another payload: same key

    assert first.created is True and again.created is False
    assert again.id == first.id and again.payload == {"n": 1}
    assert services.enqueue_or_get("noop", unique=WHILE_LIVE) == (again, False)
    assert Job.objects.count() == 1


def test_while_queued_or_running_a_new_job_can_be_enqueued_once_the_last_one_finished():
    first = services.enqueue("noop", unique=WHILE_LIVE)
    [claimed] = services.claim(worker_ids=["w"], job_ids=[first.id])
    assert services.enqueue("noop", unique=WHILE_LIVE).id == first.id, "running still counts"
    services.complete(claimed.id, claimed.lease_token, worker_id="w", result=None)

    second = services.enqueue("noop", unique=WHILE_LIVE)

    assert second.created and second.id != first.id
    assert services.enqueue("noop", unique=WHILE_LIVE).id == second.id


def test_a_failed_job_does_not_count_while_queued_or_running():
    first = services.enqueue("noop", unique=WHILE_LIVE)
    _finish(first, fail=True)
    assert services.enqueue("noop", unique=WHILE_LIVE).created


def test_for_ten_minutes_a_duplicate_is_refused_even_after_the_job_finished():
    first = services.enqueue("noop", unique=TEN_MINUTES)
    _finish(first)
    _enqueued_ago(first, 9 * 60)

    again = services.enqueue("noop", unique=TEN_MINUTES)

    assert again.id == first.id and not again.created


def test_after_ten_minutes_the_next_enqueue_creates_a_new_job():
    first = services.enqueue("noop", unique=TEN_MINUTES)
    _finish(first)
    _enqueued_ago(first, 10 * 60 + 1)

    second = services.enqueue("noop", unique=TEN_MINUTES)

    assert second.created and second.id != first.id
    first.refresh_from_db()
    assert first.unique_key is None, "the old job gave its key up"
    assert first.status == "succeeded" and first.events.exists(), "and kept its history"
    assert services.enqueue("noop", unique=TEN_MINUTES).id == second.id


def test_a_period_and_states_together_count_only_jobs_in_those_states_within_the_period():
    options = {"key": "k", "states": ["queued", "running"], "period_seconds": 600}
    first = services.enqueue("noop", unique=options)
    _enqueued_ago(first, 11 * 60)
    assert services.enqueue("noop", unique=options).created, "queued, but enqueued too long ago"


def test_the_key_can_come_from_chosen_payload_fields():
    by_customer = {"fields": ["customer_id"]}
    first = services.enqueue("noop", {"customer_id": 7, "note": "a"}, unique=by_customer)
    same = services.enqueue("noop", {"customer_id": 7, "note": "b"}, unique=by_customer)
    other = services.enqueue("noop", {"customer_id": 8, "note": "a"}, unique=by_customer)

    assert same.id == first.id and other.id != first.id
    assert services.enqueue("noop", {"note": "x"}, unique={}).created, "the whole payload"
    assert not services.enqueue("noop", {"note": "x"}, unique={}).created


def test_the_key_belongs_to_its_type():
    a = services.enqueue("noop", unique=WHILE_LIVE)
    b = services.enqueue("sleep", {"seconds": 0}, unique=WHILE_LIVE)
    assert a.id != b.id and b.created


def test_enqueue_many_returns_the_holder_for_duplicates_within_the_batch_and_before_it():
    held = services.enqueue("noop", unique={"key": "a"})
    results = services.enqueue_many_or_get([
        {"type": "noop", "unique": {"key": "a"}},
        {"type": "noop", "unique": {"key": "b"}},
        {"type": "noop"},
        {"type": "noop", "unique": {"key": "b"}},
    ])

    (a, a_new), (b, b_new), (plain, plain_new), (b2, b2_new) = results
    assert a.id == held.id and not a_new
    assert b_new and b2.id == b.id and not b2_new
    assert plain_new and plain.unique_key is None
    assert Job.objects.count() == 3


def test_retrying_a_unique_job_whose_key_another_job_holds_is_refused(alice):
    first = services.enqueue("noop", unique=WHILE_LIVE)
    _finish(first, fail=True)
    second = services.enqueue("noop", unique=WHILE_LIVE)
    assert second.created

    with pytest.raises(UniqueKeyHeld, match=f"job {second.id} holds its unique key"):
        services.retry(first.id)
    assert retry_ids([first.id]) == (0, [first.id])
    response = alice.post(f"{JOBS}{first.id}/retry/")
    assert response.status_code == 409, response.json()
    first.refresh_from_db()
    assert first.status == "failed"
    _finish(second)
    assert services.retry(first.id).status == "queued", "once the key is free again"


def test_the_database_refuses_a_second_live_job_for_one_unique_key():
    first = services.enqueue("noop", unique=WHILE_LIVE)
    _finish(first, fail=True)
    services.enqueue("noop", unique=WHILE_LIVE)

    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(id=first.id).update(status="queued", finished_at=None)


@pytest.mark.parametrize("unique, message", [
    ("k", "must be a dict"),
    ({"key": "k", "fields": ["a"]}, "not both"),
    ({"key": ""}, "1 to"),
    ({"key": "a\x00b"}, "NUL"),
    ({"fields": []}, "non-empty list"),
    ({"fields": "customer_id"}, "non-empty list"),
    ({"states": ["queued"]}, "must include 'queued' and 'running'"),
    ({"states": ["queued", "running", "done"]}, "not a status"),
    ({"period_seconds": 0}, "above 0"),
    ({"period_seconds": float("inf")}, "above 0"),
    ({"period_seconds": True}, "is a number"),
    ({"scope": "x"}, "unknown option 'scope'"),
])
def test_a_bad_unique_option_is_refused_naming_the_argument(unique, message):
    with pytest.raises(InvalidJobArgument, match=message) as caught:
        services.enqueue("noop", unique=unique)
    assert caught.value.argument == "unique"
    with pytest.raises(InvalidJobArgument) as in_batch:
        services.enqueue_many([{"type": "noop"}, {"type": "noop", "unique": unique}])
    assert in_batch.value.argument == "unique" and in_batch.value.index == 1
    assert not Job.objects.exists()


# -- idempotency keys with an expiry ------------------------------------------------------------

def test_idempotency_keys_replay_forever_by_default():
    first = services.enqueue("noop", idempotency_key="welcome:1")
    _finish(first)
    _enqueued_ago(first, 365 * 86400)
    assert services.enqueue("noop", idempotency_key="welcome:1").id == first.id
    assert first.idempotency_expires_at is None


@override_settings(JOB_IDEMPOTENCY_KEY_TTL_SECONDS=3600)
def test_an_expired_idempotency_key_creates_a_new_job_and_takes_the_key_over():
    first = services.enqueue("noop", {"to": "ada"}, idempotency_key="welcome:1")
    assert first.idempotency_expires_at == first.created_at + timedelta(hours=1)
    _finish(first)
    assert services.enqueue("noop", {"to": "ada"}, idempotency_key="welcome:1").id == first.id
    with pytest.raises(IdempotencyConflict):  # within its hour, the key still guards
        services.enqueue("noop", {"to": "bob"}, idempotency_key="welcome:1")
    Job.objects.filter(id=first.id).update(
        idempotency_expires_at=F("idempotency_expires_at") - timedelta(hours=1))

    second = services.enqueue("noop", {"to": "bob"}, idempotency_key="welcome:1")

    assert second.created and second.id != first.id
    first.refresh_from_db()
    assert first.idempotency_key is None and first.status == "succeeded"
    batch = services.enqueue_many_or_get([{"type": "noop", "payload": {"to": "bob"},
                                         "idempotency_key": "welcome:1"}])
    assert batch == [(second, False)]


@override_settings(JOB_IDEMPOTENCY_KEY_TTL_SECONDS=60)
def test_periodic_keys_never_expire():
    job = services.enqueue("noop", idempotency_key="periodic:nightly:2026-01-01T00:00:00+00:00")
    assert job.idempotency_expires_at is None


# -- the API -------------------------------------------------------------------------------------

JOBS = "/api/v1/jobs/"


@pytest.fixture
def alice(make_user, client_for):
    return client_for(make_user("alice", perms=["add_job", "view_job", "change_job"]))


@pytest.fixture
def bob(make_user, client_for):
    return client_for(make_user("bob", perms=["add_job", "view_job"]))


def test_the_api_answers_201_then_200_with_created_false_for_a_duplicate(alice):
    body = {"type": "noop", "payload": {"n": 1}, "unique": {"key": "sync:acme"}}
    first = alice.post(JOBS, body, format="json")
    again = alice.post(JOBS, {**body, "payload": {"n": 2}}, format="json")

    assert first.status_code == 201 and first.json()["created"] is True
    assert again.status_code == 200, again.json()
    assert again.json()["created"] is False and again.json()["id"] == first.json()["id"]
    assert "X-Idempotency-Replay" not in again.headers
    assert first.json()["unique_states"] == ["queued", "running", "waiting"]


def test_the_api_bulk_accepts_unique_per_item(alice):
    response = alice.post(JOBS + "bulk/", {"jobs": [
        {"type": "noop", "unique": {"key": "x", "period_seconds": 60}},
        {"type": "noop", "unique": {"key": "x", "period_seconds": 60}}]}, format="json")
    assert response.status_code == 201, response.json()
    first, second = response.json()["jobs"]
    assert first["id"] == second["id"] and [first["created"], second["created"]] == [True, False]


def test_the_api_refuses_a_bad_unique_option_with_400_naming_it(alice):
    response = alice.post(JOBS, {"type": "noop", "unique": {"states": ["queued"]}},
                          format="json")
    assert response.status_code == 400
    assert "unique" in response.json()["errors"]
    assert alice.post(JOBS, {"type": "noop", "unique": {"period_seconds": -1}},
                      format="json").status_code == 400
    assert alice.post(JOBS, {"type": "noop", "unique": "k"}, format="json").status_code == 400
    assert not Job.objects.exists()


def test_api_users_unique_keys_never_meet(alice, bob):
    body = {"type": "noop", "payload": {"secret": "alice's"}, "unique": {"key": "k"}}
    assert alice.post(JOBS, body, format="json").status_code == 201
    theirs = bob.post(JOBS, {**body, "payload": {}}, format="json")
    assert theirs.status_code == 201 and theirs.json()["payload"] == {}


def test_the_longest_key_on_the_longest_type_fits_from_the_api_and_from_python(
        make_user, client_for, custom_handler):
    """A 190-character key on a 100-character type overflowed the 300-character column under
    an API user's scope (a DataError, a 500): such a key is stored as its digest instead,
    the same for the same key, from the API (one job or bulk) and from Python."""
    long_type = "reports." + "t" * 92  # 100 characters, the longest a type may be
    custom_handler(long_type, lambda payload: None)
    key = "k" * 190  # states.MAX_UNIQUE_KEY_LENGTH
    with override_settings(JOB_API_CREATABLE_TYPES=[long_type]):
        user = make_user("tenant", perms=["add_job", "view_job"])
        client = client_for(user)
        body = {"type": long_type, "unique": {"key": key}}
        first = client.post(JOBS, body, format="json")
        assert first.status_code == 201, first.json()
        again = client.post(JOBS, body, format="json")
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
        bulk = client.post(JOBS + "bulk/", {"jobs": [body]}, format="json")
        assert bulk.status_code == 201 and bulk.json()["jobs"][0]["id"] == first.json()["id"]
    stored = Job.objects.get(pk=first.json()["id"]).unique_key
    assert len(stored) <= 300 and stored.startswith(f"{long_type}:api:{user.pk}:key-sha256:")
    python = services.enqueue(long_type, unique={"key": key})
    assert python.created and python.unique_key == f"{long_type}:key:{key}"  # 295: it fits
    assert services.enqueue(long_type, unique={"key": key}).id == python.id
    # A key that fits with the scope is stored as it is.
    short = services.enqueue_or_get(long_type, unique={"key": "k" * 10}, key_scope="api:7:")[0]
    assert short.unique_key == f"{long_type}:api:7:key:{'k' * 10}"
