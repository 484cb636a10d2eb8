"""audit_jobs: a clean history passes; each kind of corruption is reported, and the command
exits non-zero with a readable report."""
import io
import uuid

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.exceptions import LeaseLost
from django_pg_jobqueue.models import HistoryEvent, Job, JobEvent
from django_pg_jobqueue.services.lifecycle import Completion
from django_pg_jobqueue.testing import expire_lease, run_reaper

pytestmark = pytest.mark.django_db


def _sql(statement, params=()):
    with connection.cursor() as cur:
        cur.execute(statement, params)


def _claim(job, worker="w1"):
    return services.claim(worker_ids=[worker], job_ids=[job.id])[0]


def _checks(report):
    return {v.check for v in report.violations}


def _run_command(*args):
    out = io.StringIO()
    try:
        call_command("audit_jobs", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def test_every_transition_of_a_realistic_history_audits_clean():
    done = services.enqueue("noop")
    c = _claim(done)
    services.record_progress(done.id, c.lease_token, worker_id="w1", percent=50)
    services.log_message(done.id, c.lease_token, worker_id="w1", message="half way")
    services.complete(done.id, c.lease_token, worker_id="w1", result={"ok": 1})

    retried = services.enqueue("flaky", max_attempts=3)
    c = _claim(retried)
    services.fail(retried.id, c.lease_token, worker_id="w1", error="boom")      # -> queued
    _sql("UPDATE jobs SET available_at = now() WHERE id = %s", [retried.id])
    c = _claim(retried, "w2")
    services.fail(retried.id, c.lease_token, worker_id="w2", error="boom", permanent=True)
    services.retry(retried.id, actor="ops")                                       # failed -> queued

    reaped = services.enqueue("noop")
    stale = _claim(reaped)
    expire_lease(reaped)
    assert run_reaper() == {"queued": 1}
    with pytest.raises(LeaseLost):
        services.complete(reaped.id, stale.lease_token, worker_id="w1")          # fenced: lease_lost
    _sql("UPDATE jobs SET available_at = now() WHERE id = %s", [reaped.id])
    c = _claim(reaped, "w2")
    services.release_many([(reaped.id, c.lease_token, "w2")])                     # uncharged
    c = _claim(reaped, "w3")
    services.snooze(reaped.id, c.lease_token, worker_id="w3", seconds=0)

    services.cancel(services.enqueue("noop").id)                                  # queued -> cancelled
    running = services.enqueue("noop")
    c = _claim(running)
    services.cancel(running.id)                                                   # cancel_requested
    services.complete(running.id, c.lease_token, worker_id="w1")                  # -> cancelled
    services.enqueue("noop")

    report = audit()
    assert report.ok, report.format()
    assert report.jobs == 6
    out, error = _run_command()
    assert error is None
    assert "result: clean" in out


def test_a_status_written_without_its_event_fails_the_replay():
    job = services.enqueue("noop")
    _sql("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE id = %s", [job.id])
    report = audit()
    assert _checks(report) == {"replay"}
    assert "events replay to queued, but the job is succeeded" in report.violations[0].message


def test_a_second_success_under_another_lease_token_is_reported():
    job = services.enqueue("noop")
    c = _claim(job)
    services.complete(job.id, c.lease_token, worker_id="w1")
    JobEvent.objects.create(job_id=job.id, kind="succeeded", attempt=1,
                            data={"lease_token": str(uuid.uuid4())})
    report = audit()
    assert "double_success" in _checks(report)
    out, error = _run_command()
    assert error and "violation" in error
    assert "FAIL  at most one success per job: 1 violation(s)" in out
    assert f"job {job.id}: 2 succeeded events" in out


def test_a_stale_workers_write_applied_after_a_reclaim_is_reported():
    job = services.enqueue("noop")
    old = _claim(job, "stale")
    expire_lease(job)
    run_reaper()
    _sql("UPDATE jobs SET available_at = now() WHERE id = %s", [job.id])
    fresh = _claim(job, "fresh")
    # What a queue that checks only `status = 'running'` would do: let the stale worker finish.
    # Its outcome copies the running attempt's start from the row (sql.attempt_start), whose
    # token is not the one it presented (sql.stale_start keeps it).
    _sql("UPDATE jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL,"
         " lease_token = NULL, lease_expires_at = NULL WHERE id = %s", [job.id])
    JobEvent.objects.create(job_id=job.id, kind="succeeded", attempt=2, worker_id="stale",
                            data={"lease_token": str(old.lease_token),
                                  "started_at": fresh.started_at.isoformat(),
                                  "start_lease_token": str(fresh.lease_token)})
    report = audit()
    assert _checks(report) == {"replay"}
    assert "a stale write was applied" in report.violations[0].message


def test_a_running_job_whose_lease_expired_long_ago_is_reported_as_unreaped():
    job = services.enqueue("noop")
    _claim(job)
    _sql("UPDATE jobs SET lease_expires_at = now() - interval '5 minutes' WHERE id = %s", [job.id])
    report = audit()
    assert _checks(report) == {"stale_lease"}
    assert "no reaper is running" in report.violations[0].message
    assert audit(stale_after_seconds=600).ok


def test_attempts_over_max_attempts_are_reported_even_without_the_constraint():
    job = services.enqueue("noop", max_attempts=2)
    _sql("ALTER TABLE jobs DROP CONSTRAINT job_attempts_within_max")
    _sql("ALTER TABLE jobs DROP CONSTRAINT job_queued_has_attempt_left")
    _sql("UPDATE jobs SET attempts = 5 WHERE id = %s", [job.id])
    report = audit()
    assert "attempts_over_max" in _checks(report)
    assert "attempts 5 > max_attempts 2" in report.format()


def test_a_finished_job_that_still_holds_a_lock_is_reported():
    job = services.enqueue("noop")
    c = _claim(job)
    services.complete(job.id, c.lease_token, worker_id="w1")
    _sql("ALTER TABLE jobs DROP CONSTRAINT job_finished_has_finish_time_and_no_lock")
    _sql("UPDATE jobs SET locked_by = 'w1' WHERE id = %s", [job.id])
    report = audit()
    assert _checks(report) == {"finished_with_lock"}
    assert "succeeded but still holds locked_by=w1" in report.violations[0].message


def test_an_attempt_charged_twice_is_reported():
    job = services.enqueue("noop")
    _claim(job)
    Job.objects.filter(pk=job.id).update(attempts=2)
    report = audit()
    assert _checks(report) == {"replay"}
    # The running attempt's start is its job row (no event): attempt 2, where 1 was due.
    assert "is attempt 2, expected 1" in report.violations[0].message


def test_the_command_can_audit_chosen_jobs_and_print_json():
    good = services.enqueue("noop")
    bad = services.enqueue("noop")
    _sql("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = %s", [bad.id])
    out, error = _run_command("--job", str(good.id))
    assert error is None
    out, error = _run_command("--json")
    assert error
    assert '"replay": 1' in out


def _reclaimed(job, old_worker="w1", new_worker="w2"):
    """`job` claimed by `old_worker`, its lease expired and reaped, then claimed again by
    `new_worker`: the first claim and the second."""
    old = _claim(job, old_worker)
    expire_lease(job)
    run_reaper()
    _sql("UPDATE jobs SET available_at = now() WHERE id = %s", [job.id])
    return old, _claim(job, new_worker)


# The overlap is read from times: an attempt's start (the claim's now(), kept on the row and
# then in its outcome's event) against the older attempt's late signs (their now()). Inside
# one test transaction every now() is the same: these tests commit each step.
@pytest.mark.django_db(transaction=True)
def test_two_attempts_of_one_job_that_overlapped_are_reported():
    # The real sequence: the first worker's handler outlived its lease, the job was reaped
    # and claimed again, and then the first worker's success came in, refused (fencing).
    job = services.enqueue("noop")
    old, new = _reclaimed(job)
    done, refused = services.complete_many([Completion(job.id, old.lease_token, "w1")])
    assert not done and refused
    services.complete(job.id, new.lease_token, worker_id="w2")
    report = audit()
    assert _checks(report) == {"overlapping_attempts"}, report.format()
    [v] = report.violations
    assert v.job_id == job.id
    assert "attempt 1 (claimed by w1) was still under way when attempt 2 was claimed by w2" \
        in v.message and "its complete was refused" in v.message
    # Within the guarantees (at-least-once: handlers must be idempotent), so a notice: listed,
    # and not a failed audit unless --strict asks.
    assert report.ok and report.notices == report.violations
    out, error = _run_command()
    assert error is None
    assert "NOTE  no two attempts of one job under way at once: 1 found" in out
    assert "result: clean; 1 notice(s)" in out
    out, error = _run_command("--strict")
    assert error


@pytest.mark.django_db(transaction=True)
def test_a_stuck_handler_noted_after_its_job_was_claimed_again_is_an_overlap():
    job = services.enqueue("noop")
    old, _ = _reclaimed(job)
    services.record_stuck_handler(job.id, attempt=1, worker_id="w1", message="stuck",
                                  seconds_past_timeout=1.0, lease_token=old.lease_token)
    report = audit()
    assert _checks(report) == {"overlapping_attempts"}
    assert "its handler had not returned" in report.violations[0].message


@pytest.mark.django_db(transaction=True)
def test_signs_of_an_attempt_that_never_ran_or_ended_before_the_next_claim_are_no_overlap():
    # Refused before the next claim: over before it began.
    early = services.enqueue("noop")
    old = _claim(early)
    expire_lease(early)
    run_reaper()
    services.record_lease_lost(early.id, old.lease_token, "w1", "renew", "refused", attempt=1)
    _sql("UPDATE jobs SET available_at = now() WHERE id = %s", [early.id])
    _claim(early, "w2")
    # A job that only waited in a prefetch buffer: its renewal, or its start, refused later.
    for worker, action in (("vm-1-prefetch", "renew"), ("vm-1-1", "start")):
        job = services.enqueue("noop")
        old, _ = _reclaimed(job, old_worker="vm-1-prefetch")
        services.record_lease_lost(job.id, old.lease_token, worker, action, "refused",
                                   attempt=1)
    report = audit()
    assert report.ok, report.format()


def test_an_attempt_the_reaper_charged_though_it_never_started_is_reported():
    # What the reaper did before a prefetched job's start was recorded: a job still waiting in
    # a dead process's buffer charged and, with no attempt left, failed without running.
    job = services.enqueue("noop", max_attempts=1)
    c = _claim(job, "vm-1-prefetch")
    _sql("UPDATE jobs SET status = 'failed', finished_at = now(), locked_by = NULL,"
         " lease_token = NULL, lease_expires_at = NULL WHERE id = %s", [job.id])
    JobEvent.objects.create(job_id=job.id, kind="lease_expired", attempt=1,
                            worker_id="vm-1-prefetch",
                            data={"lease_token": str(c.lease_token), "next_status": "failed",
                                  "started_at": c.started_at.isoformat(), "wait_seconds": 0})
    report = audit()
    assert _checks(report) == {"charged_unstarted"}, report.format()
    assert "attempt 1's lease expired still under vm-1-prefetch, so it never started, yet the " \
        "reaper failed the job for good" in report.violations[0].message
    # The reaper as it is: the same job, given back uncharged; nothing to report.
    again = services.enqueue("noop", max_attempts=1)
    _claim(again, "vm-1-prefetch")
    expire_lease(again)
    assert run_reaper() == {"released": 1}
    assert audit(job_ids=[again.id]).ok


def test_each_ended_attempt_has_one_outcome_carrying_its_start_and_a_running_one_none():
    # One history row per attempt: the claim writes none, the outcome carries the start.
    done = services.enqueue("noop")
    c = _claim(done)
    services.complete(done.id, c.lease_token, worker_id="w1")
    [outcome] = HistoryEvent.objects.filter(job_id=done.id, kind="succeeded")
    assert outcome.data["started_at"] and outcome.data["lease_token"] == str(c.lease_token)
    assert not HistoryEvent.objects.filter(job_id=done.id, kind="claimed").exists()
    running = services.enqueue("noop")
    r = _claim(running)
    assert audit().ok
    # A second outcome for the attempt that ended: counted as another attempt.
    JobEvent.objects.create(job_id=done.id, kind="failed", attempt=1, worker_id="w1",
                            data=dict(outcome.data))
    # An outcome without the start of the attempt it ended: the job never ran, by its history.
    bare = services.enqueue("noop")
    b = _claim(bare)
    services.complete(bare.id, b.lease_token, worker_id="w1")
    with connection.cursor() as cur:  # its outcome, kept on its row (migration 0032)
        cur.execute("UPDATE jobs SET outcome_data = jsonb_build_object('lease_token', %s::text)"
                    " WHERE id = %s", [str(b.lease_token), bare.id])
    # An outcome for the attempt still running: the history ends it, the row says running.
    JobEvent.objects.create(job_id=running.id, kind="retry_scheduled", attempt=1,
                            worker_id="w1", data={"lease_token": str(r.lease_token),
                                                  "started_at": r.started_at.isoformat()})
    report = audit()
    problems: dict = {}
    for v in report.violations:
        problems[v.job_id] = problems.get(v.job_id, "") + v.message + "\n"
    assert _checks(report) == {"replay"} and set(problems) == {done.id, bare.id, running.id}
    assert "succeeded -> running is not an allowed transition" in problems[done.id]
    assert "queued -> succeeded is not an allowed transition" in problems[bare.id]
    assert "the running attempt (its job row) is attempt 1, expected 2" in problems[running.id]
