"""Fair shares and priority aging on real `run_job_workers` processes.

Fair shares: tenant A enqueues 5,000 jobs, then tenants B and C 10 each; one processing lane
(one process, one thread) takes them round-robin by fairness key, so every B and C job starts
before A's 60th job after them. With the queue not fair, the same backlog runs A's jobs first.

Under a concurrency limit: the same turns on two processes of two threads each, with the
queue limited to two running jobs (the limited claim, in the fair order): every B and C job
starts before A's 60th after them, and no more than two jobs ever run at once (from the
start and end each handler body logs, on the database clock).

Aging: a stream of priority-10 jobs, arriving faster than two threads run them, keeps a
backlog; a priority-0 job in a queue that ages its jobs every N seconds is claimed ahead of
every priority-10 job that became due 10 x N seconds or more after it (the bound
docs/how-to/fairness.md states). Both read the claim's own clock: each job's `started_at`."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import (
    enqueue,
    enqueue_many,
    set_queue_aging,
    set_queue_fairness,
    set_queue_limit,
)
from django_pg_jobqueue.models import Job
from tests.handlers import serial_handlers  # noqa: F401  (registers `key_probe` in this process)
from tests.system.test_concurrency_keys_workers import intervals, most_at_once
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

ENV = {"JOB_WORKER_LOG_LEVEL": "WARNING", "JOB_SHUTDOWN_GRACE_SECONDS": "2"}


@pytest.fixture
def workers():
    procs = []

    def start(*args: str, env: dict | None = None):
        procs.append(spawn_workers(*args, env={**ENV, **(env or {})}))

    yield start
    stop_workers(*procs)


def _tenants(queue: str) -> tuple[list[int], list[int]]:
    """A's 5,000 jobs, then B's and C's 10 each: A's ids, and B's and C's."""
    a = enqueue_many([{"type": "noop", "queue": queue, "fairness_key": "tenant:a"}
                      for _ in range(5000)])
    others = enqueue_many([{"type": "noop", "queue": queue, "fairness_key": f"tenant:{t}"}
                           for t in ("b", "c") for _ in range(10)])
    return [j.id for j in a], [j.id for j in others]


def _a_started_before(a_ids: list[int], moment) -> int:
    return Job.objects.filter(pk__in=a_ids, started_at__lt=moment).count()


def test_one_lane_takes_turns_by_key_so_b_and_c_do_not_wait_behind_a_backlog(workers):
    a_ids, other_ids = _tenants("tenants")
    set_queue_fairness("tenants", True)  # the queue exists once it has jobs

    workers("--queues", "tenants", "--threads", "1")
    wait_until_jobs("succeeded", id__in=other_ids, timeout=60)

    last_other = max(Job.objects.filter(pk__in=other_ids).values_list("started_at", flat=True))
    # Round-robin: about one of A's jobs per turn of B and C, never sixty.
    assert _a_started_before(a_ids, last_other) < 60


def test_under_a_concurrency_limit_two_processes_take_turns_by_key_within_the_limit(workers):
    probe = {"type": "key_probe", "queue": "limited", "payload": {"seconds": 0.005}}
    a_ids = [j.id for j in enqueue_many([{**probe, "fairness_key": "tenant:a"}] * 2000)]
    other_ids = [j.id for j in enqueue_many([{**probe, "fairness_key": f"tenant:{t}"}
                                             for t in ("b", "c") for _ in range(10)])]
    set_queue_fairness("limited", True)
    set_queue_limit("limited", 2)

    env = {"JOB_EXTRA_HANDLER_MODULES": "tests.handlers.serial_handlers"}
    workers("--queues", "limited", "--threads", "2", env=env)
    workers("--queues", "limited", "--threads", "2", env=env)
    wait_until_jobs("succeeded", id__in=other_ids, timeout=120)

    last_other = max(Job.objects.filter(pk__in=other_ids).values_list("started_at", flat=True))
    a_first = _a_started_before(a_ids, last_other)
    print(f"A's jobs started before the last of B's and C's: {a_first}")
    assert a_first < 60
    started = list(Job.objects.filter(queue="limited", started_at__isnull=False)
                   .values_list("id", flat=True))
    runs = [(s, e if e is not None else float("inf"))
            for rs in intervals(started).values() for s, e in rs]
    assert most_at_once(runs) <= 2, "the queue's limit of two was exceeded"


def test_without_fairness_the_same_backlog_runs_a_first(workers):
    a_ids, other_ids = _tenants("plain")

    workers("--queues", "plain", "--threads", "1")
    wait_until_jobs("succeeded", id__in=a_ids, at_least=100, timeout=60)

    first_other = Job.objects.filter(pk__in=other_ids, started_at__isnull=False).values_list(
        "started_at", flat=True).order_by("started_at").first()
    assert first_other is None or _a_started_before(a_ids, first_other) >= 60


def test_an_aging_low_priority_job_overtakes_later_high_priority_work_within_the_bound(workers):
    aging_seconds = 0.02  # priority 0 reaches priority 10 after 10 x 0.02 s = 0.2 s due
    # The workers first, claiming already: the stream must meet them, not a startup's backlog.
    ready = enqueue("noop", queue="aging")
    set_queue_aging("aging", aging_seconds)
    workers("--queues", "aging", "--threads", "2")
    wait_until_jobs("succeeded", id__in=[ready.id], timeout=60)
    # A stream of priority-10 jobs of 20 ms, one due every 4 ms for 4 s: five times what two
    # threads can run, so a backlog of them is always waiting.
    t0 = timezone.now() + timedelta(seconds=0.2)
    stream = enqueue_many([{"type": "sleep", "queue": "aging", "priority": 10,
                            "payload": {"seconds": 0.02},
                            "run_at": t0 + timedelta(seconds=0.004 * i)} for i in range(1000)])
    low = enqueue("noop", queue="aging", priority=0, run_at=t0 + timedelta(seconds=0.2))
    wait_until_jobs("succeeded", id__in=[low.id], timeout=60)

    low.refresh_from_db()
    bound = low.available_at + timedelta(seconds=10 * aging_seconds)
    high = Job.objects.filter(pk__in=[j.id for j in stream])
    # It waited: priority-10 jobs due after it ran first (the priority mattered) ...
    assert high.filter(available_at__gt=low.available_at, started_at__lt=low.started_at).exists()
    # ... but none that became due 10 x aging_seconds or more after it.
    overtaken = high.filter(available_at__gte=bound, started_at__lt=low.started_at)
    assert not overtaken.exists(), list(overtaken.values_list("id", "available_at", "started_at"))
    # And the stream was still running: later-due priority-10 jobs ran after it.
    assert high.filter(available_at__gte=bound, started_at__gt=low.started_at).exists() or (
        high.filter(available_at__gte=bound, status="queued").exists())
