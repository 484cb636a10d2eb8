"""Durable waits' writes: a park is fenced by the claim's lease token (a worker that lost its
lease parks nothing), a signal sent while the handler runs makes its park due at once (neither
write misses the other), signals are kept per job and name, and a signal for an unknown or
finished job, a name sent twice or bad data are refused with an error naming why."""
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import send_signal, services
from django_pg_jobqueue.exceptions import (
    InvalidJobArgument,
    InvalidTransition,
    JobNotFound,
    LeaseLost,
    SignalAlreadySent,
    SignalWaitTimedOut,
)
from django_pg_jobqueue.models import Job, JobEvent, JobSignal

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(custom_handler):
    custom_handler("waiter", lambda ctx, payload: None)

    def claim():
        job = services.enqueue("waiter", {})
        [claimed] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
        return claimed

    return claim


def test_a_park_with_a_lost_lease_is_refused_and_leaves_the_job_running(running):
    job = running()
    with pytest.raises(LeaseLost):
        services.park(job.id, uuid.uuid4(), worker_id="w-1", signal="approved")
    row = Job.objects.get(pk=job.id)
    assert (row.status, row.lease_token) == ("running", job.lease_token)
    assert not JobSignal.objects.filter(job_id=job.id).exists()
    assert not JobEvent.objects.filter(job_id=job.id, kind="parked").exists()


def test_a_park_gives_the_attempt_back_and_waits_until_its_time(running):
    job = running()
    until = timezone.now() + timedelta(hours=2)
    assert services.park(job.id, job.lease_token, worker_id="w-1", until=until) == "queued"
    row = Job.objects.get(pk=job.id)
    assert (row.status, row.attempts, row.available_at, row.lease_token) == (
        "queued", 0, until, None)
    event = JobEvent.objects.get(job_id=job.id, kind="parked")
    assert event.attempt == 1 and event.data["until"].startswith(until.strftime("%Y-%m-%dT%H"))


def test_a_signal_sent_while_the_handler_runs_makes_its_park_due_at_once(running):
    job = running()
    assert send_signal(job.id, "approved", {"ok": True}) is False  # running: kept, not woken
    before = timezone.now()
    services.park(job.id, job.lease_token, worker_id="w-1", signal="approved",
                  timeout_seconds=3600)
    row = Job.objects.get(pk=job.id)
    assert row.status == "queued" and row.available_at <= timezone.now()
    assert row.available_at >= before - timedelta(seconds=5)
    state = services.signal_state(job.id, "approved")
    assert (state.sent, state.data, state.timed_out) == (True, {"ok": True}, False)


def test_a_signal_wakes_a_job_parked_for_it_and_no_other(running):
    job = running()
    services.park(job.id, job.lease_token, worker_id="w-1", signal="approved")
    parked = Job.objects.get(pk=job.id)
    assert parked.available_at.year == 9999  # no timeout: only a signal (or an operator) ends it
    assert send_signal(job.id, "other", 1) is False  # not the one it waits for
    assert Job.objects.get(pk=job.id).available_at.year == 9999
    assert send_signal(job.id, "approved", 2) is True
    assert Job.objects.get(pk=job.id).available_at <= timezone.now()
    event = JobEvent.objects.filter(job_id=job.id, kind="signalled").latest("id")
    assert event.data == {"signal": "approved", "woke": True}


def test_a_signal_the_job_no_longer_waits_for_does_not_cut_its_next_park_short(running):
    # It waited for "approved", was run again by an operator's run-now, and now sleeps: a late
    # "approved" is kept (the handler may read it) but must not wake the sleep.
    job = running()
    services.park(job.id, job.lease_token, worker_id="w-1", signal="approved")
    services.run_now(job.id)
    [again] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    until = timezone.now() + timedelta(hours=2)
    services.park(job.id, again.lease_token, worker_id="w-1", until=until)
    assert send_signal(job.id, "approved", 3) is False
    assert Job.objects.get(pk=job.id).available_at == until
    assert services.signal_state(job.id, "approved").sent is True


def test_a_wait_times_out_from_its_first_wait_and_a_later_signal_is_refused(running):
    job = running()
    services.park(job.id, job.lease_token, worker_id="w-1", signal="approved",
                  timeout_seconds=0)
    assert services.signal_state(job.id, "approved").timed_out is True
    assert services.signal_state(job.id, "never").timed_out is False
    # The handler went on without it: a late signal must not change what a later run sees.
    with pytest.raises(SignalWaitTimedOut, match="its wait for signal 'approved' timed out"):
        send_signal(job.id, "approved", "late")
    state = services.signal_state(job.id, "approved")
    assert (state.sent, state.timed_out) == (False, True)
    assert not JobEvent.objects.filter(job_id=job.id, kind="signalled").exists()


def test_a_later_wait_keeps_the_timeout_its_first_wait_set(running):
    job = running()
    services.park(job.id, job.lease_token, worker_id="w-1", signal="approved",
                  timeout_seconds=0)
    [again] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.park(again.id, again.lease_token, worker_id="w-1", signal="approved",
                  timeout_seconds=3600)
    assert services.signal_state(job.id, "approved").timed_out is True


def test_a_signal_for_no_such_job_a_finished_job_or_a_name_sent_twice_is_refused(running):
    with pytest.raises(JobNotFound):
        send_signal(10**12, "approved")
    with pytest.raises(JobNotFound):
        send_signal("abc", "approved")
    job = running()
    send_signal(job.id, "approved", 1)
    with pytest.raises(SignalAlreadySent, match="already got signal 'approved'"):
        send_signal(job.id, "approved", 2)
    assert services.signal_state(job.id, "approved").data == 1  # the first one's data
    services.complete_many([services.lifecycle.Completion(
        job.id, job.lease_token, "w-1", None, "waiter", 1, "null")])
    with pytest.raises(InvalidTransition, match="it is succeeded"):
        send_signal(job.id, "later")


@pytest.mark.parametrize("name, data, argument", [
    ("", None, "name"), ("x" * 201, None, "name"), (5, None, "name"), ("a\x00b", None, "name"),
    ("ok", float("nan"), "data"), ("ok", {1: "x"}, "data"), ("ok", object(), "data"),
])
def test_a_bad_signal_name_or_data_is_refused_naming_it(running, name, data, argument):
    job = running()
    with pytest.raises(InvalidJobArgument) as caught:
        send_signal(job.id, name, data)
    assert caught.value.argument == argument
    assert not JobSignal.objects.filter(job_id=job.id).exists()


def test_signal_data_over_the_payload_limit_is_refused_naming_data(running, settings):
    settings.JOB_MAX_PAYLOAD_BYTES = 100
    job = running()
    with pytest.raises(InvalidJobArgument, match="JOB_MAX_PAYLOAD_BYTES") as caught:
        send_signal(job.id, "approved", {"note": "é" * 60})  # 131 bytes of UTF-8 JSON
    assert caught.value.argument == "data"
    assert not JobSignal.objects.filter(job_id=job.id).exists()
    send_signal(job.id, "approved", {"note": "é" * 40})  # 91 bytes: within it
    assert services.signal_state(job.id, "approved").data == {"note": "é" * 40}


def test_deleting_a_finished_job_deletes_its_signals(running):
    job = running()
    send_signal(job.id, "approved")
    services.cancel(job.id)
    services.complete_many([services.lifecycle.Completion(
        job.id, job.lease_token, "w-1", None, "waiter", 1, "null")])
    services.delete(job.id)
    assert not JobSignal.objects.filter(job_id=job.id).exists()


def test_a_cancel_requested_while_the_handler_ran_wins_over_its_park(running):
    job = running()
    services.cancel(job.id)  # running: the cancel is requested
    assert services.park(job.id, job.lease_token, worker_id="w-1", signal="approved") == "cancelled"
    row = Job.objects.get(pk=job.id)
    assert row.status == "cancelled" and row.finished_at is not None
    assert not JobEvent.objects.filter(job_id=job.id, kind="parked").exists()


def test_drain_runs_a_parked_job_again_only_when_its_signal_makes_it_due(custom_handler):
    from django_pg_jobqueue.testing import drain

    custom_handler("approval", lambda ctx, payload: ctx.wait_for_signal("approved"))
    custom_handler("approver", lambda ctx, payload: send_signal(payload["job"], "approved", "ok"))
    waiting = services.enqueue("approval", {})
    result = drain(include_scheduled=True)
    assert (result.ran, result.parked) == (1, 1)  # parked once, not run again and again
    services.enqueue("approver", {"job": waiting.id})
    result = drain()  # the approver's signal makes the parked job due in the same drain
    assert (result.ran, result.succeeded, result.parked) == (2, 2, 0)
    assert Job.objects.get(pk=waiting.id).result == "ok"
