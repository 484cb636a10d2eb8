"""A host's queue overrides on two real `run_job_workers` processes acting as two hosts
(`--hostname host-a`, `--hostname host-b`, three threads each, one queue):

- the queue stopped on host A: every job enqueued afterwards starts on host B;
- host B given one thread for the queue (A still stopped): B's jobs of the queue never
  overlap, where its three threads would otherwise run three at once;
- both overrides removed: both hosts run the queue again, and B's jobs overlap again.

Each job's host is read from the worker id of the `start` event its handler writes (the
executor's `<host>-<pid>-<n>`); overlap from the `start` and `end` events' times (the
database clock). Each phase begins once both workers logged that they read the change
(worker/overrides.py), so no phase waits for time to pass."""
import signal
from collections import defaultdict

import pytest

from django_pg_jobqueue import enqueue, enqueue_many, services
from django_pg_jobqueue.models import JobEvent
from django_pg_jobqueue.services import remove_worker_override, set_worker_override
from tests.handlers import serial_handlers  # noqa: F401  (registers `key_probe` in this process)
from tests.handlers.chaos_handlers import Output
from tests.system.test_concurrency_keys_workers import most_at_once
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

QUEUE = "hostq"
ENV = {
    "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.serial_handlers",
    # Renewal passes (and so override reads) every 0.5 s: min(lease / 3, 2 s).
    "JOB_LEASE_SECONDS": "1.5", "JOB_POLL_INTERVAL_SECONDS": "0.5",
    "JOB_SHUTDOWN_GRACE_SECONDS": "2", "JOB_WORKER_LOG_LEVEL": "INFO",
}


class Hosts:
    def __init__(self):
        self.procs: dict[str, tuple] = {}

    def start(self, hostname: str):
        proc = spawn_workers("--hostname", hostname, "--queues", QUEUE, "--threads", "3",
                             env=ENV)
        self.procs[hostname] = (proc, Output(proc))

    def read(self, hostname: str, overrides: str, count: int = 1) -> None:
        """Wait until `hostname`'s worker logged that its overrides are now `overrides`."""
        self.procs[hostname][1].wait_for_line(f"queue overrides now: {overrides}", count)

    def stop(self):
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in self.procs.values():
            try:
                proc.wait(20)
            except Exception:  # noqa: BLE001 - a stuck worker must not outlive the test
                proc.kill()
                proc.wait(5)


@pytest.fixture
def hosts():
    h = Hosts()
    yield h
    h.stop()


def runs_by_host(job_ids) -> dict[str, list[tuple[float, float]]]:
    """Each host's handler runs of these jobs, (start, end) on the database clock."""
    starts, ends, host_of = {}, {}, {}
    for job_id, message, at, worker_id in JobEvent.objects.filter(
            job_id__in=job_ids, kind="log", message__in=["start", "end"]).values_list(
            "job_id", "message", "created_at", "worker_id"):
        if message == "start":
            starts[job_id], host_of[job_id] = at.timestamp(), worker_id.rsplit("-", 2)[0]
        else:
            ends[job_id] = at.timestamp()
    runs = defaultdict(list)
    for job_id, start in starts.items():
        runs[host_of[job_id]].append((start, ends[job_id]))
    return dict(runs)


def run_batch(n: int, seconds: float) -> dict[str, list[tuple[float, float]]]:
    jobs = enqueue_many([{"type": "key_probe", "queue": QUEUE, "payload": {"seconds": seconds}}
                         for _ in range(n)])
    ids = [j.id for j in jobs]
    wait_until_jobs("succeeded", id__in=ids, timeout=60)
    return runs_by_host(ids)


def test_stop_on_one_host_then_one_thread_then_back(hosts):
    enqueue("key_probe", queue=QUEUE, payload={"seconds": 0})  # the queue exists
    # The service knows a host by its workers' heartbeat rows; these two stand for the
    # workers' first beats, so that A is stopped before its first claim (the workers' own
    # rows, under their own ids, follow).
    for host in ("host-a", "host-b"):
        services.heartbeat(f"{host}-0", hostname=host, pid=0, threads=3, queues=[QUEUE])
    set_worker_override(QUEUE, "host-a", stopped=True, actor="test")
    hosts.start("host-a")
    hosts.start("host-b")

    # Stopped on A: only B starts the queue's jobs.
    hosts.read("host-a", f"{QUEUE} stopped")
    runs = run_batch(30, 0.1)
    assert set(runs) == {"host-b"}, runs.keys()

    # One thread on B (A still stopped): B runs them one at a time.
    set_worker_override(QUEUE, "host-b", threads=1, actor="test")
    hosts.read("host-b", f"{QUEUE} threads=1")
    runs = run_batch(12, 0.1)
    assert set(runs) == {"host-b"}
    assert most_at_once(runs["host-b"]) == 1

    # Cleared: both hosts run the queue, B on its three threads again.
    remove_worker_override(QUEUE, "host-a", actor="test")
    remove_worker_override(QUEUE, "host-b", actor="test")
    hosts.read("host-a", "none")
    hosts.read("host-b", "none")
    runs = run_batch(30, 0.2)
    assert set(runs) == {"host-a", "host-b"}, runs.keys()
    assert most_at_once(runs["host-b"]) >= 2
