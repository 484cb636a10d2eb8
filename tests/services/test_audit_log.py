"""The audit log: each operator action that changed something leaves one entry (who, what, on
what, with what), written by its service in the action's own transaction; a refused, rolled
back or no-op action leaves none."""
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import InvalidTransition
from django_pg_jobqueue.models import AuditLogEntry
from django_pg_jobqueue.services import bulk_actions, bulk_retry
from django_pg_jobqueue.services.deleting import delete

pytestmark = pytest.mark.django_db


def _entries():
    return [(e.actor, e.action, e.target_kind, e.target, e.data)
            for e in AuditLogEntry.objects.order_by("id")]


def _failed(queue="default"):
    job = services.enqueue("noop", queue=queue, max_attempts=1)
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.fail(c.id, c.lease_token, worker_id="w-1", error="boom")
    return job


def _succeeded():
    job = services.enqueue("noop")
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job.id])
    services.complete(c.id, c.lease_token, worker_id="w-1", result={})
    return job


def test_each_job_action_records_who_did_it_to_which_job():
    queued = services.enqueue("noop")
    services.cancel(queued.id, actor="alice")
    failed = _failed()
    services.retry(failed.id, actor="bob")
    done = _succeeded()
    copy = services.rerun(done.id, actor="carol")
    delayed = services.enqueue("noop", delay_seconds=timedelta(hours=1))
    services.run_now(delayed.id, actor="dave")
    services.cancel(delayed.id, actor="")
    delete(delayed.id, actor="erin")

    entries = _entries()
    assert [e[:4] for e in entries] == [
        ("alice", "cancel", "job", str(queued.id)),
        ("bob", "retry", "job", str(failed.id)),
        ("carol", "rerun", "job", str(done.id)),
        ("dave", "run_now", "job", str(delayed.id)),
        ("", "cancel", "job", str(delayed.id)),
        ("erin", "delete", "job", str(delayed.id)),
    ]
    assert entries[0][4] == {"status": "queued"}
    assert entries[2][4] == {"copy": copy.id}
    assert set(entries[3][4]) == {"available_at"}  # [old, new]
    assert entries[5][4] == {"events": 3}  # created, edited, cancelled: gone with the job


def test_an_edit_records_what_changed_old_and_new():
    job = services.enqueue("noop", priority=0)
    services.edit(job.id, priority=5, actor="alice")
    [(_, action, _, _, data)] = _entries()
    assert action == "edit" and data == {"priority": [0, 5]}


def test_a_refused_action_records_nothing():
    done = _succeeded()
    with pytest.raises(InvalidTransition):
        services.cancel(done.id, actor="alice")
    with pytest.raises(InvalidTransition):
        services.retry(done.id, actor="alice")
    assert _entries() == []


def test_an_action_whose_transaction_rolls_back_leaves_no_entry():
    job = services.enqueue("noop")
    with pytest.raises(RuntimeError), transaction.atomic():
        services.cancel(job.id, actor="alice")
        raise RuntimeError("the caller's transaction fails after the cancel")
    assert _entries() == []
    job.refresh_from_db()
    assert job.status == "queued"


def test_an_action_that_changes_nothing_records_nothing():
    job = services.enqueue("noop", priority=3)
    services.edit(job.id, priority=3, actor="alice")
    services.run_now(job.id, actor="alice")  # already due
    services.enqueue("noop", queue="media")
    services.resume_queue("media", actor="alice")  # not paused
    services.set_queue_limit("media", None, actor="alice")  # no limit already
    assert _entries() == []


def test_queue_actions_record_the_setting_old_and_new():
    services.enqueue("noop", queue="media")
    services.pause_queue("media", actor="alice")
    services.pause_queue("media", actor="alice")  # paused already: nothing more
    services.set_queue_limit("media", 3, actor="bob")
    services.set_queue_limit("media", 4, actor="bob")
    services.resume_queue("media", actor="carol")
    assert _entries() == [
        ("alice", "pause_queue", "queue", "media", {"paused": [False, True]}),
        ("bob", "set_queue_limit", "queue", "media", {"concurrency_limit": [None, 3]}),
        ("bob", "set_queue_limit", "queue", "media", {"concurrency_limit": [3, 4]}),
        ("carol", "resume_queue", "queue", "media", {"paused": [True, False]}),
    ]


def test_rate_limit_changes_and_a_batch_cancel_are_recorded():
    services.set_rate_limit(type="noop", max_starts=5, period_seconds=1, actor="alice")
    services.set_rate_limit(type="noop", max_starts=5, period_seconds=1, actor="alice")  # same
    services.set_rate_limit(type="noop", max_starts=9, period_seconds=2, actor="bob")
    assert services.remove_rate_limit(type="noop", actor="carol") is True
    assert services.remove_rate_limit(type="noop", actor="carol") is False  # none: nothing
    batch = services.enqueue_batch([{"type": "noop"}, {"type": "noop"}])
    services.cancel_batch(batch.id, actor="dave")
    assert _entries() == [
        ("alice", "set_rate_limit", "rate_limit", "type:noop",
         {"max_starts": [None, 5], "period_seconds": [None, 1.0]}),
        ("bob", "set_rate_limit", "rate_limit", "type:noop",
         {"max_starts": [5, 9], "period_seconds": [1.0, 2.0]}),
        ("carol", "remove_rate_limit", "rate_limit", "type:noop", {}),
        ("dave", "cancel_batch", "batch", str(batch.id), {"cancelled": 2}),
    ]


def test_bulk_actions_record_each_job_once():
    jobs = [services.enqueue("noop") for _ in range(3)]
    outcome = bulk_actions.apply_to_ids("cancel", [j.id for j in jobs] * 2, actor="alice")
    assert outcome.done == 3
    assert [e[1:4] for e in _entries()] == [("cancel", "job", str(j.id)) for j in jobs]


def test_the_dead_letters_retry_by_filter_records_each_job_with_the_filter():
    failed = [_failed() for _ in range(3)]
    assert bulk_retry.retry_matching(type="noop", batch_size=2, actor="alice") == 3
    entries = _entries()
    assert sorted(int(e[3]) for e in entries) == [j.id for j in failed]
    assert {(e[0], e[1]) for e in entries} == {("alice", "retry")}
    assert entries[0][4] == {"bulk": True, "filter": {"type": "noop"}}


@override_settings(JOB_PERIODIC={"new-year": {"cron": "0 0 1 1 *", "type": "noop"}})
def test_schedule_actions_record_the_schedule_and_a_run_nows_job():
    job = services.run_schedule("new-year", actor="alice")
    assert services.pause_schedule("new-year", actor="bob")
    assert not services.pause_schedule("new-year", actor="bob")  # paused already: nothing
    assert services.resume_schedule("new-year", actor="carol")
    assert _entries() == [
        ("alice", "run_schedule", "schedule", "new-year", {"job": job.id}),
        ("bob", "pause_schedule", "schedule", "new-year", {}),
        ("carol", "resume_schedule", "schedule", "new-year", {}),
    ]
