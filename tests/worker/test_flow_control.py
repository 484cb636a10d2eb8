"""Global concurrency limits (per queue, per type) enforced inside the claim, and pause/resume."""
import threading

import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, QueueSetting
from django_pg_jobqueue.registry import registry
from django_pg_jobqueue.services.claiming import forget_cached_limits
from django_pg_jobqueue.worker.signals import TestSignals
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = pytest.mark.django_db(transaction=True)


class RunningSampler(threading.Thread):
    """Samples how many jobs matching a filter are running, every few milliseconds."""

    def __init__(self, where: str):
        super().__init__(daemon=True)
        self.where, self.samples, self.stop = where, [], threading.Event()

    def run(self):
        try:
            with connection.cursor() as cur:
                while not self.stop.is_set():
                    cur.execute(f"SELECT count(*) FROM jobs WHERE status = 'running' AND {self.where}")
                    self.samples.append(cur.fetchone()[0])
                    self.stop.wait(0.01)  # a sample every 10 ms until stopped
        finally:
            connection.close()


def test_queue_limit_holds_across_three_worker_processes():
    forget_cached_limits()
    QueueSetting.objects.create(queue="reports", concurrency_limit=2)
    services.enqueue_many([{"type": "sleep", "payload": {"seconds": 0.3}, "queue": "reports"}
                           for _ in range(24)])
    services.enqueue_many([{"type": "noop", "payload": {}} for _ in range(30)])
    sampler = RunningSampler("queue = 'reports'")
    sampler.start()
    env = {"JOB_POLL_INTERVAL_SECONDS": "0.05", "JOB_LEASE_SECONDS": "10"}
    procs = [spawn_workers("--threads", "4", env=env) for _ in range(3)]
    try:
        wait_until_jobs("succeeded", count=54, timeout=60)
    finally:
        sampler.stop.set()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    assert max(sampler.samples) == 2, "the limit was reached, never exceeded"
    assert max(sampler.samples) <= 2


def test_type_limit_holds_across_pools(worker_pool):
    forget_cached_limits()
    registry.register("limited_sleep", registry.get("sleep").func, concurrency=1)
    try:
        jobs = services.enqueue_many([{"type": "limited_sleep", "payload": {"seconds": 0.2}}
                                      for _ in range(6)])
        sampler = RunningSampler("type = 'limited_sleep'")
        sampler.start()
        signals = TestSignals()  # both pools' events, in one place
        worker_pool(threads=3, test_signals=signals)
        worker_pool(threads=3, test_signals=signals)
        signals.wait_ended([j.id for j in jobs], "succeeded", timeout=30)
        sampler.stop.set()
        sampler.join()
        assert max(sampler.samples) == 1
    finally:
        registry.unregister("limited_sleep")


def test_paused_queue_is_not_claimed_until_resumed(worker_pool):
    QueueSetting.objects.create(queue="emails", paused=True)
    held = services.enqueue("noop", {}, queue="emails")
    other = services.enqueue("noop", {}, queue="default")
    pool = worker_pool(threads=2)
    pool.test_signals.wait_ended([other.pk], "succeeded")
    # Three more claims that found nothing: each would have taken the paused queue's job.
    pool.test_signals.wait_polls(3, empty=True)
    assert Job.objects.get(pk=held.pk).status == "queued"
    QueueSetting.objects.filter(queue="emails").update(paused=False)
    # Claimed within a poll interval or so of the resume.
    pool.test_signals.wait_ended([held.pk], "succeeded", timeout=5)


def test_pausing_lets_running_jobs_finish(worker_pool):
    job = services.enqueue("sleep", {"seconds": 1}, queue="slow")
    pool = worker_pool(threads=1)
    pool.test_signals.wait_started([job.pk])
    QueueSetting.objects.create(queue="slow", paused=True)
    pool.test_signals.wait_ended([job.pk], "succeeded")
