"""A producer waits for its job's outcome: `wait()` returns the result soon after a real worker
finished the job (woken by the outcome's NOTIFY), raises the job's error when it failed for
good, raises a timeout that changes nothing, and a process's waiters share one LISTEN."""
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import (
    JobFailed,
    WaitTimeout,
    await_result,
    services,
    testing,
    wait,
    waiting,
)
from django_pg_jobqueue.models import Job, JobEvent
from tests.handlers import wait_handlers  # noqa: F401  (registers the handlers in this process)
from tests.utils import REPO, spawn_workers, stop_workers, worker_database_url

pytestmark = [pytest.mark.django_db(transaction=True)]

WORKER_ENV = {"JOB_EXTRA_HANDLER_MODULES": "tests.handlers.wait_handlers", "JOB_WORKER_LOG_LEVEL": "WARNING",
              "JOB_POLL_INTERVAL_SECONDS": "0.2", "JOB_POLL_JITTER_SECONDS": "0.05"}


def _listening_connections() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND application_name = %s", [waiting.APPLICATION_NAME])
        return cur.fetchone()[0]


def _waiting_process(ids: list[int], threads: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": worker_database_url(), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "tests.handlers.wait_handlers", json.dumps(ids),
                             str(threads)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.e2e
def test_waits_from_two_processes_wake_soon_after_each_outcome_on_one_listen_each():
    # 200 jobs in 13 waves a third of a second apart, so that every waiter is waiting before its
    # job finishes (each thread waits for its jobs in turn); 400 more jobs to drain meanwhile.
    start = timezone.now() + timedelta(seconds=3)
    jobs = services.enqueue_many([
        {"type": "wait_echo", "payload": {"value": {"n": i}},
         "run_at": start + timedelta(seconds=0.33 * (i // 16))} for i in range(200)])
    services.enqueue_many([{"type": "wait_echo", "payload": {}} for _ in range(400)])
    ids = [job.id for job in jobs]
    this_process = _listening_connections()  # this test process's own, if a test started one
    producers = [_waiting_process(ids[p::2], threads=8) for p in range(2)]
    worker = spawn_workers("--threads", "8", env=WORKER_ENV)
    listening = []
    try:
        while any(p.poll() is None for p in producers):
            listening.append(_listening_connections())
            time.sleep(0.2)  # by design: a sample of the server's sessions every 200 ms
        outputs = [p.communicate(timeout=30) for p in producers]
    finally:
        for p in producers:
            if p.poll() is None:
                p.kill()
        stop_workers(worker)
    for p, (out, err) in zip(producers, outputs):
        assert p.returncode == 0, err[-3000:]
    waits = [w for out, _ in outputs for w in json.loads(out)["waits"]]
    assert sorted(w["id"] for w in waits) == sorted(ids)
    finished = dict(Job.objects.filter(id__in=ids).values_list("id", "finished_at"))
    payloads = dict(Job.objects.filter(id__in=ids).values_list("id", "payload"))
    assert all(w["result"] == payloads[w["id"]]["value"] for w in waits)
    lags_ms = sorted((w["woke_at"] - finished[w["id"]].timestamp()) * 1000 for w in waits)
    p50, p95 = statistics.median(lags_ms), lags_ms[int(len(lags_ms) * 0.95) - 1]
    print(f"\nwake after finished_at, 200 waits: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"max {lags_ms[-1]:.1f} ms; LISTEN connections seen: {sorted(set(listening))}; "
          f"load average {os.getloadavg()[0]:.2f}")
    # Woken by the outcome's NOTIFY, not by a waiter's recheck (every RECHECK_SECONDS): on any
    # machine. The 50 ms target is a speed figure, held only where the machine is not
    # oversubscribed (a loaded 2-core runner schedules these threads late: seen 80-200 ms at
    # load 10); the figure is printed either way.
    assert p95 < 1000 < waiting.RECHECK_SECONDS * 1000
    if os.getloadavg()[0] < (os.cpu_count() or 1):
        assert p95 < 50
    # one per waiting process, whatever its 8 threads wait for
    assert 2 <= max(listening) <= 2 + this_process


@pytest.fixture
def first_read(monkeypatch) -> threading.Event:
    """Set once a waiter has read its job and found no outcome yet: it waits from then on
    (registered first, when it listens), so an outcome written after this is one it waits for."""
    read, unfinished = waiting._read, threading.Event()

    def reading(job_id):
        finished, result = read(job_id)
        if not finished:
            unfinished.set()
        return finished, result

    monkeypatch.setattr(waiting, "_read", reading)
    return unfinished


def _run_in_thread(fn, *args, **kwargs):
    out: dict = {}

    def target():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


@pytest.mark.e2e
def test_a_job_that_failed_for_good_raises_its_error():
    job = services.enqueue("wait_decline", {})
    waiter, out = _run_in_thread(wait, job, timeout=30)
    worker = spawn_workers("--threads", "2", env=WORKER_ENV)
    try:
        waiter.join(40)
    finally:
        stop_workers(worker)
    error = out["error"]
    assert isinstance(error, JobFailed)
    assert (error.job_id, error.status) == (job.id, "failed")
    assert "card declined" in error.error and "card declined" in str(error)


def test_a_cancelled_job_raises_job_failed(first_read):
    job = services.enqueue("wait_echo", {})
    waiter, out = _run_in_thread(wait, job.id, timeout=10)
    assert first_read.wait(10)
    services.cancel(job.id)
    waiter.join(10)
    assert isinstance(out["error"], JobFailed) and out["error"].status == "cancelled"


@pytest.mark.parametrize("ending", ["dependency_cancelled", "lease_expired", "released_cancelled"])
def test_every_writer_that_ends_a_job_wakes_its_waiters(first_read, ending):
    # Not only completion and failure: a cancel cascaded from a dependency, the reaper failing
    # a job with no attempt left, a release at shutdown of a job whose cancel was asked. Woken
    # by the outcome's NOTIFY: well before the waiter's own recheck would have read it.
    first = services.enqueue("wait_echo", {})
    job = (services.enqueue("wait_echo", {}, after=[first.id]) if ending == "dependency_cancelled"
           else services.enqueue("wait_echo", {}, max_attempts=1))
    claimed = (None if ending == "dependency_cancelled"
               else services.claim(worker_ids=["test-1-0"], job_ids=[job.id])[0])
    waiter, out = _run_in_thread(wait, job.id, timeout=30)
    assert first_read.wait(10)
    started = time.monotonic()
    if ending == "dependency_cancelled":
        services.cancel(first.id)
    elif ending == "lease_expired":
        testing.expire_lease(job.id)
        services.reap()
    else:
        services.cancel(job.id)  # running: a cancel request
        services.release_many([(job.id, claimed.lease_token, "test-1-0")])
    waiter.join(30)
    assert time.monotonic() - started < waiting.RECHECK_SECONDS / 2
    assert isinstance(out["error"], JobFailed)
    assert out["error"].status == ("failed" if ending == "lease_expired" else "cancelled")


def test_a_timeout_raises_and_changes_nothing():
    job = services.enqueue("wait_echo", {"value": 1})
    before = Job.objects.filter(id=job.id).values().get()
    events = JobEvent.objects.filter(job_id=job.id).count()
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as raised:
        wait(job, timeout=0.4)
    assert 0.4 <= time.monotonic() - started < 2
    assert raised.value.job_id == job.id and isinstance(raised.value, TimeoutError)
    assert Job.objects.filter(id=job.id).values().get() == before
    assert JobEvent.objects.filter(job_id=job.id).count() == events


def test_an_outcome_reached_before_the_wait_is_returned_at_once():
    job = services.enqueue("wait_echo", {"value": [1, 2]})
    claimed = services.claim(worker_ids=["test-1-0"], job_ids=[job.id])[0]
    services.complete(job.id, claimed.lease_token, worker_id="test-1-0", result=[1, 2])
    started = time.monotonic()
    assert wait(job.id, timeout=5) == [1, 2]
    assert time.monotonic() - started < 1


def test_waiting_inside_a_transaction_is_refused():
    from django.db import transaction

    job = services.enqueue("wait_echo", {})
    with transaction.atomic(), pytest.raises(RuntimeError, match="inside a transaction"):
        wait(job, timeout=1)


@override_settings(JOB_LISTEN_NOTIFY=False)
def test_without_listen_a_wait_polls_and_still_returns_the_result(first_read):
    job = services.enqueue("wait_echo", {"value": "polled"})
    waiter, out = _run_in_thread(wait, job, timeout=10)
    assert first_read.wait(10)  # the waiter polls (no LISTEN) before the outcome comes
    claimed = services.claim(worker_ids=["test-1-0"], job_ids=[job.id])[0]
    services.complete(job.id, claimed.lease_token, worker_id="test-1-0", result="polled")
    waiter.join(10)
    assert out["value"] == "polled"


def test_await_result_returns_the_result_in_async_code(first_read):
    job = services.enqueue("wait_echo", {"value": {"async": True}})

    def finish():
        first_read.wait(10)  # the outcome comes while the coroutine awaits it
        claimed = services.claim(worker_ids=["test-1-0"], job_ids=[job.id])[0]
        services.complete(job.id, claimed.lease_token, worker_id="test-1-0",
                          result={"async": True})

    finisher, _ = _run_in_thread(finish)
    started = time.monotonic()
    assert asyncio.run(await_result(job, timeout=10)) == {"async": True}
    finisher.join(10)
    assert time.monotonic() - started < waiting.RECHECK_SECONDS  # woken, not re-read later


def test_an_outcomes_payload_too_long_for_notify_becomes_a_wake_for_every_waiter():
    import psycopg

    from django_pg_jobqueue import db, sql

    many = "(SELECT generate_series(1000000000, 1000001000) AS id) AS g"  # 11,011 characters
    with psycopg.connect(**db.listen_connection_params("test"), autocommit=True) as listener:
        listener.execute(sql.LISTEN_OUTCOMES)
        with connection.cursor() as cur:
            cur.execute(sql.OUTCOMES_NOTIFY.format(rows=many))
            cur.execute(sql.OUTCOMES_NOTIFY.format(rows="(SELECT 7 AS id) AS g"))
        payloads = [n.payload for n in listener.notifies(timeout=2, stop_after=2)]
    assert payloads == ["*", "7"]
