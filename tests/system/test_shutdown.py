"""Graceful shutdown of a real `run_job_workers` process: SIGTERM lets short jobs finish,
releases long ones to queued without charging an attempt, and exits 0 within the grace
period; a second signal exits at once, and even then no job is lost."""
import signal
import time

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.handlers.chaos_handlers import Ledger, Output, worker_env
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

GRACE = 3.0


def _wait_exit(proc, out, timeout):
    try:
        return proc.wait(timeout)
    except Exception:
        proc.kill()
        raise AssertionError(f"worker still alive {timeout}s after the signal:\n{out.text()[-3000:]}") from None


def test_sigterm_finishes_short_jobs_releases_long_ones_uncharged_and_exits_0(tmp_path):
    ledger = tmp_path / "ledger.tsv"
    short = services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 1.5}}
                                   for _ in range(2)])
    long = services.enqueue_many([{"type": "chaos", "payload": {"mode": "long", "seconds": 60}}
                                  for _ in range(2)])
    proc = spawn_workers("--threads", "4", env=worker_env(ledger, JOB_SHUTDOWN_GRACE_SECONDS=GRACE,
                                                          JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    wait_until_jobs("running", count=4, timeout=20)
    proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    rc = _wait_exit(proc, out, GRACE + 10)
    took = time.monotonic() - signalled
    assert rc == 0, out.text()[-3000:]
    assert took < GRACE + 3, f"exit took {took:.1f}s with a {GRACE}s grace period"

    for job in short:
        job.refresh_from_db()
        assert job.status == "succeeded"
    for job in long:
        job.refresh_from_db()
        assert (job.status, job.attempts, job.locked_by, job.lease_token) == ("queued", 0, None, None)
        released = HistoryEvent.objects.get(job=job, kind="released")
        # The release carries its attempt's start (the claim writes no event): the lease its
        # handler ran under.
        assert released.data["started_at"]
        assert [x.token for x in Ledger.read(ledger).by_job[job.id]] \
            == [released.data["lease_token"]]
        assert released.message == "worker shutting down"
    # The long handlers were asked to stop, and did, hearing the stop: from their wait, or,
    # when a progress write came after the release of their jobs, from that refused write.
    executions = Ledger.read(ledger).executions.values()
    outcomes = sorted(x.outcome for x in executions)
    assert outcomes[2:] == ["return"] * 2
    assert outcomes[:2] == ["raise:JobCancelled"] * 2, outcomes
    assert not Job.objects.running().exists()
    assert "received SIGTERM: shutting down gracefully" in out.text()
    print(f"\nshutdown: exited 0 {took:.2f}s after SIGTERM (grace {GRACE}s); 2 finished, 2 released")
    report = audit()
    assert report.ok, report.format()


def test_a_second_signal_exits_at_once_and_its_jobs_are_recovered_by_lease_expiry(tmp_path):
    ledger = tmp_path / "ledger.tsv"
    # Long enough that the graceful stop cannot end with it before the second signal comes,
    # however loaded the machine.
    job = services.enqueue("chaos", {"mode": "long", "seconds": 6})
    proc = spawn_workers("--threads", "2", env=worker_env(ledger, JOB_SHUTDOWN_GRACE_SECONDS=30,
                                                          JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    wait_until_jobs("running", at_least=1, timeout=20)
    proc.send_signal(signal.SIGTERM)
    out.wait_for_line("received SIGTERM: shutting down gracefully", timeout=10)
    proc.send_signal(signal.SIGTERM)   # the impatient operator, once the first was taken
    signalled = time.monotonic()
    rc = _wait_exit(proc, out, 5)
    assert rc == 1 and time.monotonic() - signalled < 2
    job.refresh_from_db()
    assert job.status == "running"     # not released: the process is gone, its lease will lapse

    second = spawn_workers("--threads", "2", env=worker_env(ledger))
    second_out = Output(second)
    try:
        wait_until_jobs("succeeded", pk=job.pk, message="the abandoned job ran again")
    finally:
        second.send_signal(signal.SIGINT)   # SIGINT shuts down gracefully too
        assert _wait_exit(second, second_out, 15) == 0
    events = list(HistoryEvent.objects.filter(job=job).values_list("kind", "data"))
    kinds = [kind for kind, _ in events]
    # Two attempts started, each start carried by its outcome (the claim writes no event).
    assert sum("started_at" in data for _, data in events) == 2
    assert kinds.count("lease_expired") == 1
    assert kinds.count("succeeded") == 1
    report = audit()
    assert report.ok, report.format()
