"""Concurrency keys: at most N running jobs per key, enforced by the claim; what a caller may
give (enqueue, enqueue_many, the API alike); every way out of running frees the slot; the
job's detail says why it waits; the list filters by key. The several-process guarantees are
in tests/system/test_concurrency_keys_workers.py."""
import threading

import pytest
from django.db import close_old_connections
from django.test import override_settings

from django_pg_jobqueue import enqueue, enqueue_many, services
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.services import claiming
from django_pg_jobqueue.states import Status
from django_pg_jobqueue.testing import expire_lease

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
WORKERS = [f"test-1-{i}" for i in range(8)]


def claim(n=8, **kwargs):
    return services.claim(worker_ids=WORKERS[:n], **kwargs)


def keys_of(claimed):
    return sorted(Job.objects.get(pk=c.id).concurrency_key or "-" for c in claimed)


# -- the claim ------------------------------------------------------------------------------

def test_one_batch_claims_one_job_per_key_with_the_default_limit():
    a = [enqueue("noop", {"i": i}, concurrency_key="customer:1") for i in range(3)]
    enqueue("noop", concurrency_key="customer:2")
    enqueue("noop", concurrency_key="customer:2")
    enqueue("noop")  # no key
    claimed = claim()
    assert keys_of(claimed) == ["-", "customer:1", "customer:2"]
    assert a[0].id in {c.id for c in claimed}  # the key's jobs run in claim order
    assert claim() == []  # both keys full, nothing else waits


def test_a_limit_of_three_claims_three_in_one_batch_and_no_more():
    for i in range(5):
        enqueue("noop", {"i": i}, concurrency_key="tenant:7", concurrency_key_limit=3)
    assert len(claim()) == 3
    assert claim() == []
    assert Job.objects.filter(status=Status.RUNNING, concurrency_key="tenant:7").count() == 3


def test_a_full_key_does_not_hold_back_the_keys_behind_it():
    """A long backlog of one key ahead in claim order: other keys' jobs still run."""
    for i in range(300):  # more than the keyed claim's window
        enqueue("noop", {"i": i}, concurrency_key="busy", priority=10)
    first = claim(1)
    assert keys_of(first) == ["busy"]
    enqueue("noop", concurrency_key="quiet")
    enqueue("noop")
    assert keys_of(claim()) == ["-", "quiet"]


def test_keyed_jobs_wait_when_the_claim_is_narrowed_to_other_queues():
    enqueue("noop", concurrency_key="k", queue="other")
    assert claim(queues=["default"]) == []
    assert keys_of(claim(queues=["other"])) == ["k"]


def test_a_queue_limit_still_applies_to_keyed_jobs():
    services.set_queue_limit("default", 1)
    claiming.forget_cached_limits()
    try:
        enqueue("noop", concurrency_key="a")
        enqueue("noop", concurrency_key="b")
        assert len(claim()) == 1
        assert claim() == []
    finally:
        claiming.forget_cached_limits()


def _finish_first(claimed, how):
    job = claimed[0]
    if how == "complete":
        services.complete(job.id, job.lease_token, worker_id=job.worker_id)
    elif how == "fail":  # a retry is scheduled: the job waits again, behind its key
        services.fail(job.id, job.lease_token, worker_id=job.worker_id, error="boom")
    elif how == "release":
        services.release_many([(job.id, job.lease_token, job.worker_id)])
    elif how == "cancel":  # the operator asks, the worker carries it out
        services.cancel(job.id)
        services.complete(job.id, job.lease_token, worker_id=job.worker_id)
        assert Job.objects.get(pk=job.id).status == Status.CANCELLED
    elif how == "lease_expired":
        expire_lease(Job.objects.get(pk=job.id))
        assert services.reap() == {"queued": 1}


@pytest.mark.parametrize("how", ["complete", "fail", "release", "cancel", "lease_expired"])
def test_every_way_out_of_running_frees_the_slot(how, settings):
    settings.JOB_RETRY_BASE_SECONDS = 0.0  # a retry due at once
    settings.JOB_RETRY_JITTER = 0.0
    first = enqueue("noop", {"n": 1}, concurrency_key="k")
    second = enqueue("noop", {"n": 2}, concurrency_key="k")
    claimed = claim()
    assert [c.id for c in claimed] == [first.id]
    assert claim() == []
    _finish_first(claimed, how)
    again = claim(1)
    assert len(again) == 1
    expected = {first.id, second.id} if how in ("fail", "release", "lease_expired") else {second.id}
    assert again[0].id in expected
    assert claim() == []  # still one at a time


def test_a_retried_job_keeps_its_key_and_waits_for_it():
    job = enqueue("noop", concurrency_key="k", max_attempts=1)
    (c,) = claim()
    services.fail(c.id, c.lease_token, worker_id=c.worker_id, error="boom", permanent=True)
    other = enqueue("noop", concurrency_key="k")
    (running,) = claim()
    assert running.id == other.id
    services.retry(job.id)
    assert Job.objects.get(pk=job.id).concurrency_key == "k"
    assert claim() == []  # waits for `other`
    services.complete(running.id, running.lease_token, worker_id=running.worker_id)
    assert [c.id for c in claim()] == [job.id]


def test_concurrent_claimers_never_exceed_the_limit(transactional_db):
    """Eight threads with their own connections claim the same keys at once."""
    for key in ("a", "b", "c"):
        for i in range(10):
            enqueue("noop", {"i": i}, concurrency_key=key, concurrency_key_limit=2)
    start, got, errors = threading.Barrier(8), [], []

    def claimer(i):
        try:
            start.wait()
            for _ in range(5):
                got.extend(services.claim(worker_ids=[f"t-{i}-{j}" for j in range(4)]))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    running = {k: Job.objects.filter(status=Status.RUNNING, concurrency_key=k).count()
               for k in ("a", "b", "c")}
    assert running == {"a": 2, "b": 2, "c": 2}
    assert len(got) == 6


def test_jobs_without_a_key_claim_with_the_plain_statement(django_assert_max_num_queries):
    """No keyed job waits: one claim is one statement, as before keys existed."""
    enqueue("noop")
    claiming.note_keyed_jobs(False)  # as the once-a-second probe found: none waits
    with django_assert_max_num_queries(3) as ctx:  # the planner settings, the claim, restore
        assert len(claim()) == 1
    assert not any("concurrency_key IS NOT NULL" in q["sql"] for q in ctx.captured_queries)


# -- what a caller may give --------------------------------------------------------------------

@pytest.mark.parametrize("options, argument", [
    ({"concurrency_key": ""}, "concurrency_key"),
    ({"concurrency_key": "   "}, "concurrency_key"),
    ({"concurrency_key": "x" * 201}, "concurrency_key"),
    ({"concurrency_key": 42}, "concurrency_key"),
    ({"concurrency_key": "a\x00b"}, "concurrency_key"),
    ({"concurrency_key": "k", "concurrency_key_limit": 0}, "concurrency_key_limit"),
    ({"concurrency_key": "k", "concurrency_key_limit": 1001}, "concurrency_key_limit"),
    ({"concurrency_key": "k", "concurrency_key_limit": "2"}, "concurrency_key_limit"),
    ({"concurrency_key": "k", "concurrency_key_limit": True}, "concurrency_key_limit"),
    ({"concurrency_key_limit": 2}, "concurrency_key_limit"),
])
def test_bad_keys_and_limits_are_refused_alike_by_python_and_the_api(options, argument,
                                                                      operator_client):
    with pytest.raises(InvalidJobArgument) as exc:
        enqueue("noop", **options)
    assert exc.value.argument == argument
    with pytest.raises(InvalidJobArgument) as exc:
        enqueue_many([{"type": "noop", **options}])
    assert exc.value.argument == argument
    response = operator_client.post(JOBS, {"type": "noop", **options}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    # A NUL is refused by the JSON parser itself, before any field is read.
    assert argument in str(body) or body.get("code") == "parse_error", body
    assert not Job.objects.exists()


def test_python_enqueue_many_and_the_api_take_the_same_key_and_limit(operator, operator_client):
    one = enqueue("noop", concurrency_key="customer:42", concurrency_key_limit=2)
    (many,) = enqueue_many([{"type": "noop", "concurrency_key": "customer:42",
                             "concurrency_key_limit": 2}])
    response = operator_client.post(JOBS, {"type": "noop", "concurrency_key": "customer:42",
                                           "concurrency_key_limit": 2}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["concurrency_key"] == "customer:42"  # as sent
    bulk = operator_client.post(JOBS + "bulk/", {"jobs": [
        {"type": "noop", "concurrency_key": "customer:42"}]}, format="json")
    assert bulk.status_code == 201, bulk.content
    assert bulk.json()["jobs"][0]["concurrency_key"] == "customer:42"
    rows = {(j.concurrency_key, j.concurrency_key_limit)
            for j in Job.objects.filter(pk__in=[one.id, many.id])}
    assert rows == {("customer:42", 2)}
    # The API user's key is theirs, stored under their scope (the next test).
    api = Job.objects.get(pk=response.json()["id"])
    assert (api.concurrency_key, api.concurrency_key_limit) == (f"api:{operator.pk}:customer:42", 2)
    assert (one.concurrency_key, one.concurrency_key_limit) == ("customer:42", 2)
    assert Job.objects.get(pk=bulk.json()["jobs"][0]["id"]).concurrency_key_limit == 1
    assert Job.objects.filter(concurrency_key=None).count() == 0


# -- whose key it is --------------------------------------------------------------------------

@override_settings(JOB_API_MAX_PRIORITY=100, JOB_API_MAX_TIMEOUT_SECONDS=2592000)
def test_an_api_users_concurrency_key_is_their_own_and_holds_back_no_one_else(
        make_user, client_for):
    """Tenant A's long job with "customer:42" held tenant B's job of the same key queued
    for as long as it ran; a key named by an API user is that user's (keys.py), and Python
    names global keys. (The operator here lets API users take any priority and timeout.)"""
    alice, bob = (make_user(name, perms=["add_job", "view_job"]) for name in ("alice", "bob"))
    a, b = client_for(alice), client_for(bob)

    def post(client, path=JOBS, **fields):
        body = {"type": "noop", "concurrency_key": "customer:42", **fields}
        sent = {"jobs": [body]} if path.endswith("bulk/") else body
        response = client.post(path, sent, format="json")
        assert response.status_code == 201, response.content
        job = response.json()["jobs"][0] if path.endswith("bulk/") else response.json()
        assert job["concurrency_key"] == "customer:42"
        return job["id"]

    hog = post(a, priority=100, timeout_seconds=2592000)
    assert [c.id for c in claim(1)] == [hog]
    tenant_b = post(b)
    tenant_b_bulk = post(b, JOBS + "bulk/")
    python = enqueue("noop", concurrency_key="customer:42").id
    alices_second = post(a, JOBS + "bulk/")
    # Bob's key is full after one of his; Python's key is its own; Alice's waits for hers.
    assert {c.id for c in claim()} == {tenant_b, python}
    assert Job.objects.get(pk=tenant_b_bulk).status == Status.QUEUED
    assert Job.objects.get(pk=alices_second).status == Status.QUEUED
    detail = a.get(f"{JOBS}{alices_second}/").json()
    assert detail["concurrency_key_wait"] == "waiting: 1 of 1 running for key customer:42"
    # The list's filter finds the reader's own key and Python's, never another user's.
    listed = {j["id"] for j in a.get(JOBS, {"concurrency_key": "customer:42"}).json()["results"]}
    assert listed == {hog, alices_second, python}
    stored = b.get(JOBS, {"concurrency_key": f"api:{alice.pk}:customer:42"}).json()
    assert stored["results"] == []


def test_a_long_api_concurrency_key_is_stored_as_its_digest_and_still_shared(
        operator, operator_client):
    key = "k" * 200  # the longest a key may be: no room left for the user's scope
    ids = []
    for _ in range(2):
        response = operator_client.post(JOBS, {"type": "noop", "concurrency_key": key},
                                        format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    stored = {Job.objects.get(pk=i).concurrency_key for i in ids}
    assert len(stored) == 1
    [one] = stored
    assert one.startswith(f"api:{operator.pk}:sha256:") and len(one) <= 200
    assert len(claim()) == 1  # the same key: one at a time


def test_the_database_refuses_a_key_without_a_limit():
    from django.db import IntegrityError, transaction

    job = enqueue("noop")
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=job.pk).update(concurrency_key="k")
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=job.pk).update(concurrency_key="k", concurrency_key_limit=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=job.pk).update(concurrency_key_limit=2)


# -- what the API shows ----------------------------------------------------------------------

def test_the_detail_says_why_a_queued_job_waits_for_its_key(operator_client):
    running = enqueue("noop", concurrency_key="customer:42")
    waiting = enqueue("noop", concurrency_key="customer:42")
    claim()
    body = operator_client.get(f"{JOBS}{waiting.id}/").json()
    assert body["concurrency_key"] == "customer:42"
    assert body["concurrency_key_limit"] == 1
    assert body["concurrency_key_running"] == 1
    assert body["concurrency_key_wait"] == "waiting: 1 of 1 running for key customer:42"
    body = operator_client.get(f"{JOBS}{running.id}/").json()
    assert body["concurrency_key_wait"] == ""
    plain = enqueue("noop")
    body = operator_client.get(f"{JOBS}{plain.id}/").json()
    assert (body["concurrency_key"], body["concurrency_key_running"],
            body["concurrency_key_wait"], body["concurrency_key_holders"]) == (None, None, "", [])


def test_the_detail_names_the_running_jobs_that_hold_the_key(operator_client):
    holder = enqueue("noop", concurrency_key="customer:7")
    waiting = enqueue("noop", concurrency_key="customer:7")
    claim()
    other = enqueue("noop", concurrency_key="customer:8")
    assert operator_client.get(f"{JOBS}{waiting.id}/").json()["concurrency_key_holders"] == [
        holder.id]
    assert operator_client.get(f"{JOBS}{holder.id}/").json()["concurrency_key_holders"] == [
        holder.id]
    assert operator_client.get(f"{JOBS}{other.id}/").json()["concurrency_key_holders"] == []


def test_the_jobs_list_filters_by_key(operator_client):
    a = enqueue("noop", concurrency_key="customer:42")
    enqueue("noop", concurrency_key="customer:43")
    enqueue("noop")
    body = operator_client.get(JOBS, {"concurrency_key": "customer:42"}).json()
    assert [j["id"] for j in body["results"]] == [a.id]
    assert body["results"][0]["concurrency_key"] == "customer:42"


def test_the_admin_finds_the_jobs_of_a_key(make_user):
    from django.test import Client

    client = Client()
    client.force_login(make_user("ops", perms=["view_job"], is_staff=True))
    keyed = enqueue("noop", concurrency_key="customer:42", concurrency_key_limit=2)
    enqueue("noop", concurrency_key="customer:43")
    response = client.get("/admin/django_pg_jobqueue/job/", {"q": "customer:42"})
    assert set(response.context["cl"].result_list) == {keyed}
    page = client.get(f"/admin/django_pg_jobqueue/job/{keyed.id}/change/")
    assert b"customer:42" in page.content and b"Concurrency key" in page.content


@pytest.mark.parametrize("value", ["a\x00b", "x" * 201, ""])
def test_an_unusable_key_filter_is_a_4xx_or_matches_nothing(operator_client, value):
    enqueue("noop", concurrency_key="k")
    response = operator_client.get(JOBS, {"concurrency_key": value})
    assert response.status_code in (200, 400), response.content
    if response.status_code == 200 and value:
        assert response.json()["results"] == []
