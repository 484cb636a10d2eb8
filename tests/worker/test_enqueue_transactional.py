"""enqueue() inside the caller's transaction: visible to workers only on commit, gone on
rollback, and workers hear of it on commit (NOTIFY) instead of waiting for their next poll."""
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

import django_pg_jobqueue as jobs
from django_pg_jobqueue.exceptions import UnknownJobType
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.tasks_backend import QueueBackend
from django_pg_jobqueue.tasks_compat import TaskResultDoesNotExist, TaskResultStatus, task_enqueued
from tests.tasks.test_tasks_backend import add

POLL_SECONDS = 5.0


def visible_to_another_session(job_id: int) -> bool:
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as other:
        return other.execute("SELECT count(*) FROM jobs WHERE id = %s", [job_id]).fetchone()[0] == 1


def idle_pool(worker_pool, **kwargs):
    """A pool whose dispatchers have done their start-up claims and now sleep a whole poll
    interval: from here on, only a NOTIFY can make them claim quickly. No fetch cooldown: a
    claim that found nothing does not hold the next notified one back (tests/unit/test_wake.py)."""
    with override_settings(JOB_FETCH_COOLDOWN_SECONDS=0.0):
        pool = worker_pool(threads=2, poll_interval=POLL_SECONDS, **kwargs)
    # LISTEN is up, and the wake-everyone claim that follows it finds nothing: the test's job
    # is committed a second later.
    pool.test_signals.wait_state(pool.test_signals.listening, True)
    return pool


def test_a_job_is_invisible_to_workers_until_commit_and_picked_up_at_once_on_commit(worker_pool):
    pool = idle_pool(worker_pool)
    with transaction.atomic():
        job = jobs.enqueue("noop", {"from": "view"})
        assert Job.objects.filter(pk=job.id).exists()  # our own transaction sees it
        assert not visible_to_another_session(job.id)
        # A running worker does not see it either: woken, its lane claims and finds nothing.
        since = len(pool.test_signals.polled.seen())
        pool.wake()
        pool.test_signals.wait_polls(1, since=since, empty=True)
        assert pool.stats.snapshot().get("claimed", 0) == 0
    committed_at = timezone.now()
    pool.test_signals.wait_ended([job.id], "succeeded", timeout=POLL_SECONDS)
    done = Job.objects.get(pk=job.id)
    # When the claim took it: the job's started_at (the claim writes no event of its own).
    claimed_at = done.started_at
    pickup = (claimed_at - committed_at).total_seconds()
    assert claimed_at >= committed_at - timedelta(milliseconds=50)
    # Well under the 5 s poll interval: the commit's NOTIFY woke the idle dispatcher.
    print(f"picked up {pickup * 1000:.1f} ms after commit (poll interval {POLL_SECONDS:g} s)")
    assert pickup < 1.0, f"picked up {pickup:.3f}s after commit"
    assert done.result == {"ok": True}


def test_a_rolled_back_enqueue_never_exists(worker_pool):
    pool = worker_pool(threads=2)
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            job_id = jobs.enqueue("noop").id
            raise RuntimeError("the view failed after enqueueing")
    kept = jobs.enqueue("noop")  # the next committed job runs normally
    pool.test_signals.wait_ended([kept.id], "succeeded")
    assert not Job.objects.filter(pk=job_id).exists()
    assert not JobEvent.objects.filter(job_id=job_id).exists()
    assert pool.stats.snapshot()["claimed"] == 1


def test_a_job_enqueued_in_a_rolled_back_savepoint_is_gone_while_the_outer_work_commits(
        worker_pool):
    pool = worker_pool(threads=2)
    with transaction.atomic():
        outer = jobs.enqueue("noop")
        try:
            with transaction.atomic():
                inner = jobs.enqueue("noop")
                raise ValueError("inner step failed")
        except ValueError:
            pass
    pool.test_signals.wait_ended([outer.id], "succeeded")
    assert not Job.objects.filter(pk=inner.id).exists()


def test_enqueue_many_commits_or_rolls_back_as_one(worker_pool):
    pool = worker_pool(threads=2)
    with pytest.raises(UnknownJobType):
        with transaction.atomic():
            jobs.enqueue_many([{"type": "noop"}, {"type": "noop"}])
            jobs.enqueue_many([{"type": "noop"}, {"type": "no_such_type"}])
    assert not Job.objects.exists()
    with transaction.atomic():
        batch = jobs.enqueue_many([{"type": "noop", "queue": "default"} for _ in range(5)])
    pool.test_signals.wait_ended([j.id for j in batch], "succeeded")


def test_a_django_task_enqueued_in_a_transaction_follows_it_and_signals_on_commit(worker_pool):
    sent = []

    def receiver(sender, task_result, **kwargs):
        sent.append(task_result.id)

    task_enqueued.connect(receiver, sender=QueueBackend)
    try:
        pool = worker_pool(threads=2)
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                lost = add.enqueue(1, 1)
                raise RuntimeError("rolled back")
        assert sent == []  # never enqueued, so never announced
        with pytest.raises(TaskResultDoesNotExist):
            add.get_result(lost.id)
        with transaction.atomic():
            kept = add.enqueue(2, 2)
            assert sent == []  # not before the commit
        assert sent == [kept.id]
        pool.test_signals.wait_finished([int(kept.id)])
        done = add.get_result(kept.id)
        assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 4
    finally:
        task_enqueued.disconnect(receiver, sender=QueueBackend)
