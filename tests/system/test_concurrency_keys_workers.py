"""Concurrency keys on real `run_job_workers` processes: two processes of eight threads never
run two jobs of one key at once (nor more than three under a limit of three), checked from the
start and end each handler body records as events; jobs of other keys are not slowed by a
key's backlog; a worker killed while holding a keyed job blocks the key only until its lease
expires."""
import signal
import time
from collections import defaultdict

import pytest

from django_pg_jobqueue import enqueue, enqueue_many
from django_pg_jobqueue.models import Job, JobEvent
from tests.handlers import serial_handlers  # noqa: F401  (registers `key_probe` in this process)
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

LEASE_SECONDS = 2.0
ENV = {
    "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.serial_handlers",
    "JOB_LEASE_SECONDS": str(LEASE_SECONDS), "JOB_REAPER_INTERVAL_SECONDS": "0.5",
    "JOB_RETRY_BASE_SECONDS": "0.05", "JOB_RETRY_MAX_SECONDS": "0.2", "JOB_RETRY_JITTER": "0",
    "JOB_POLL_INTERVAL_SECONDS": "1", "JOB_SHUTDOWN_GRACE_SECONDS": "2",
    "JOB_WORKER_LOG_LEVEL": "WARNING",
}


class Workers:
    def __init__(self):
        self.procs = []

    def start(self, threads=8):
        proc = spawn_workers("--threads", str(threads), env=ENV)
        self.procs.append((proc, Output(proc)))
        return proc

    def stop(self):
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in self.procs:
            try:
                proc.wait(20)
            except Exception:  # noqa: BLE001 - a stuck worker must not outlive the test
                proc.kill()
                proc.wait(5)

    def output(self) -> str:
        return "\n".join(out.text()[-2000:] for _, out in self.procs)


@pytest.fixture
def workers():
    w = Workers()
    yield w
    w.stop()


def intervals(job_ids) -> dict[int, list[tuple[float, float]]]:
    """Each job's handler runs, as (start, end) pairs on the database clock, from its events."""
    runs: dict[int, list] = defaultdict(list)
    events = (JobEvent.objects.filter(job_id__in=job_ids, kind="log", message__in=["start", "end"])
              .order_by("job_id", "id").values_list("job_id", "message", "created_at"))
    for job_id, message, at in events:
        if message == "start":
            runs[job_id].append([at.timestamp(), None])
        else:
            runs[job_id][-1][1] = at.timestamp()
    return {j: [tuple(r) for r in rs] for j, rs in runs.items()}


def most_at_once(runs) -> int:
    """The most runs that overlap at any instant (an end at t frees its slot for a start at t)."""
    edges = sorted([(s, 1) for s, _ in runs] + [(e, -1) for _, e in runs])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def all_succeeded(ids, timeout):
    wait_until_jobs("succeeded", id__in=ids, timeout=timeout)


def test_one_key_runs_one_at_a_time_on_two_processes_without_slowing_other_keys(workers):
    seconds = 0.1
    serial = enqueue_many([{"type": "key_probe", "payload": {"seconds": seconds},
                            "concurrency_key": "customer:42"} for _ in range(50)])
    others = enqueue_many([{"type": "key_probe", "payload": {"seconds": seconds},
                            "concurrency_key": f"customer:{i}"} for i in range(100, 150)])
    workers.start()
    workers.start()
    ids = [j.id for j in serial + others]
    try:
        all_succeeded(ids, timeout=180)
    except AssertionError:
        raise AssertionError(workers.output()) from None
    runs = intervals(ids)
    assert all(len(runs[j.id]) == 1 and runs[j.id][0][1] for j in serial + others)
    serial_runs = sorted(runs[j.id][0] for j in serial)
    for (_, end), (start, _) in zip(serial_runs, serial_runs[1:]):
        assert start >= end, "two jobs of customer:42 ran at once"
    # The serial key ran in claim order: its jobs were enqueued in order.
    assert [runs[j.id][0] for j in serial] == serial_runs
    other_runs = [runs[j.id][0] for j in others]
    assert most_at_once(other_runs) > 1  # the other keys ran side by side
    # Not slowed: every other key's job was done before the serial key was half way, though
    # all 50 of its jobs were ahead of them in claim order (loaded machines: generous).
    t0 = min(s for s, _ in serial_runs + other_runs)
    others_done = max(e for _, e in other_runs) - t0
    serial_done = serial_runs[-1][1] - t0
    assert serial_done >= 50 * seconds
    assert others_done < serial_done / 2, (others_done, serial_done)


def test_a_limit_of_three_is_never_exceeded_on_two_processes(workers):
    jobs = enqueue_many([{"type": "key_probe", "payload": {"seconds": 0.3},
                          "concurrency_key": "tenant:7", "concurrency_key_limit": 3}
                         for _ in range(30)])
    workers.start()
    workers.start()
    ids = [j.id for j in jobs]
    try:
        all_succeeded(ids, timeout=180)
    except AssertionError:
        raise AssertionError(workers.output()) from None
    runs = [r for rs in intervals(ids).values() for r in rs]
    assert len(runs) == 30
    assert most_at_once(runs) == 3  # reached, never exceeded


def test_a_killed_worker_blocks_its_key_only_until_its_lease_expires(workers):
    held = enqueue("key_probe", {"seconds": 0.05, "hang_first_attempt": True},
                   concurrency_key="customer:42")
    victim = workers.start(threads=1)
    workers.procs[-1][1].wait_for_line(f"key_probe: job={held.id} hangs", timeout=60)
    waiting = enqueue("key_probe", {"seconds": 0.05}, concurrency_key="customer:42")
    workers.start()
    time.sleep(2 * LEASE_SECONDS)  # by design: while the victim renews its lease, the key stays held
    assert Job.objects.get(pk=waiting.id).status == "queued"
    victim.send_signal(signal.SIGKILL)
    killed_at = time.time()
    victim.wait(10)
    try:
        all_succeeded([held.id, waiting.id], timeout=60)
    except AssertionError:
        raise AssertionError(workers.output()) from None
    runs = intervals([held.id, waiting.id])
    after_kill = sorted(r for rs in runs.values() for r in rs if r[0] > killed_at - 1)
    # The next run of the key began once the lease had expired, and not long after.
    assert after_kill, runs
    delay = after_kill[0][0] - killed_at
    assert 0 < delay < LEASE_SECONDS + 15, delay
    assert len(runs[held.id]) == 2  # killed once, then run again
