"""Prefetch (JOB_PREFETCH): a lane with a backlog claims jobs ahead of its idle threads and
holds them under `<process>-prefetch`; they still run exactly once each, a thread that takes
one runs it under its own worker id, and a prefetched job that cannot find a thread in time,
is cancelled while it waits, or is still waiting at shutdown never runs under that claim."""
import threading
import uuid

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.registry import registry
from django_pg_jobqueue.testing import expire_lease, run_reaper
from django_pg_jobqueue.worker.executor import JobRunner
from django_pg_jobqueue.worker.held import Held, HeldJobs
from django_pg_jobqueue.worker.prefetch import Prefetched
from django_pg_jobqueue.worker.starter import Starter, StartNotRecorded
from django_pg_jobqueue.worker.stats import PoolStats

pytestmark = pytest.mark.django_db(transaction=True)


def kinds(job_id):
    return list(HistoryEvent.objects.filter(job_id=job_id).order_by("id").values_list("kind", flat=True))


@pytest.fixture
def slow_handler():
    """A handler that sleeps `seconds` and records which job ids ran."""
    ran = []

    def slow(ctx, payload):
        ran.append(ctx.job_id)
        if ctx.wait(payload.get("seconds", 0)):  # the job's work, stopped by a stop
            ctx.raise_if_should_stop()
        return {"ok": True}

    registry.register("prefetch_probe", slow)
    yield ran
    registry.unregister("prefetch_probe")


def test_a_prefetching_pool_runs_every_job_once_under_its_thread_id(worker_pool):
    ids = [j.pk for j in services.enqueue_many([{"type": "noop", "payload": {"i": i}}
                                                for i in range(300)])]
    pool = worker_pool(threads=2, batch_size=20, prefetch=16)
    pool.test_signals.wait_ended(ids, "succeeded", timeout=30)
    assert set(Job.objects.values_list("attempts", flat=True)) == {1}
    events = HistoryEvent.objects.filter(job_id__in=ids)
    # One row per attempt: the success carries its start (the claim writes no event).
    assert events.filter(kind="succeeded", data__has_key="started_at").count() == 300
    assert not events.exclude(kind__in=["created", "succeeded"]).exists()
    prefetched = set(pool.test_signals.prefetched.seen())
    assert prefetched, "the backlog should have been prefetched"
    # A prefetched job's success is recorded under the thread that ran it.
    threads = {e.worker_id for e in pool.executors}
    assert set(events.filter(kind="succeeded").values_list("worker_id", flat=True)) <= threads


def test_prefetch_off_claims_only_for_idle_threads(worker_pool):
    jobs = services.enqueue_many([{"type": "noop", "payload": {}} for _ in range(100)])
    pool = worker_pool(threads=2, batch_size=20, prefetch=0)
    pool.test_signals.wait_ended([j.pk for j in jobs], "succeeded", timeout=30)
    assert not pool.test_signals.prefetched.seen()
    assert not HistoryEvent.objects.filter(worker_id=f"{pool.process_id}-prefetch").exists()


def test_a_prefetched_job_that_waits_too_long_goes_back_uncharged(worker_pool, slow_handler,
                                                                  monkeypatch):
    monkeypatch.setattr(Prefetched, "MAX_WAIT_SECONDS", 0.3)
    slow = services.enqueue("prefetch_probe", {"seconds": 2}, priority=10)
    waiting = services.enqueue("prefetch_probe", {}, priority=5)
    last = services.enqueue("prefetch_probe", {}, priority=0)
    pool = worker_pool(threads=1, prefetch=4)
    pool.test_signals.wait_released([waiting.pk])
    pool.test_signals.wait_ended([slow.pk, waiting.pk, last.pk], "succeeded", timeout=20)
    assert kinds(waiting.pk) == ["created", "released", "succeeded"]  # each carries its start
    released = HistoryEvent.objects.get(job_id=waiting.pk, kind="released")
    assert released.worker_id == f"{pool.process_id}-prefetch" and released.data["started_at"]
    assert "no thread was free" in released.message
    assert Job.objects.get(pk=waiting.pk).attempts == 1  # the release charged no attempt
    assert slow_handler[0] == slow.pk and sorted(slow_handler) == sorted(set(slow_handler))


def test_a_job_cancelled_while_prefetched_never_runs(worker_pool, slow_handler, monkeypatch):
    monkeypatch.setattr(Prefetched, "MAX_WAIT_SECONDS", 30)
    services.enqueue("prefetch_probe", {"seconds": 2.5}, priority=10)
    victim = services.enqueue("prefetch_probe", {}, priority=5)
    pool = worker_pool(threads=1, prefetch=4)
    pool.test_signals.wait_claimed([victim.pk])
    assert victim.pk in pool.test_signals.prefetched.seen()
    assert Job.objects.filter(pk=victim.pk, status="running",
                              locked_by=f"{pool.process_id}-prefetch").exists()
    services.cancel(victim.pk)
    pool.test_signals.wait_ended([victim.pk], "cancelled", timeout=15)
    assert victim.pk not in slow_handler
    assert Job.objects.get(pk=victim.pk).attempts == 1


def test_shutdown_releases_prefetched_jobs_uncharged(worker_pool, slow_handler, monkeypatch):
    monkeypatch.setattr(Prefetched, "MAX_WAIT_SECONDS", 30)
    services.enqueue("prefetch_probe", {"seconds": 1}, priority=10)
    waiting = services.enqueue("prefetch_probe", {}, priority=5)
    pool = worker_pool(threads=1, prefetch=4)
    pool.test_signals.wait_claimed([waiting.pk])
    stopper = threading.Thread(target=pool.shutdown, kwargs={"grace": 5})
    stopper.start()
    stopper.join(20)
    row = Job.objects.get(pk=waiting.pk)
    assert (row.status, row.attempts, row.locked_by) == ("queued", 0, None)
    assert kinds(waiting.pk)[-1] == "released"
    assert waiting.pk not in slow_handler


def test_prefetch_is_on_by_default():
    from django_pg_jobqueue import conf

    assert conf.get().PREFETCH > 0


def test_a_lane_under_a_concurrency_limit_prefetches_nothing(worker_pool, slow_handler):
    # A prefetched job is `running` and would hold one of the queue's slots while it waits
    # for a thread: under a limit, a lane claims only for its idle threads.
    from django_pg_jobqueue.services.claiming import forget_cached_limits
    from django_pg_jobqueue.services.queues import set_queue_limit

    set_queue_limit("default", 2)
    forget_cached_limits()
    jobs = services.enqueue_many([{"type": "prefetch_probe", "payload": {"seconds": 0.01}}
                                  for _ in range(60)])
    pool = worker_pool(threads=2, batch_size=20, prefetch=16)
    pool.test_signals.wait_ended([j.pk for j in jobs], "succeeded", timeout=60)
    assert not pool.test_signals.prefetched.seen()
    assert not HistoryEvent.objects.filter(worker_id=f"{pool.process_id}-prefetch").exists()
    forget_cached_limits()


def test_a_running_prefetched_job_names_the_thread_that_runs_it_as_its_owner(worker_pool,
                                                                               slow_handler):
    services.enqueue_many([{"type": "prefetch_probe", "payload": {"seconds": 1.5}}
                           for _ in range(4)])
    pool = worker_pool(threads=1, batch_size=4, prefetch=4)
    prefetch_id = f"{pool.process_id}-prefetch"
    # A job claimed into the prefetch buffer, then taken by the pool's one thread: while it
    # runs, its lease (locked_by) names that thread, as its timeline does: looked at each time
    # a job starts (one that waited too long in the buffer goes back and comes again).
    pool.test_signals.started.wait(lambda started: Job.objects.filter(
        pk__in=set(started) & set(pool.test_signals.prefetched.seen()), status="running",
        locked_by=f"{pool.process_id}-1").exists(),
        timeout=20, message="a prefetched job running under its thread's id")
    assert not Job.objects.filter(status="running", locked_by=prefetch_id,
                                  pk__in=slow_handler).exists()


def test_a_lane_of_slow_jobs_prefetches_only_what_its_threads_start_soon():
    """Jobs of 0.1 s on one thread: one job held ahead, not a queue that one process would
    still be working through after the others ran out of work; jobs of microseconds on 16
    threads: the whole JOB_PREFETCH."""
    slow = Prefetched(128, threads=1)
    fast = Prefetched(128, threads=16)
    slow.depth = fast.depth = 128
    for _ in range(20):
        slow.ran(0.1)
        fast.ran(0.00005)
    assert slow.wanted(backlog=True) == 1
    assert fast.wanted(backlog=True) == 128
    four = Prefetched(128, threads=4)
    four.depth = 128
    four.ran(0.01)
    assert four.wanted(backlog=True) == int(4 * Prefetched.HORIZON_SECONDS / 0.01)


def _runner(start_prefetched):
    """An executor's pipeline for thread `vm-1-1`, given how it records a prefetched start."""
    held = HeldJobs()
    return JobRunner("vm-1-1", held=held, stats=PoolStats(), complete=lambda c, h: "succeeded",
                     start_prefetched=start_prefetched), held


def _prefetched(job, held):
    [c] = services.claim(worker_ids=["vm-1-prefetch"], job_ids=[job.id])
    h = Held.of(c, c.worker_id)
    held.add(h)
    return c, h


def test_the_starter_records_the_thread_that_took_a_prefetched_job_before_it_runs():
    job = services.enqueue("noop", {})
    starter = Starter()
    with pytest.raises(StartNotRecorded):  # not running: nothing would write it
        starter.start_job(job.id, None, "vm-1-1")
    [c] = services.claim(worker_ids=["vm-1-prefetch"], job_ids=[job.id])
    starter.start()
    try:
        assert starter.start_job(c.id, c.lease_token, "vm-1-1") is True
        assert Job.objects.get(pk=job.pk).locked_by == "vm-1-1"
        assert starter.start_job(c.id, uuid.uuid4(), "vm-1-2") is False  # another claim's
    finally:
        starter.stop()
        starter.join(10)
    with pytest.raises(StartNotRecorded):
        starter.start_job(c.id, c.lease_token, "vm-1-1")


def test_a_prefetched_job_whose_start_cannot_be_recorded_never_runs_and_comes_back_uncharged(
        slow_handler):
    job = services.enqueue("prefetch_probe", {}, max_attempts=1)

    def database_away(*args, **kwargs):
        raise StartNotRecorded("the database is away")

    runner, held = _runner(database_away)
    c, h = _prefetched(job, held)
    assert runner.run(c, h).status == "abandoned"
    assert not slow_handler and not len(held)  # not run, and no longer renewed
    expire_lease(job)
    assert run_reaper() == {"released": 1}
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts) == ("queued", 0)


def test_a_prefetched_job_whose_lease_was_lost_while_it_waited_never_runs(slow_handler):
    job = services.enqueue("prefetch_probe", {})
    runner, held = _runner(lambda i, t, w, **_: i in services.adopt_prefetched([(i, t, w)]))
    c, h = _prefetched(job, held)
    expire_lease(job)
    assert run_reaper() == {"released": 1}
    assert runner.run(c, h).status == "lease_lost"
    assert not slow_handler and not len(held)
    refused = HistoryEvent.objects.get(job_id=job.pk, kind="lease_lost")
    assert (refused.worker_id, refused.data["refused"]) == ("vm-1-1", "start")
    assert Job.objects.get(pk=job.pk).status == "queued"


def test_a_prefetched_job_handed_to_a_thread_is_renewed_until_the_thread_takes_it(
        fast_queue_settings, monkeypatch):
    """The hand-over from the buffer to an executor leaves no gap for the watchdog: a thread
    slow to take its next job (a loaded machine) still answers for it, so the renewer keeps
    renewing it instead of releasing it as an orphan after ORPHAN_PASSES passes, which let
    its lease expire under a live process."""
    from django_pg_jobqueue.worker.pool import WorkerPool
    from django_pg_jobqueue.worker.renewer import ORPHAN_PASSES

    job = services.enqueue("noop", {})
    pool = WorkerPool(threads=1)
    lane, executor = pool.lanes[0], pool.executors[0]
    [c] = services.claim(worker_ids=[lane.prefetch_id], job_ids=[job.id])
    held = Held.of(c, c.worker_id, owner=lane.prefetched)
    pool.held.add(held)
    lane.prefetched.put_many([held])
    monkeypatch.setattr(executor, "is_alive", lambda: True)  # alive, its inbox not yet read
    assert lane._hand_out_prefetched([executor]) == []
    assert not len(lane.prefetched) and not executor.inbox.empty()
    for _ in range(ORPHAN_PASSES + 1):
        counts = pool.renewer.run_once()
        assert (counts["renewed"], counts["orphaned"]) == (1, 0), counts
    assert Job.objects.get(pk=job.pk).status == "running"
    monkeypatch.setattr(executor, "is_alive", lambda: False)  # its thread died meanwhile
    orphaned = sum(pool.renewer.run_once()["orphaned"] for _ in range(ORPHAN_PASSES))
    assert orphaned == 1 and not len(pool.held)
