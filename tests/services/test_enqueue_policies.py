"""Enqueue policies: debounce (a burst of enqueues of one key runs once, with the last
payload), throttle (one job per key per period, returned to every later enqueue) and expiry
(a job not started by its deadline never runs, and says why), each race-safe under 32
concurrent producers with their own connections."""
import multiprocessing
import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.utils import timezone

from django_pg_jobqueue import metrics, services, testing
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, JobEvent, JobSearchText
from django_pg_jobqueue.states import Status
from tests.utils import wait_for

pytestmark = pytest.mark.django_db

PRODUCERS = 32


def _run_producers(target, *args) -> list:
    """`target(barrier, results, i, *args)` in 32 forked processes, each with its own
    connection, released together by a barrier; what each put in `results`."""
    context = multiprocessing.get_context("fork")
    connections.close_all()  # nothing of the parent's connection is shared with the children
    barrier, results = context.Barrier(PRODUCERS), context.Queue()
    producers = [context.Process(target=target, args=(barrier, results, i, *args))
                 for i in range(PRODUCERS)]
    for p in producers:
        p.start()
    outcomes = [results.get(timeout=120) for _ in producers]
    for p in producers:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcomes


def _ran_payloads(custom_handler) -> list:
    seen: list = []
    custom_handler("policy_probe", lambda ctx, payload: seen.append(payload))
    return seen


# --- debounce ---------------------------------------------------------------------------------
def test_a_burst_of_100_debounced_enqueues_runs_once_with_the_last_payload(
        custom_handler):
    seen = _ran_payloads(custom_handler)
    # A burst (well under a second on an idle machine; not asserted: a loaded test machine
    # may take longer, and nothing claims during it here).
    jobs = [services.enqueue("policy_probe", {"n": n},
                             debounce={"key": "reindex:42", "period_seconds": 2})
            for n in range(100)]
    assert len({job.id for job in jobs}) == 1
    assert [job.created for job in jobs] == [True] + [False] * 99
    job = Job.objects.get()
    assert job.payload == {"n": 99}
    # Its start was pushed by the last enqueue (the one that wrote updated_at): 2 s after it.
    assert job.available_at - job.updated_at == timedelta(seconds=2)
    assert testing.drain("policy_probe").ran == 0, "not before its quiet period"
    result = testing.drain("policy_probe", include_scheduled=True)
    assert result.ran == 1 and seen == [{"n": 99}]
    assert list(JobEvent.objects.filter(job=job, kind="created").values_list("data", flat=True)
                ) == [{"queue": "default", "priority": 0, "debounced": True}]


@pytest.mark.django_db(transaction=True)
def test_each_committed_enqueue_of_a_burst_pushes_the_start_to_a_period_after_itself():
    # Each enqueue its own transaction, so its own now(): the start moves with the last one.
    jobs = []
    for n in range(100):
        jobs.append(services.enqueue("noop", {"n": n},
                                     debounce={"key": "typing", "period_seconds": 2}))
    [job] = Job.objects.filter(type="noop")
    assert {j.id for j in jobs} == {job.id} and job.payload == {"n": 99}
    assert job.available_at - job.updated_at == timedelta(seconds=2)
    assert job.updated_at > job.created_at, "pushed by the last enqueue, not the first"


def test_a_debounced_job_that_started_is_not_replaced_a_new_enqueue_makes_a_new_job():
    first = services.enqueue("noop", {"v": 1}, debounce={"key": "k", "period_seconds": 1})
    Job.objects.filter(id=first.id).update(available_at=F("available_at") - timedelta(seconds=5))
    [claimed] = services.claim(worker_ids=["w"], job_ids=[first.id])
    again = services.enqueue("noop", {"v": 2}, debounce={"key": "k", "period_seconds": 1})
    assert again.created and again.id != first.id
    assert Job.objects.get(id=first.id).payload == {"v": 1}
    assert claimed.payload == {"v": 1}
    # Back to queued uncharged (a release), the started job never meets the pending one.
    services.release_many([(claimed.id, claimed.lease_token, "w")])
    assert Job.objects.get(id=first.id).debounce_key is None


def test_a_debounced_payload_replaces_the_search_text():
    job = services.enqueue("noop", {"word": "alpha"}, debounce={"key": "s", "period_seconds": 5})
    services.enqueue("noop", {"word": "omega"}, debounce={"key": "s", "period_seconds": 5})
    assert "omega" in JobSearchText.objects.get(job_id=job.id).payload_text
    services.enqueue("noop", {}, debounce={"key": "s", "period_seconds": 5})
    assert not JobSearchText.objects.filter(job_id=job.id).exists()


def test_debounce_keys_are_per_type_and_fields_make_the_key_from_the_payload(custom_handler):
    custom_handler("policy_other", lambda ctx, payload: None)
    a = services.enqueue("noop", {"user": 1, "v": 1}, debounce={"fields": ["user"], "period_seconds": 1})
    b = services.enqueue("noop", {"user": 1, "v": 2}, debounce={"fields": ["user"], "period_seconds": 1})
    c = services.enqueue("noop", {"user": 2, "v": 3}, debounce={"fields": ["user"], "period_seconds": 1})
    d = services.enqueue("policy_other", {"user": 1}, debounce={"fields": ["user"], "period_seconds": 1})
    assert a.id == b.id and len({a.id, c.id, d.id}) == 3


def test_a_batch_may_debounce_and_a_key_given_twice_updates_its_first_job():
    jobs = services.enqueue_many([
        {"type": "noop", "payload": {"v": 1}, "debounce": {"key": "b", "period_seconds": 3}},
        {"type": "noop", "payload": {"plain": True}},
        {"type": "noop", "payload": {"v": 2}, "debounce": {"key": "b", "period_seconds": 3}},
    ])
    assert jobs[0].id == jobs[2].id != jobs[1].id
    assert Job.objects.get(id=jobs[0].id).payload == {"v": 2}


def _debounced_producer(barrier, results, i) -> None:
    connections.close_all()
    barrier.wait()
    ids = []
    for n in range(5):
        job = services.enqueue("noop", {"producer": i, "n": n},
                               debounce={"key": "burst", "period_seconds": 30})
        ids.append(job.id)
    results.put(ids)
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_32_concurrent_producers_of_one_debounce_key_make_one_job_with_a_payload_of_theirs():
    outcomes = _run_producers(_debounced_producer)
    [job] = Job.objects.filter(type="noop")
    assert {i for ids in outcomes for i in ids} == {job.id}
    assert 0 <= job.payload["producer"] < PRODUCERS and 0 <= job.payload["n"] < 5
    assert JobEvent.objects.filter(job=job, kind="created").count() == 1
    last = services.enqueue("noop", {"last": True}, debounce={"key": "burst", "period_seconds": 30})
    assert last.id == job.id and Job.objects.get(id=job.id).payload == {"last": True}


# --- throttle ---------------------------------------------------------------------------------
def test_100_throttled_enqueues_within_one_period_make_one_job_returned_each_time():
    jobs = [services.enqueue("noop", {"n": n}, throttle={"key": "mail:ada", "period_seconds": 60})
            for n in range(100)]
    assert len({job.id for job in jobs}) == 1
    assert [job.created for job in jobs] == [True] + [False] * 99
    assert Job.objects.get().payload == {"n": 0}, "the first wins"


def test_a_throttle_admits_the_next_job_once_the_period_passed_whatever_became_of_the_first():
    first = services.enqueue("noop", {}, throttle={"key": "t", "period_seconds": 60})
    testing.drain("noop")
    assert services.enqueue("noop", {}, throttle={"key": "t", "period_seconds": 60}).id == first.id
    Job.objects.filter(id=first.id).update(created_at=F("created_at") - timedelta(seconds=61))
    second = services.enqueue("noop", {}, throttle={"key": "t", "period_seconds": 60})
    assert second.created and second.id != first.id


def test_a_throttle_key_and_a_unique_key_of_the_same_name_do_not_meet():
    throttled = services.enqueue("noop", {}, throttle={"key": "same", "period_seconds": 60})
    unique = services.enqueue("noop", {}, unique={"key": "same"})
    assert throttled.id != unique.id and unique.created


def _throttled_producer(barrier, results, i) -> None:
    connections.close_all()
    barrier.wait()
    got = [services.enqueue("noop", {"producer": i},
                            throttle={"key": "hot", "period_seconds": 300}) for _ in range(3)]
    results.put([(job.id, job.created) for job in got])
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_32_concurrent_producers_of_one_throttle_key_make_exactly_one_job():
    outcomes = [pair for got in _run_producers(_throttled_producer) for pair in got]
    [job] = Job.objects.filter(type="noop")
    assert {job_id for job_id, _ in outcomes} == {job.id}
    assert sum(created for _, created in outcomes) == 1


# --- expiry -----------------------------------------------------------------------------------
def _past_deadline(job: Job) -> None:
    Job.objects.filter(id=job.id).update(expires_at=F("created_at") - timedelta(seconds=1))


def test_an_expired_job_is_never_claimed_and_the_sweep_ends_it_saying_why(custom_handler):
    seen = _ran_payloads(custom_handler)
    job = services.enqueue("policy_probe", {"n": 1}, expires_in_seconds=60)
    assert 59 < (job.expires_at - job.created_at).total_seconds() <= 60
    _past_deadline(job)
    assert testing.drain("policy_probe").ran == 0 and seen == []
    assert testing.run_reaper() == {"expired": 1}
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and job.finished_at is not None
    assert job.started_at is None and job.attempts == 0
    [event] = JobEvent.objects.filter(job=job, kind="expired")
    assert event.message.startswith("expired: not started by its expires_at")
    assert set(event.data) == {"expires_at", "late_seconds"}
    assert metrics.snapshot().events[("policy_probe", "expired")] == 1


def test_a_job_with_a_deadline_ahead_runs_as_any_other(custom_handler):
    seen = _ran_payloads(custom_handler)
    services.enqueue("policy_probe", {"n": 2}, expires_at=timezone.now() + timedelta(minutes=5))
    assert testing.drain("policy_probe").ran == 1 and seen == [{"n": 2}]
    assert testing.run_reaper() == {}


def test_an_expired_job_retried_by_an_operator_runs_without_its_deadline():
    job = services.enqueue("noop", {}, expires_in_seconds=30)
    _past_deadline(job)
    services.expire_overdue()
    retried = services.retry(job.id)
    assert retried.status == Status.QUEUED and retried.expires_at is None
    assert testing.drain("noop").ran == 1


def test_the_jobs_waiting_for_an_expired_job_are_cancelled_with_it():
    job = services.enqueue("noop", {}, expires_in_seconds=30)
    dependant = services.enqueue("noop", {}, after=[job.id])
    _past_deadline(job)
    assert services.expire_overdue() == 1
    dependant.refresh_from_db()
    assert dependant.status == Status.CANCELLED


def test_a_batch_carries_each_items_deadline():
    at = timezone.now() + timedelta(hours=1)
    jobs = services.enqueue_many([{"type": "noop", "expires_at": at},
                                  {"type": "noop", "expires_in_seconds": 90},
                                  {"type": "noop"}])
    assert jobs[0].expires_at == at and jobs[2].expires_at is None
    assert 89 < (jobs[1].expires_at - jobs[1].created_at).total_seconds() <= 90
    assert [j.expires_at for j in Job.objects.order_by("id")] == [j.expires_at for j in jobs]


@pytest.mark.django_db(transaction=True)
def test_under_32_producers_claims_and_the_sweep_every_job_either_started_in_time_or_expired():
    # Threads, each with its own connection (Django's per thread): producers, two claimers
    # and the sweep, all at once.
    stop, barrier = threading.Event(), threading.Barrier(PRODUCERS)
    started: list = []
    produced: list = []

    def producer(i: int) -> None:
        try:
            barrier.wait()
            produced.extend(services.enqueue("noop", {"producer": i, "n": n},
                                             expires_in_seconds=0.05 + 0.02 * (n % 10)).id
                            for n in range(10))
        finally:
            connections.close_all()

    def claimer() -> None:
        try:
            while not stop.is_set():
                started.extend(services.claim(worker_ids=["w1", "w2", "w3", "w4"]))
                stop.wait(0.01)
        finally:
            connections.close_all()

    def sweeper() -> None:
        try:
            while not stop.is_set():
                services.expire_overdue()
                stop.wait(0.02)
        finally:
            connections.close_all()

    loops = [threading.Thread(target=claimer) for _ in range(2)] + [threading.Thread(target=sweeper)]
    producers = [threading.Thread(target=producer, args=(i,)) for i in range(PRODUCERS)]
    for t in loops + producers:
        t.start()
    for t in producers:
        t.join(timeout=120)
    # Every deadline passes (the latest is 0.23 s after its enqueue): the sweep ends what no
    # claim took.
    wait_for(lambda: not Job.objects.filter(id__in=produced, status=Status.QUEUED).exists(),
             timeout=30, message="every job started or expired")
    stop.set()
    for t in loops:
        t.join(timeout=30)
    services.expire_overdue()
    ids = set(produced)
    assert len(ids) == PRODUCERS * 10
    jobs = {job.id: job for job in Job.objects.filter(id__in=ids)}
    expired = set(JobEvent.objects.filter(kind="expired").values_list("job_id", flat=True))
    claimed = {job.id for job in started}
    assert claimed | expired == ids and not claimed & expired
    for job_id in claimed:
        job = jobs[job_id]
        assert job.status == Status.RUNNING and job.started_at < job.expires_at
    for job_id in expired:
        assert jobs[job_id].status == Status.CANCELLED and jobs[job_id].attempts == 0
    assert claimed and expired, "both outcomes happened (else the race was not exercised)"


# --- one validation, named arguments ------------------------------------------------------------
@pytest.mark.parametrize(("options", "argument"), [
    ({"debounce": {"key": "k"}}, "debounce"),  # period_seconds is required
    ({"debounce": {"key": "k", "period_seconds": 0}}, "debounce"),
    ({"debounce": {"key": "k", "period_seconds": 1, "states": ["queued"]}}, "debounce"),
    ({"debounce": "k"}, "debounce"),
    ({"debounce": {"key": "k", "period_seconds": 1}, "delay_seconds": 5}, "delay_seconds"),
    ({"debounce": {"key": "k", "period_seconds": 1}, "unique": {"key": "k"}}, "unique"),
    ({"debounce": {"key": "k", "period_seconds": 1}, "idempotency_key": "i"}, "idempotency_key"),
    ({"throttle": {"key": "k"}}, "throttle"),
    ({"throttle": {"key": "", "period_seconds": 1}}, "throttle"),
    ({"throttle": {"key": "k", "period_seconds": 1}, "unique": {"key": "k"}}, "throttle"),
    ({"expires_in_seconds": 0}, "expires_in_seconds"),
    ({"expires_in_seconds": "soon"}, "expires_in_seconds"),
    ({"expires_in_seconds": 5, "delay_seconds": 10}, "expires_in_seconds"),
    ({"expires_at": timezone.now() - timedelta(seconds=1)}, "expires_at"),
    ({"expires_at": "2030-01-01"}, "expires_at"),
    ({"expires_at": timezone.now() + timedelta(hours=1), "expires_in_seconds": 5},
     "expires_in_seconds"),
])
def test_a_bad_policy_is_refused_naming_its_argument_and_nothing_is_written(options, argument):
    with pytest.raises(InvalidJobArgument) as caught:
        services.enqueue("noop", {}, **options)
    assert caught.value.argument == argument
    with pytest.raises(InvalidJobArgument) as in_batch:
        services.enqueue_many([{"type": "noop", **options}])
    assert in_batch.value.argument == argument
    assert not Job.objects.exists()


def test_the_database_refuses_a_second_pending_job_of_one_debounce_key():
    first = services.enqueue("noop", {}, debounce={"key": "d", "period_seconds": 5})
    other = services.enqueue("noop", {})
    with pytest.raises(IntegrityError, match="job_debounce_key_unique"), transaction.atomic():
        Job.objects.filter(id=other.id).update(debounce_key=first.debounce_key)
