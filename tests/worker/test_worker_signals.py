"""Test signals: a worker pool tells a test when it started a job and when it wrote a job's
outcome, so tests wait on the event itself instead of polling; off (and free) by default."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.worker.signals import TestSignal, TestSignals
from django_pg_jobqueue.worker.stats import PoolStats

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pool_sends_no_signal_unless_a_test_asks_for_them(fast_queue_settings):
    from django_pg_jobqueue.worker.pool import WorkerPool

    pool = WorkerPool(threads=1)
    assert pool.test_signals is None and pool.stats.signals is None
    assert all(part.signals is None for part in (*pool.maintenance, pool.leadership, pool.held))
    stats = PoolStats()
    stats.completed([(1, "succeeded", 0.1)])  # counted, nothing kept
    assert stats.snapshot() == {"succeeded": 1}


def test_each_outcome_is_signalled_after_it_was_written(worker_pool):
    job = services.enqueue("flaky", {"fail_times": 1}, max_attempts=3)
    pool = worker_pool(threads=1)
    ended = pool.test_signals.wait_ended([job.id], "succeeded", timeout=15)
    assert ended == {job.id: "succeeded"}
    # The retry, then the success; each one already in the database when it was signalled.
    assert [s for j, s in pool.test_signals.ended.seen() if j == job.id] == ["queued",
                                                                            "succeeded"]
    assert pool.test_signals.started.seen().count(job.id) == 2
    assert Job.objects.get(pk=job.pk).status == "succeeded"


def test_claims_leadership_listen_and_each_maintenance_pass_are_signalled(worker_pool):
    pool = worker_pool(threads=1)
    signals = pool.test_signals
    signals.wait_state(signals.leading, True)
    signals.wait_state(signals.listening, True)
    for loop in (signals.renewed, signals.reaped, signals.staged):
        assert signals.wait_passes(loop, since=0)
    job = services.enqueue("noop", {})
    signals.wait_claimed([job.id])
    assert signals.wait_finished([job.id]) == {job.id: "succeeded"}
    pool.shutdown(grace=1)
    assert signals.leading.seen()[-1] is False  # resigned at the stop


def test_a_wait_that_times_out_says_what_it_waited_for_and_what_came():
    signals = TestSignals()
    signals.ended.emit((7, "failed"))
    with pytest.raises(AssertionError, match=r"jobs \[7\] to end succeeded.*\(7, 'failed'\)"):
        signals.wait_ended([7], "succeeded", timeout=0.05)


def test_an_event_sent_before_the_wait_began_is_not_missed():
    signal = TestSignal("started")
    signal.emit(1, 2)
    assert signal.wait(lambda seen: 2 in seen, timeout=0.01)
