"""The engine seam: a worker pool (what run_job_workers runs) and testing.drain reach storage
through the same engine and run jobs through the same executor pipeline, so what the
settings say about handlers (JOB_MIDDLEWARE) and retries (JOB_RETRY_*) acts identically in
both; and an engine that wraps the PostgreSQL one changes what a worker sees, with no module
patched."""
import threading

import pytest
from django.test import override_settings

from django_pg_jobqueue import services, testing
from django_pg_jobqueue.engine import Engine, PostgresEngine, default_engine
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.utils import start_pool

SEEN: list = []
_lock = threading.Lock()


def around(call_next, ctx, job):
    """A middleware recording each attempt and what the handler did; it marks results."""
    try:
        result = call_next()
    except Exception as exc:
        with _lock:
            SEEN.append((ctx.attempt, "raised", type(exc).__name__))
        raise
    with _lock:
        SEEN.append((ctx.attempt, "returned", result))
    return {**result, "through_middleware": True}


def flaky(ctx, payload):
    """Fails its first attempt, succeeds on the next."""
    if ctx.attempt == 1:
        raise ValueError("first attempt fails")
    return {"attempt": ctx.attempt}


def _run_in_drain(job):
    result = testing.drain(["engine_flaky"], include_scheduled=True)
    assert (result.retried, result.succeeded) == (1, 1)


def _run_in_a_worker_pool(job):
    pool = start_pool(threads=2)
    try:
        pool.test_signals.wait_ended([job.id], "succeeded", timeout=20)
    finally:
        pool.shutdown(grace=2)


@pytest.mark.parametrize("run", [_run_in_drain, _run_in_a_worker_pool],
                         ids=["testing.drain", "worker pool"])
def test_middleware_and_the_retry_settings_act_identically_in_drain_and_in_a_worker_pool(
        run, transactional_db, fast_queue_settings, custom_handler):
    SEEN.clear()
    custom_handler("engine_flaky", flaky)
    with override_settings(JOB_MIDDLEWARE=["tests.worker.test_engine.around"],
                           JOB_RETRY_BASE_SECONDS=0.05, JOB_RETRY_MAX_SECONDS=0.1,
                           JOB_RETRY_JITTER=0.0):
        job = services.enqueue("engine_flaky", max_attempts=3)
        run(job)
    job.refresh_from_db()
    # The middleware saw both attempts, the failure and the success, and its mark was stored.
    assert SEEN == [(1, "raised", "ValueError"), (2, "returned", {"attempt": 2})]
    assert (job.status, job.attempts, job.result) == (
        "succeeded", 2, {"attempt": 2, "through_middleware": True})
    kinds = list(HistoryEvent.objects.filter(job_id=job.id).order_by("id")
                 .values_list("kind", flat=True))
    assert kinds == ["created", "retry_scheduled", "succeeded"]  # each outcome carries its start
    # The retry waited what the global settings say (base 0.05 * 2^1, capped at 0.1, no jitter).
    retry = HistoryEvent.objects.get(job_id=job.id, kind="retry_scheduled")
    assert retry.data["delay_seconds"] == pytest.approx(0.1)


def test_the_worker_pool_and_drain_use_the_default_engine_unless_given_another(
        transactional_db, fast_queue_settings):
    from django_pg_jobqueue.worker.pool import WorkerPool

    assert isinstance(default_engine(), PostgresEngine)
    pool = WorkerPool(threads=1)
    assert pool.engine is default_engine()
    assert pool.completer.engine is pool.renewer.engine is pool.engine
    assert all(e.runner.engine is pool.engine for e in pool.executors)
    assert testing._runner().engine is default_engine()


def test_an_engine_that_wraps_postgres_sees_every_write_of_a_worker_pool(
        transactional_db, fast_queue_settings, custom_handler):
    """The seam is complete: a worker pool given an engine claims, completes, fails, renews,
    heartbeats and releases through it alone."""
    calls: list[str] = []
    engine = recording_engine(("claim", "complete_many", "fail", "renew_many", "heartbeat",
                               "reap", "release_many"), calls)
    custom_handler("engine_ok", lambda ctx, payload: {"ok": True})
    custom_handler("engine_bad", lambda ctx, payload: 1 / 0, max_attempts=1)
    let_go = threading.Event()
    custom_handler("engine_slow", lambda ctx, payload: let_go.wait(30))  # deaf to a stop
    ok = services.enqueue("engine_ok")
    bad = services.enqueue("engine_bad")
    slow = services.enqueue("engine_slow")
    pool = start_pool(threads=3, engine=engine)
    try:
        pool.test_signals.wait_ended([ok.id], "succeeded", timeout=20)
        pool.test_signals.wait_ended([bad.id], "failed", timeout=20)
        pool.test_signals.wait_started([slow.id], timeout=20)
        pool.test_signals.renewed.wait(lambda passes: any(p.get("renewed") for p in passes),
                                       20, "the slow job's lease renewed")
        pool.test_signals.wait_passes(pool.test_signals.reaped, since=0, timeout=20)
        assert "renew_many" in calls and "reap" in calls
    finally:
        pool.shutdown(grace=0.1)
        let_go.set()
        for executor in pool.executors:  # its late write is refused before the test ends
            executor.join(10)
    assert set(calls) == {"claim", "complete_many", "fail", "renew_many", "heartbeat", "reap",
                          "release_many"}
    assert Job.objects.get(pk=slow.pk).status == "queued"  # released at shutdown, through it


def recording_engine(names: tuple[str, ...], calls: list[str]) -> Engine:
    """A PostgresEngine that notes each call of the methods `names` in `calls`."""
    class Recording(PostgresEngine):
        pass

    for name in names:
        def make(name):
            real = getattr(PostgresEngine, name)

            def method(self, *args, **kwargs):
                with _lock:
                    calls.append(name)
                return real(self, *args, **kwargs)
            return method
        setattr(Recording, name, make(name))
    return Recording()


@override_settings(JOB_PRUNE_INTERVAL_SECONDS=60)
def test_every_loop_of_a_worker_pool_reaches_storage_through_its_engine(
        transactional_db, fast_queue_settings):
    from django_pg_jobqueue.worker.held import Held
    from django_pg_jobqueue.worker.pool import WorkerPool

    engine = PostgresEngine()
    pool = WorkerPool(threads=1, engine=engine)
    loops = [pool.reaper, pool.pruner, pool.periodic, pool.stager, pool.stuck, pool.starter,
             pool.leadership]
    assert [type(loop).__name__ for loop in loops if loop.engine is not engine] == []
    # A prefetched job's context (built by the lane) writes progress and logs through it too.
    services.enqueue("noop")
    claimed = engine.claim(worker_ids=["proc-1"], lease_seconds=30)
    assert Held.of(claimed[0], "proc-1", engine=engine).ctx.engine is engine


def test_drain_claims_runs_and_records_through_the_engine_it_is_given(
        transactional_db, custom_handler):
    calls: list[str] = []
    engine = recording_engine(("claim", "complete_many", "fail", "record_progress",
                               "log_message"), calls)

    def reports(ctx, payload):
        ctx.progress(50, "half way")
        ctx.log("noted")
        return {"ok": True}

    custom_handler("drained_through_engine", reports)
    custom_handler("drained_and_failed", lambda ctx, payload: 1 / 0, max_attempts=1)
    services.enqueue("drained_through_engine")
    services.enqueue("drained_and_failed")
    result = testing.drain(engine=engine)
    assert (result.succeeded, result.failed) == (1, 1)
    assert set(calls) == {"claim", "complete_many", "fail", "record_progress", "log_message"}
