"""Durable waits on a real worker pool: `ctx.wait_for_signal` and `ctx.sleep_until` end the
attempt uncharged and free the worker's thread; the job runs again when its signal arrives
(within a second) or its time comes, finding its recorded steps and the signal's data; a wait
whose timeout passed ends as its handler decides."""
import time
import uuid
from datetime import timedelta

from django.utils import timezone

from django_pg_jobqueue import send_signal, services
from django_pg_jobqueue.exceptions import SignalTimedOut
from django_pg_jobqueue.models import Job, JobEvent


def _approval_handler(calls):
    """A handler with a step before the wait and one after it: `calls` counts each step's
    side effects (the ground truth of what ran)."""

    def handler(ctx, payload):
        ctx.step("reserve", lambda: calls.append(("reserve", ctx.attempt)) or "reserved")
        try:
            data = ctx.wait_for_signal("approved", timeout=payload.get("timeout"))
        except SignalTimedOut:
            return {"decision": "timed out"}
        ctx.step("charge", lambda: calls.append(("charge", ctx.attempt)) or "charged")
        return {"decision": data}

    return handler


def test_a_job_waiting_for_a_signal_frees_the_only_thread_and_resumes_within_a_second_of_it(
        worker_pool, custom_handler):
    calls = []
    custom_handler("approval", _approval_handler(calls))
    custom_handler("quick", lambda ctx, payload: "quick done")
    job = services.enqueue("approval", {"timeout": 300})
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "parked", timeout=15) == {job.id: "parked"}
    parked = Job.objects.get(pk=job.pk)
    assert (parked.status, parked.attempts, parked.locked_by) == ("queued", 0, None)

    # The only thread is free: another job runs while the first one waits.
    other = services.enqueue("quick", {})
    assert pool.test_signals.wait_ended([other.id], "succeeded", timeout=15)
    assert Job.objects.get(pk=job.pk).status == "queued"

    sent_at = time.monotonic()
    assert send_signal(job.id, "approved", {"by": "alice"}) is True
    assert pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    assert time.monotonic() - sent_at < 1.0
    done = Job.objects.get(pk=job.pk)
    assert (done.status, done.result, done.attempts) == ("succeeded",
                                                         {"decision": {"by": "alice"}}, 1)
    assert calls == [("reserve", 1), ("charge", 1)]  # the step before the wait ran once
    kinds = list(JobEvent.objects.filter(job_id=job.pk).values_list("kind", flat=True))
    assert kinds.count("parked") == 1 and kinds.count("signalled") == 1


def test_a_signal_sent_before_the_wait_is_kept_and_returned_without_parking(
        worker_pool, custom_handler):
    calls = []
    custom_handler("approval", _approval_handler(calls))
    job = services.enqueue("approval", {})
    assert send_signal(job.id, "approved", "yes") is False  # kept: the job does not wait yet
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    assert Job.objects.get(pk=job.pk).result == {"decision": "yes"}
    assert not JobEvent.objects.filter(job_id=job.pk, kind="parked").exists()


def test_a_wait_whose_timeout_passed_ends_as_its_handler_decides(worker_pool, custom_handler):
    calls = []
    custom_handler("approval", _approval_handler(calls))
    custom_handler("strict_approval",
                   lambda ctx, payload: ctx.wait_for_signal("approved", timeout=0.5))
    caught = services.enqueue("approval", {"timeout": 0.5})
    uncaught = services.enqueue("strict_approval", {})
    pool = worker_pool(threads=1)
    ended = pool.test_signals.wait_finished([caught.id, uncaught.id], timeout=20)
    assert ended == {caught.id: "succeeded", uncaught.id: "failed"}
    assert Job.objects.get(pk=caught.pk).result == {"decision": "timed out"}
    assert calls == [("reserve", 1)]
    failed = Job.objects.get(pk=uncaught.pk)
    assert failed.attempts == 1 and "no signal 'approved' arrived" in failed.last_error
    # Each ran twice: parked, then woken by its timeout; neither attempt before was charged.
    assert JobEvent.objects.filter(job_id__in=[caught.pk, uncaught.pk], kind="parked").count() == 2


def test_sleep_until_frees_the_thread_and_resumes_after_the_time(worker_pool, custom_handler):
    calls = []

    def sleeper(ctx, payload):
        until = timezone.datetime.fromisoformat(payload["until"])
        ctx.step("before", lambda: calls.append("before"))
        ctx.sleep_until(until)
        calls.append(("after", ctx.attempt))
        return "woke"

    custom_handler("sleeper", sleeper)
    until = timezone.now() + timedelta(seconds=1.5)
    job = services.enqueue("sleeper", {"until": until.isoformat()})
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "parked", timeout=15)
    assert Job.objects.get(pk=job.pk).available_at == until
    assert pool.test_signals.wait_ended([job.id], "succeeded", timeout=20)
    done = Job.objects.get(pk=job.pk)
    assert done.started_at >= until and done.attempts == 1
    assert calls == ["before", ("after", 1)]


def test_a_cancel_of_a_parked_job_ends_it_and_its_wait(worker_pool, custom_handler):
    calls = []
    custom_handler("approval", _approval_handler(calls))
    job = services.enqueue("approval", {})
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "parked", timeout=15)
    assert services.cancel(job.id).status == "cancelled"
    try:
        send_signal(job.id, "approved")
    except Exception as exc:  # noqa: BLE001 - the error's type is the assertion
        assert type(exc).__name__ == "InvalidTransition"
    else:
        raise AssertionError("a cancelled job took a signal")


def test_an_async_handler_waits_for_its_signal_the_same_way(worker_pool, custom_handler):
    async def approval(ctx, payload):
        return {"decision": await ctx.await_for_signal("approved", timeout=300)}

    custom_handler("async_approval", approval)
    job = services.enqueue("async_approval", {})
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "parked", timeout=15)
    assert send_signal(job.id, "approved", [1, 2]) is True
    assert pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    assert Job.objects.get(pk=job.pk).result == {"decision": [1, 2]}


def test_a_lost_lease_leaves_the_wait_to_the_job_s_new_owner(worker_pool, custom_handler):
    """The handler's attempt lost its job (another claim holds it now, under its own lease
    token) before it waited: its park is refused, and the job is left as the new owner holds
    it."""
    thief = uuid.uuid4()

    def approval(ctx, payload):
        Job.objects.filter(pk=ctx.job_id).update(lease_token=thief)
        return ctx.wait_for_signal("approved")

    custom_handler("stolen_approval", approval)
    job = services.enqueue("stolen_approval", {})
    pool = worker_pool(threads=1)
    assert pool.test_signals.wait_ended([job.id], "lease_lost", timeout=15)
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.lease_token, row.attempts) == ("running", thief, 1)
    assert not JobEvent.objects.filter(job_id=job.pk, kind="parked").exists()
