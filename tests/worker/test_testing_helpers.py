"""django_pg_jobqueue.testing, as a user's test suite would use it: assertions on what was enqueued, a
synchronous drain through the real claim/complete path, and crash injection that proves a
handler safe (or unsafe) to run twice."""
import pytest
from django.db import transaction

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.exceptions import LeaseLost
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.registry import registry
from django_pg_jobqueue.testing import (
    assert_enqueued,
    assert_not_enqueued,
    crash_mid_handler,
    drain,
    enqueued_jobs,
    expire_lease,
    run_reaper,
)

pytestmark = pytest.mark.django_db

SIDE_EFFECTS: list[tuple] = []   # what the test handlers did "in the outside world"
CHARGED: set = set()             # an idempotent handler's dedupe store


@pytest.fixture(autouse=True)
def handlers():
    SIDE_EFFECTS.clear()
    CHARGED.clear()

    def charge_naive(ctx, payload):
        ctx.progress(10, "charging")
        SIDE_EFFECTS.append(("charge", payload["invoice"]))
        ctx.progress(90, "charged")
        return {"charged": payload["invoice"]}

    def charge_idempotent(ctx, payload):
        ctx.progress(10, "charging")
        if payload["invoice"] not in CHARGED:      # the provider's idempotency key, say
            CHARGED.add(payload["invoice"])
            SIDE_EFFECTS.append(("charge", payload["invoice"]))
        ctx.progress(90, "charged")
        return {"charged": payload["invoice"]}

    def fan_out(ctx, payload):
        for i in range(payload["n"]):
            services.enqueue("noop", {"child_of": ctx.job_id, "i": i})
        return {"children": payload["n"]}

    registry.register("test_charge_naive", charge_naive)
    registry.register("test_charge_idempotent", charge_idempotent)
    registry.register("test_fan_out", fan_out)
    yield
    for name in ("test_charge_naive", "test_charge_idempotent", "test_fan_out"):
        registry.unregister(name)


def test_assert_enqueued_matches_type_payload_subset_and_queue_in_the_current_transaction():
    with transaction.atomic():
        services.enqueue("email_send", {"to": "ada@example.com", "meta": {"lang": "en", "v": 2}},
                         queue="emails")
        # Not committed yet, and already visible to the helpers (same connection).
        jobs = assert_enqueued(type="email_send", payload_subset={"meta": {"lang": "en"}},
                               queue="emails", count=1)
        assert jobs[0].payload["to"] == "ada@example.com"
    assert_not_enqueued(type="email_send", queue="default")
    assert_not_enqueued(type="email_send", payload_subset={"to": "bob@example.com"})


def test_a_rolled_back_enqueue_is_not_enqueued():
    with pytest.raises(RuntimeError), transaction.atomic():
        services.enqueue("noop", {"order": 1})
        raise RuntimeError("the order failed")
    assert enqueued_jobs("noop") == []
    assert_not_enqueued("noop")


def test_assert_enqueued_failure_lists_what_was_enqueued():
    services.enqueue("noop", {"order": 7})
    with pytest.raises(AssertionError) as err:
        assert_enqueued(type="email_send")
    message = str(err.value)
    assert "expected a job with type='email_send'" in message
    assert 'noop queue=default status=queued payload={"order": 7}' in message
    with pytest.raises(AssertionError, match="expected 2 job"):
        assert_enqueued(type="noop", count=2)


def test_drain_runs_due_jobs_through_the_real_claim_and_complete_path():
    ok = services.enqueue("noop")
    bad = services.enqueue("fail", {"permanent": True})
    later = services.enqueue("noop", delay_seconds=3600)
    result = drain()
    assert (result.succeeded, result.failed, result.ran) == (1, 1, 2)
    assert result.errors == [f"#{bad.id}: PermanentError: permanent failure requested"]
    ok.refresh_from_db(), bad.refresh_from_db(), later.refresh_from_db()
    assert (ok.status, bad.status, later.status) == ("succeeded", "failed", "queued")
    # The claim writes no event: the success carries its attempt's start, under drain's id.
    assert not HistoryEvent.objects.filter(job=ok, kind="claimed").exists()
    succeeded = HistoryEvent.objects.get(job=ok, kind="succeeded")
    assert succeeded.worker_id == "testing-drain" and succeeded.data["started_at"]
    assert succeeded.data["lease_token"]
    assert audit().ok


def test_drain_with_include_scheduled_runs_retries_until_the_job_ends():
    flaky = services.enqueue("flaky", {"fail_times": 2}, max_attempts=3)
    assert drain().retried == 1                     # the retry is due later: drain stops
    result = drain(include_scheduled=True)
    assert (result.retried, result.succeeded) == (1, 1)
    flaky.refresh_from_db()
    assert (flaky.status, flaky.attempts, flaky.result) == ("succeeded", 3, {"succeeded_on_attempt": 3})


def test_drain_filters_by_type_and_queue_and_stops_at_max_jobs():
    services.enqueue("noop", queue="a")
    services.enqueue("noop", queue="b")
    fail = services.enqueue("fail")
    assert drain(types="noop", queues=["b"]).succeeded == 1
    assert drain(types=["noop"], max_jobs=5).succeeded == 1
    fail.refresh_from_db()
    assert fail.status == "queued" and fail.attempts == 0
    with pytest.raises(RuntimeError, match="failure requested"):
        drain(raise_errors=True)


def test_jobs_enqueued_by_a_handler_run_in_the_same_drain():
    services.enqueue("test_fan_out", {"n": 3})
    result = drain()
    assert result.succeeded == 4
    assert Job.objects.succeeded().count() == 4


def test_crash_after_the_handler_ran_leaves_the_job_running_until_the_reaper_takes_it():
    job = services.enqueue("test_charge_naive", {"invoice": 7})
    crash = crash_mid_handler(job)
    assert crash.handler_finished and crash.writes_before_crash == 2
    job.refresh_from_db()
    assert job.status == "running" and job.locked_by == "testing-crashed"
    assert drain().ran == 0                         # nobody else may run it while leased
    expire_lease(job)
    assert run_reaper() == {"queued": 1}
    assert drain(include_scheduled=True).succeeded == 1
    # The naive handler charged twice: exactly what this helper is for catching.
    assert SIDE_EFFECTS == [("charge", 7), ("charge", 7)]
    # And the crashed worker, were it to come back, is fenced out.
    with pytest.raises(LeaseLost):
        services.complete(job.id, crash.lease_token, worker_id=crash.worker_id)
    assert audit().ok


def test_an_idempotent_handler_survives_a_crash_at_every_point():
    for after_writes in (None, 0, 1, 2):
        job = services.enqueue("test_charge_idempotent", {"invoice": f"inv-{after_writes}"})
        crash = crash_mid_handler(type="test_charge_idempotent", after_writes=after_writes)
        assert crash.job_id == job.id
        assert crash.writes_before_crash == (2 if after_writes is None else after_writes)
        assert crash.handler_finished == (after_writes in (None, 2))
        expire_lease(job)
        run_reaper()
        assert drain(include_scheduled=True).succeeded == 1
        job.refresh_from_db()
        assert job.status == "succeeded" and job.attempts == 2
    assert sorted(SIDE_EFFECTS) == [("charge", f"inv-{n}") for n in (0, 1, 2, None)]
    assert audit().ok


def test_crash_before_the_first_write_leaves_no_side_effect():
    job = services.enqueue("test_charge_naive", {"invoice": 9})
    crash = crash_mid_handler(job.id, after_writes=0)
    assert not crash.handler_finished and SIDE_EFFECTS == []
    assert HistoryEvent.objects.filter(job=job, kind="progress").count() == 0


def test_fault_helpers_refuse_jobs_that_are_not_running():
    job = services.enqueue("noop")
    with pytest.raises(AssertionError, match="is not running"):
        expire_lease(job)
    with pytest.raises(TypeError):
        crash_mid_handler(job, type="noop")
    drain()
    with pytest.raises(AssertionError, match="no due queued job"):
        crash_mid_handler(job)
