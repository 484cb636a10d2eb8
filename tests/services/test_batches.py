"""Batches with callbacks, run by `testing.drain` (the worker's executor): members joined in
the enqueue's transaction, callbacks enqueued once when the last member finishes (on_complete
always, on_success only when every member succeeded, on_failure when one did not) with the
batch's counts and, when asked, its members' results; progress counted from the members;
cancelling a batch cancels its pending members; bad arguments refused before anything is
written; the finish guarded so that a second settle enqueues nothing."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import batch_progress, services
from django_pg_jobqueue.exceptions import BatchNotFound, InvalidJobArgument
from django_pg_jobqueue.models import Job, JobBatch
from django_pg_jobqueue.services import batches
from django_pg_jobqueue.testing import drain
from tests.handlers import batch_handlers  # noqa: F401  (registers the handlers in this process)

pytestmark = pytest.mark.django_db

CALLBACKS = {"on_complete": {"type": "batch_callback", "payload": {"tag": "complete"}},
             "on_success": {"type": "batch_callback", "payload": {"tag": "success"}},
             "on_failure": {"type": "batch_callback", "payload": {"tag": "failure"}}}


def members(n, fail=()):
    return [{"type": "batch_member", "payload": {"n": i, "fail": i in fail}} for i in range(n)]


def callbacks():
    return {job.payload["tag"]: job for job in Job.objects.filter(type="batch_callback")}


def test_an_all_success_batch_enqueues_on_success_and_on_complete_once_with_its_counts():
    batch = services.enqueue_batch(members(5), **CALLBACKS)
    assert [job.batch_id for job in batch.members] == [batch.id] * 5
    assert Job.objects.filter(batch_id=batch.id).count() == 5
    assert callbacks() == {}  # nothing before the members finish
    drain("batch_member")
    found = callbacks()
    assert set(found) == {"complete", "success"}
    assert found["success"].payload["batch"] == {"id": batch.id, "total": 5, "succeeded": 5,
                                                 "failed": 0, "cancelled": 0}
    batch.refresh_from_db()
    assert batch.finished_at is not None and (batch.succeeded, batch.failed) == (5, 0)
    assert batch.callback_jobs == {"on_complete": found["complete"].id,
                                   "on_success": found["success"].id}
    progress = batch_progress(batch.id)
    assert (progress["done"], progress["succeeded"], progress["finished"]) == (5, 5, True)


def test_a_permanent_failure_enqueues_on_failure_and_on_complete_never_on_success():
    batch = services.enqueue_batch(members(6, fail={3}), **CALLBACKS)
    drain("batch_member")
    found = callbacks()
    assert set(found) == {"complete", "failure"}
    assert found["failure"].payload == {"tag": "failure", "batch": {
        "id": batch.id, "total": 6, "succeeded": 5, "failed": 1, "cancelled": 0}}


def test_the_members_results_are_passed_in_the_order_enqueued_when_asked():
    batch = services.enqueue_batch(members(4, fail={1}), on_complete="batch_callback",
                                   pass_results=True)
    drain("batch_member")
    (callback,) = Job.objects.filter(type="batch_callback")
    assert callback.payload["batch"]["results"] == [0, None, 2, 3]
    assert callback.payload["batch"]["id"] == batch.id


def test_results_over_the_result_size_limit_are_left_out_and_said_so(settings):
    settings.JOB_MAX_RESULT_BYTES = 16
    services.enqueue_batch([{"type": "batch_member", "payload": {"n": "x" * 10}}] * 2,
                           on_complete="batch_callback", pass_results=True)  # 12 bytes each
    drain("batch_member")
    (callback,) = Job.objects.filter(type="batch_callback")
    assert callback.payload["batch"]["results"] is None
    assert callback.payload["batch"]["results_too_large"] is True


def test_a_second_settle_of_a_finished_batch_enqueues_nothing():
    batch = services.enqueue_batch(members(2), **CALLBACKS)
    drain("batch_member")
    assert len(callbacks()) == 2
    assert batches.settle([batch.id]) == []
    assert batches.settle_unfinished() == []
    assert Job.objects.filter(type="batch_callback").count() == 2


def test_the_sweep_finishes_a_batch_whose_last_settle_was_missed(monkeypatch):
    monkeypatch.setattr(batches, "settle_after", lambda ids: None)  # a worker died there
    batch = services.enqueue_batch(members(3), **CALLBACKS)
    drain("batch_member")
    assert callbacks() == {}
    assert batch_progress(batch.id)["finished"] is False
    assert batches.settle_unfinished() == [batch.id]
    assert set(callbacks()) == {"complete", "success"}


def test_progress_counts_pending_running_and_done_while_the_batch_runs():
    batch = services.enqueue_batch(members(4, fail={0}), **CALLBACKS)
    drain("batch_member", max_jobs=2)
    progress = batch_progress(batch.id)
    assert progress["total"] == 4 and progress["pending"] == 2 and progress["running"] == 0
    assert (progress["succeeded"], progress["failed"], progress["done"]) == (1, 1, 2)
    assert progress["finished"] is False and progress["callback_jobs"] == {}


def test_cancelling_a_batch_cancels_its_pending_members_and_finishes_it_with_on_failure():
    batch = services.enqueue_batch(members(5), **CALLBACKS)
    drain("batch_member", max_jobs=2)
    services.cancel_batch(batch.id, actor="alice")
    statuses = sorted(Job.objects.filter(batch_id=batch.id).values_list("status", flat=True))
    assert statuses == ["cancelled"] * 3 + ["succeeded"] * 2
    found = callbacks()
    assert set(found) == {"complete", "failure"}
    assert found["failure"].payload["batch"]["cancelled"] == 3
    batch.refresh_from_db()
    assert batch.cancelled_at is not None
    services.cancel_batch(batch.id)  # again: nothing more
    assert Job.objects.filter(type="batch_callback").count() == 2


def test_cancelling_a_member_that_was_the_last_one_pending_finishes_its_batch():
    batch = services.enqueue_batch(members(2), **CALLBACKS)
    drain("batch_member", max_jobs=1)
    pending = Job.objects.get(batch_id=batch.id, status="queued")
    services.cancel(pending.id)
    assert set(callbacks()) == {"complete", "failure"}


def test_a_batch_with_no_member_created_finishes_at_once():
    batch = services.enqueue_batch([], on_complete="batch_callback")
    assert batch.finished_at is not None and batch.total == 0
    assert Job.objects.filter(type="batch_callback").count() == 1


def test_a_replayed_job_does_not_join_the_batch():
    first = services.enqueue("batch_member", {"n": 1}, idempotency_key="k1")
    batch = services.enqueue_batch([{"type": "batch_member", "payload": {"n": 1},
                                     "idempotency_key": "k1"}, *members(1)])
    assert batch.members[0].id == first.id and batch.total == 1
    assert Job.objects.get(pk=first.id).batch_id is None


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"on_complete": 42}, "on_complete"),
    ({"on_success": {"type": "no_such_type"}}, "on_success"),
    ({"on_failure": {"type": "batch_callback", "delay_seconds": 5}}, "on_failure"),
    ({"on_complete": {"type": "batch_callback", "payload": {"batch": 1}}}, "on_complete"),
    ({"on_complete": {"type": "batch_callback", "priority": 1000}}, "on_complete"),
    ({"pass_results": "yes"}, "pass_results"),
])
def test_a_bad_callback_is_refused_naming_it_and_nothing_is_written(kwargs, argument):
    with pytest.raises(InvalidJobArgument) as caught:
        services.enqueue_batch(members(2), **kwargs)
    assert caught.value.argument == argument
    assert not Job.objects.exists() and not JobBatch.objects.exists()


def test_a_bad_member_is_refused_with_its_index_and_nothing_is_written():
    with pytest.raises(InvalidJobArgument) as caught:
        services.enqueue_batch([*members(2), {"type": "batch_member", "priority": "high"}],
                               on_complete="batch_callback")
    assert (caught.value.argument, caught.value.index) == ("priority", 2)
    assert not Job.objects.exists() and not JobBatch.objects.exists()


def test_an_unknown_batch_is_not_found():
    with pytest.raises(BatchNotFound):
        batch_progress(10 ** 12)
    with pytest.raises(BatchNotFound):
        services.cancel_batch("nope")


@pytest.mark.django_db(transaction=True)
def test_settles_racing_on_threads_finish_the_batch_once(monkeypatch):
    import threading

    from django.db import connections

    monkeypatch.setattr(batches, "settle_after", lambda ids: None)  # every settle left to race
    batch = services.enqueue_batch(members(3, fail={1}), **CALLBACKS)
    drain("batch_member")
    barrier, won = threading.Barrier(6), []

    def settle():
        try:
            barrier.wait()
            won.extend(batches.settle([batch.id]))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=settle) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert won == [batch.id]
    assert sorted(callbacks()) == ["complete", "failure"]
    assert Job.objects.filter(type="batch_callback").count() == 2


def test_jobs_outside_a_batch_never_reach_the_batches_statements(monkeypatch):
    calls = []
    monkeypatch.setattr(batches, "settle", lambda ids: calls.append(list(ids)) or [])
    services.enqueue_many(members(5, fail={2}))  # not a batch: succeed, and fail for good
    drain("batch_member")
    assert calls == []
    batch = services.enqueue_batch(members(2, fail={1}))
    drain("batch_member")
    assert calls == [[batch.id], [batch.id]]  # after each member's outcome


# Every way a member ends finishes its batch at once, through the one hook every outcome
# writer calls (services/finishing.py), not at the reaper's next sweep: the sweep is switched
# off in these tests so that only the hook can have finished it.
@pytest.fixture
def no_sweep(monkeypatch):
    monkeypatch.setattr(batches, "settle_unfinished", lambda **_: [])


def test_a_member_that_expires_unstarted_finishes_its_batch(no_sweep):
    batch = services.enqueue_batch([{"type": "batch_member", "payload": {"n": 0},
                                     "expires_in_seconds": 30}], **CALLBACKS)
    Job.objects.filter(batch_id=batch.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire_overdue() == 1
    assert set(callbacks()) == {"complete", "failure"}


def test_a_member_cancelled_because_its_dependency_was_finishes_its_batch(no_sweep):
    outside = services.enqueue("batch_member", {"n": 99})
    batch = services.enqueue_batch([{"type": "batch_member", "payload": {"n": 0},
                                     "after": [outside.id]}], **CALLBACKS)
    services.cancel(outside.id)  # cascades to the member, which was the batch's last
    assert Job.objects.get(batch_id=batch.id).status == "cancelled"
    found = callbacks()
    assert set(found) == {"complete", "failure"}
    assert found["failure"].payload["batch"]["cancelled"] == 1


def test_a_member_released_at_shutdown_after_its_cancel_was_asked_finishes_its_batch(no_sweep):
    services.enqueue_batch(members(1), **CALLBACKS)
    [claimed] = services.claim(worker_ids=["w-1"], types=["batch_member"])
    services.cancel(claimed.id)  # running: a cancel request
    services.release_many([(claimed.id, claimed.lease_token, "w-1")])
    assert Job.objects.get(pk=claimed.id).status == "cancelled"
    assert set(callbacks()) == {"complete", "failure"}


def test_a_member_failed_because_no_worker_knows_its_type_finishes_its_batch(no_sweep, settings):
    settings.JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS = 0
    batch = services.enqueue_batch([{"type": "batch_member", "payload": {"n": 0}}], **CALLBACKS)
    [claimed] = services.claim(worker_ids=["w-1"], types=["batch_member"])
    status = services.release_unknown_type(claimed.id, claimed.lease_token, worker_id="w-1",
                                           job_type="batch_member")
    assert status == "failed" and Job.objects.get(batch_id=batch.id).status == "failed"
    assert set(callbacks()) == {"complete", "failure"}
