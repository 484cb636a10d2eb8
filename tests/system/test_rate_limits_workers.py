"""Rate limits on real `run_job_workers` processes: three processes of several threads drain a
type limited to N starts per second, and in every sliding one-second window, read from the
jobs' own start times (the claim's clock), at most N started; most of the allowed rate is
used; jobs of another type, behind them in claim order, are not held back. A keyed limit over
many customers holds per customer and every customer progresses. The full-size variant (20
per second, 3 x 8 threads, 30 s) is marked slow."""
import pytest

from django_pg_jobqueue import enqueue_many, set_rate_limit
from django_pg_jobqueue.models import Job
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

ENV = {"JOB_WORKER_LOG_LEVEL": "WARNING", "JOB_SHUTDOWN_GRACE_SECONDS": "2"}


@pytest.fixture
def workers():
    procs = []

    def start(processes: int, threads: int):
        for _ in range(processes):
            procs.append(spawn_workers("--threads", str(threads), env=ENV))

    yield start
    stop_workers(*procs)


def starts(ids) -> list[float]:
    return sorted(t.timestamp() for t in Job.objects.filter(pk__in=ids)
                  .values_list("started_at", flat=True))


def most_in_a_window(times: list[float], period: float) -> int:
    """The most starts in any window (t - period, t]: each window that holds the most ends at
    a start, so those are the windows to count."""
    most, first = 0, 0
    for last, t in enumerate(times):
        while times[first] <= t - period:
            first += 1
        most = max(most, last - first + 1)
    return most


def used_share(times: list[float], per_second: int) -> float:
    """The rate the starts after the first window's reached, as a share of the limit."""
    span = times[-1] - times[0]
    return (len(times) - per_second) / span / per_second


def drain_a_limited_type(workers, *, per_second, jobs, others, processes, threads, timeout):
    set_rate_limit(type="noop", max_starts=per_second, period_seconds=1)
    limited = enqueue_many([{"type": "noop", "payload": {"i": i}, "priority": 5}
                            for i in range(jobs)])
    workers(processes, threads)
    # Jobs of another type, behind the limited ones in claim order, once the drain is under way.
    wait_until_jobs("succeeded", type="noop", at_least=per_second, timeout=60)
    other = enqueue_many([{"type": "sleep", "payload": {"seconds": 0}} for _ in range(others)])
    ids = [j.id for j in limited]
    wait_until_jobs("succeeded", id__in=ids, timeout=timeout)
    wait_until_jobs("succeeded", id__in=[j.id for j in other], timeout=30)
    times = starts(ids)
    assert Job.objects.filter(pk__in=ids).exclude(attempts=1).count() == 0  # none charged twice
    assert most_in_a_window(times, 1.0) <= per_second
    other_times = starts([j.id for j in other])
    return times, other_times, min(other_times)


def test_a_type_limited_to_ten_a_second_never_starts_more_in_any_window(workers):
    times, other_times, other_enqueued_after = drain_a_limited_type(
        workers, per_second=10, jobs=80, others=20, processes=3, threads=4, timeout=120)
    assert most_in_a_window(times, 1.0) == 10  # reached, never exceeded
    assert used_share(times, 10) >= 0.6, used_share(times, 10)  # a loaded machine: generous
    # The other type ran at once, while the limited type still had most of its backlog.
    assert other_times[-1] - other_enqueued_after < 2.0
    assert other_times[-1] < times[-1] - 2.0


@pytest.mark.slow
def test_twenty_a_second_over_three_processes_of_eight_threads_for_thirty_seconds(workers):
    times, other_times, _ = drain_a_limited_type(
        workers, per_second=20, jobs=620, others=100, processes=3, threads=8, timeout=120)
    assert most_in_a_window(times, 1.0) == 20
    assert used_share(times, 20) >= 0.9, used_share(times, 20)
    assert other_times[-1] < times[-1] - 10.0


def test_a_keyed_limit_holds_per_customer_and_every_customer_progresses(workers):
    customers = 20
    set_rate_limit(key="customer:*", max_starts=2, period_seconds=1)
    jobs = enqueue_many([{"type": "noop", "payload": {"i": i},
                          "concurrency_key": f"customer:{c}", "concurrency_key_limit": 1000}
                         for c in range(customers) for i in range(6)])
    workers(3, 4)
    wait_until_jobs("succeeded", id__in=[j.id for j in jobs], timeout=120)
    by_key: dict[str, list[float]] = {}
    for key, at in Job.objects.filter(pk__in=[j.id for j in jobs]).values_list(
            "concurrency_key", "started_at"):
        by_key.setdefault(key, []).append(at.timestamp())
    t0 = min(min(ts) for ts in by_key.values())
    for key, ts in by_key.items():
        ts.sort()
        assert most_in_a_window(ts, 1.0) <= 2, key
        assert ts[0] - t0 < 3.0, f"{key} waited behind the others"
        assert ts[-1] - ts[0] >= 2.0, key  # 6 starts at 2 a second: three windows at least
