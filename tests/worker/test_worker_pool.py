"""The worker pool end to end, in-process: leases renewed, lost leases stop handlers,
timeouts, retries with backoff, permanent failures, cancellation, snooze, shutdown release."""
import threading
import time
import uuid

import pytest
from django.db.models import F
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import JobCancelled, LeaseLost
from django_pg_jobqueue.models import HistoryEvent, Job, TxNow

pytestmark = pytest.mark.django_db(transaction=True)


def status_of(job):
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def kinds(job):
    return list(HistoryEvent.objects.filter(job_id=job.pk).order_by("id").values_list("kind", flat=True))


@pytest.mark.parametrize("result", [float("nan"), float("inf"), {1, 2}, object()],
                         ids=["nan", "infinity", "set", "object"])
def test_a_result_that_is_not_json_fails_the_job_for_good_and_spares_its_batch(
        worker_pool, custom_handler, result):
    custom_handler("returns_junk", lambda ctx, payload: result)
    junk = services.enqueue("returns_junk", {})
    fine = [services.enqueue("noop", {"i": i}) for i in range(5)]
    pool = worker_pool(threads=3)
    pool.test_signals.wait_ended([junk.id, *(j.id for j in fine)], timeout=15)
    junk.refresh_from_db()
    assert junk.status == "failed" and junk.attempts == 1
    assert "not JSON" in junk.last_error
    assert HistoryEvent.objects.get(job=junk, kind="failed").data["reason"] == "bad_result"
    assert {status_of(j) for j in fine} == {"succeeded"}


def test_pool_runs_noop_jobs_to_success(worker_pool):
    jobs = [services.enqueue("noop", {"i": i}) for i in range(30)]
    pool = worker_pool(threads=4)
    pool.test_signals.wait_ended([j.id for j in jobs], "succeeded", timeout=15)
    assert kinds(jobs[0]) == ["created", "succeeded"]  # the success carries its start
    row = Job.objects.get(pk=jobs[0].pk)
    assert row.result == {"ok": True} and row.progress_percent == 100
    assert row.locked_by is None and row.lease_token is None and row.finished_at


def test_lease_renewal_keeps_a_job_that_runs_longer_than_its_lease(worker_pool):
    job = services.enqueue("sleep", {"seconds": 5})  # lease is 2 s under fast_queue_settings
    pool = worker_pool(threads=1)
    pool.test_signals.wait_ended([job.id], "succeeded", timeout=20)
    assert "lease_expired" not in kinds(job)
    assert Job.objects.get(pk=job.pk).attempts == 1


def test_flaky_job_retries_with_backoff_then_succeeds(worker_pool):
    job = services.enqueue("flaky", {"fail_times": 2}, max_attempts=3)
    pool = worker_pool(threads=2)
    pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    row = Job.objects.get(pk=job.pk)
    assert row.attempts == 3 and row.result == {"succeeded_on_attempt": 3}
    assert kinds(job).count("retry_scheduled") == 2
    retry = HistoryEvent.objects.filter(job_id=job.pk, kind="retry_scheduled").first()
    assert retry.data["delay_seconds"] is not None and "RuntimeError" in retry.message


def test_exhausted_attempts_end_failed_with_last_error_kept(worker_pool):
    job = services.enqueue("fail", {"message": "smtp down"}, max_attempts=2)
    pool = worker_pool(threads=2)
    pool.test_signals.wait_ended([job.id], "failed", timeout=15)
    row = Job.objects.get(pk=job.pk)
    assert row.attempts == 2 and "smtp down" in row.last_error and row.last_traceback
    assert kinds(job)[-1] == "failed"


def test_permanent_error_fails_at_once_without_retry(worker_pool):
    job = services.enqueue("fail", {"permanent": True}, max_attempts=5)
    pool = worker_pool(threads=1)
    pool.test_signals.wait_ended([job.id], "failed")
    assert Job.objects.get(pk=job.pk).attempts == 1
    assert "retry_scheduled" not in kinds(job)


def test_a_job_of_a_type_no_worker_knows_fails_once_the_configured_wait_is_over(worker_pool):
    job = services.enqueue("noop", {})
    Job.objects.filter(pk=job.pk).update(type="no_such_handler")
    with override_settings(JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS=0):
        pool = worker_pool(threads=1)
        pool.test_signals.wait_ended([job.id], "failed")
    assert "no handler registered" in Job.objects.get(pk=job.pk).last_error


def test_timeout_fails_the_attempt_and_asks_the_handler_to_stop(worker_pool, custom_handler):
    stopped = threading.Event()

    def stubborn(ctx, payload):
        ctx.wait(30)
        if ctx.should_stop():
            stopped.set()
        return {"late": True}

    custom_handler("stubborn", stubborn)
    job = services.enqueue("stubborn", {}, timeout_seconds=1, max_attempts=1)
    pool = worker_pool(threads=1)
    pool.test_signals.wait_ended([job.pk], "failed", timeout=15)  # the renewer's write
    assert stopped.wait(5), "the handler was asked to stop"
    row = Job.objects.get(pk=job.pk)
    assert "timed out" in row.last_error and row.result is None
    # the late result came back after the timeout and was fenced away (the completer, which
    # signals only what it wrote, has written all by the end of a shutdown)
    pool.shutdown(grace=5)
    assert "lease_lost" in kinds(job)


def test_cancel_running_job_stops_the_handler_and_records_cancelled(worker_pool):
    job = services.enqueue("sleep", {"seconds": 30})
    pool = worker_pool(threads=1)
    pool.test_signals.wait_started([job.id])
    services.cancel(job.pk)
    pool.test_signals.wait_ended([job.id], "cancelled")
    events = kinds(job)
    assert events[-1] == "cancelled" and "cancel_requested" in events
    assert "succeeded" not in events


def test_snooze_requeues_without_spending_an_attempt(worker_pool, custom_handler):
    def snoozer(ctx, payload):
        if ctx.attempt == 1 and not Job.objects.filter(pk=ctx.job_id, events__kind="snoozed").exists():
            ctx.snooze(0.2)
        return {"attempt": ctx.attempt}

    custom_handler("snoozer", snoozer)
    job = services.enqueue("snoozer", {}, max_attempts=1)
    pool = worker_pool(threads=1)
    pool.test_signals.wait_ended([job.id], "succeeded")
    row = Job.objects.get(pk=job.pk)
    assert row.attempts == 1 and "snoozed" in kinds(job)


def test_expired_lease_is_requeued_by_the_reaper(worker_pool, custom_handler):
    """A worker that stops renewing (here: the job is claimed outside any pool, then left)
    loses the job to the reaper, which requeues it for a healthy worker."""
    job = services.enqueue("noop", {}, max_attempts=3)
    [abandoned] = services.claim(worker_ids=["dead-worker-1"], lease_seconds=1)
    pool = worker_pool(threads=2)  # its reaper runs every 0.5 s
    pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    events = kinds(job)
    assert events.index("lease_expired") < events.index("succeeded")
    assert Job.objects.get(pk=job.pk).attempts == 2
    with pytest.raises(LeaseLost):
        services.complete(job.pk, abandoned.lease_token, worker_id="dead-worker-1")


def test_a_worker_that_lost_its_lease_is_told_to_stop_and_cannot_complete(worker_pool, custom_handler):
    started, stop_seen = threading.Event(), threading.Event()

    def slow(ctx, payload):
        started.set()
        while not ctx.wait(0.05):
            pass
        stop_seen.set()
        return {"late": True}

    custom_handler("slow_fenced", slow)
    job = services.enqueue("slow_fenced", {}, max_attempts=3)
    pool = worker_pool(threads=1)
    assert started.wait(10)
    # Another worker now holds the job under a new token (as after a reap and a reclaim,
    # following a long GC pause or a network split). Done in one write, so that this pool's
    # renewer cannot extend the lease between "expire" and "reap".
    Job.objects.filter(pk=job.pk).update(lease_token=uuid.uuid4(), locked_by="other-host-1-1")
    assert stop_seen.wait(5), "the handler was asked to stop after the lost renewal"
    pool.shutdown(grace=5)  # the refused completion written (the completer signals none)
    assert "lease_lost" in kinds(job)
    assert Job.objects.get(pk=job.pk).result is None, "the stale worker's result was discarded"
    assert not HistoryEvent.objects.filter(job_id=job.pk, kind="succeeded").exists()


def test_graceful_shutdown_releases_unfinished_jobs_without_charging_an_attempt(worker_pool):
    long_job = services.enqueue("sleep", {"seconds": 30})
    pool = worker_pool(threads=1)
    pool.test_signals.wait_started([long_job.id])
    started = time.monotonic()
    pool.shutdown(grace=0.5)
    assert time.monotonic() - started < 5
    row = Job.objects.get(pk=long_job.pk)
    assert row.status == "queued" and row.attempts == 0 and row.locked_by is None
    assert kinds(long_job)[-1] == "released"


def test_a_handler_write_refused_after_the_shutdown_released_its_job_raises_job_cancelled(
        worker_pool, custom_handler):
    """The shutdown asks a handler still running past its grace to stop, then releases its job:
    a progress write made after that (the handler had not looked at its stop yet) is refused,
    and the handler hears the stop, JobCancelled("shutdown"), not a lost lease."""
    raised, done = [], threading.Event()

    def late_writer(ctx, payload):
        try:
            # Deaf to the stop until its job was given back: the write then comes after both.
            pools[0].test_signals.wait_released([ctx.job_id], timeout=20)
            ctx.progress(50, "after the release")
        except BaseException as exc:
            raised.append(exc)
            raise
        finally:
            done.set()

    custom_handler("late_writer", late_writer)
    job = services.enqueue("late_writer", {}, max_attempts=3)
    pools = [worker_pool(threads=1)]
    pools[0].test_signals.wait_started([job.id])
    pools[0].shutdown(grace=0)
    assert done.wait(10), "the handler returned"
    assert [type(e) for e in raised] == [JobCancelled], raised
    assert str(raised[0]) == "shutdown"
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts, row.progress_percent) == ("queued", 0, None)
    assert "lease_lost" not in kinds(job)


@pytest.mark.parametrize("charge", [None, "over the memory limit"], ids=["release", "charge"])
def test_a_handler_woken_by_the_shutdown_finds_its_job_already_given_up(
        worker_pool, custom_handler, charge):
    """Past the grace, the shutdown releases the job (or, for a memory recycle, charges it)
    and only then wakes the handler: one that returns when asked to stop cannot complete its
    job first."""
    seen, returned = [], threading.Event()

    def returns_when_stopped(ctx, payload):
        ctx.wait(30)
        seen.append(Job.objects.values_list("status", flat=True).get(pk=ctx.job_id))
        returned.set()
        return {"late": True}

    custom_handler("returns_when_stopped", returns_when_stopped)
    job = services.enqueue("returns_when_stopped", {}, max_attempts=1)
    pool = worker_pool(threads=1)
    pool.test_signals.wait_started([job.id])
    pool.shutdown(grace=0, charge=charge)
    assert returned.wait(10), "the handler was woken"
    given_up = "queued" if charge is None else "failed"
    assert seen == [given_up]
    assert status_of(job) == given_up and "succeeded" not in kinds(job)


@override_settings(JOB_RETRY_BASE_SECONDS=2.0, JOB_RETRY_MAX_SECONDS=100.0, JOB_RETRY_JITTER=0.0)
def test_backoff_schedule_is_exponential_and_capped():
    delays = []
    job = services.enqueue("noop", {}, max_attempts=10)
    for attempt in range(1, 9):
        Job.objects.filter(pk=job.pk).update(available_at=TxNow())
        [c] = services.claim(worker_ids=["w"])
        status, delay = services.fail(job.pk, c.lease_token, worker_id="w", error="x")
        delays.append(round(delay, 3))
    # base * 2^attempt, capped at 100
    assert delays == [4.0, 8.0, 16.0, 32.0, 64.0, 100.0, 100.0, 100.0]


@override_settings(JOB_RETRY_BASE_SECONDS=10.0, JOB_RETRY_MAX_SECONDS=10_000.0, JOB_RETRY_JITTER=0.5)
def test_backoff_jitter_stays_within_its_band():
    job = services.enqueue("noop", {}, max_attempts=3)
    [c] = services.claim(worker_ids=["w"])
    _, delay = services.fail(job.pk, c.lease_token, worker_id="w", error="x")
    assert 10.0 <= delay <= 30.0  # 20 s +/- 50 %
    row = Job.objects.annotate(wait=F("available_at") - F("updated_at")).get(pk=job.pk)
    assert abs(row.wait.total_seconds() - delay) < 0.01


def test_jobs_done_counts_the_attempts_that_finished_not_those_started(
        worker_pool, custom_handler):
    release = threading.Event()
    custom_handler("gated", lambda ctx, payload: release.wait(10))
    gated = [services.enqueue("gated", {"i": i}) for i in range(2)]
    done = services.enqueue("noop", {})
    retried = services.enqueue("flaky", {"fail_times": 1})
    pool = worker_pool(threads=4)
    pool.test_signals.wait_started([j.id for j in gated])
    pool.test_signals.wait_ended([done.id], "succeeded")
    pool.test_signals.wait_ended([retried.id], "queued")  # a retry scheduled
    # Two running (started, not finished), one success, one attempt failed and retried.
    assert pool.jobs_done() == 2
    release.set()
    pool.test_signals.wait_ended([j.id for j in gated], "succeeded")
    pool.test_signals.wait_ended([retried.id], "succeeded")
    assert pool.jobs_done() == 5
