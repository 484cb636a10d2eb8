"""`run_job_workers --processes N`: a supervisor and N real worker processes. A child killed
with SIGKILL is replaced and its jobs requeued; a handler looping forever past its timeout has
its process ended and replaced while the other processes keep running jobs, its job retried
then failed by its policy; --max-jobs-per-process recycles a process after exactly that many
jobs, none lost or run twice; SIGTERM finishes or releases everything within the grace period
and exits 0, also when it catches children still in Python's start-up; a second signal ends
the children at once."""
import os
import signal
import time
from collections import Counter

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import Job, JobEvent
from tests import chaos_handlers  # noqa: F401  (registers `chaos` and `spin` in this process)
from tests.chaos_handlers import Ledger, Output, worker_env
from tests.utils import process_alive, spawn_workers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _stop(proc, out, timeout=30):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except Exception:
            proc.kill()
            raise AssertionError("supervisor did not stop on SIGTERM:\n"
                                 + out.text()[-4000:]) from None
    return proc.returncode


def _child_pids(prefix_jobs=None) -> set[int]:
    """The worker processes running jobs now, by pid (from `locked_by`: host-pid-thread)."""
    return {int(w.rsplit("-", 2)[1]) for w in Job.objects.running()
            .exclude(locked_by__isnull=True).values_list("locked_by", flat=True)}


def test_a_child_killed_with_sigkill_is_replaced_and_its_jobs_are_requeued(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "long", "seconds": 4}}
                           for _ in range(4)]
                          + [{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.2},
                              "priority": -1} for _ in range(40)])
    proc = spawn_workers("--processes", "2", "--threads", "2",
                         env=worker_env(ledger_path, JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        pids = wait_for(lambda: len(_child_pids()) == 2 and _child_pids(), timeout=60,
                        message="both children running jobs")
        victim = min(pids)
        held = dict(Job.objects.running().filter(locked_by__contains=f"-{victim}-")
                    .values_list("id", "locked_by"))
        assert held
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: "killed by signal SIGKILL" in out.text(), timeout=10,
                 message="the supervisor logs the kill")
        # A new child takes the dead one's place and the jobs finish, the victim's too.
        wait_for(lambda: not Job.objects.exclude(status="succeeded").exists(), timeout=90,
                 message="every job succeeded")
        ledger = Ledger.read(ledger_path)
        pids_seen = {x.pid for x in ledger.executions.values()}
        assert len(pids_seen - pids) >= 1, "a replacement child ran jobs"
        assert not ledger.duplicate_starts
        for job_id, locked_by in held.items():
            kinds = list(JobEvent.objects.filter(job_id=job_id).values_list("kind", flat=True))
            # One the victim had only prefetched never started: given back uncharged.
            reaped = "released" if locked_by.endswith("-prefetch") else "lease_expired"
            assert kinds.count(reaped) == 1 and kinds.count("succeeded") == 1
        assert process_alive(proc.pid)
    finally:
        rc = _stop(proc, out)
    assert rc == 0, out.text()[-4000:]
    assert Counter(Job.objects.values_list("status", flat=True)) == {"succeeded": 44}
    report = audit()
    assert report.ok, report.format()


def test_sigterm_finishes_or_releases_every_childs_jobs_within_the_grace_and_exits_0(tmp_path):
    grace = 3.0
    ledger_path = tmp_path / "ledger.tsv"
    short = services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 1.5}}
                                   for _ in range(2)])
    long = services.enqueue_many([{"type": "chaos", "payload": {"mode": "long", "seconds": 60}}
                                  for _ in range(2)])
    proc = spawn_workers("--processes", "2", "--threads", "2",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=grace,
                                        JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    wait_for(lambda: Job.objects.running().count() == 4, timeout=60, message="4 jobs running")
    children = _child_pids()
    proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    try:
        rc = proc.wait(grace + 15)
    except Exception:
        proc.kill()
        raise AssertionError(out.text()[-4000:]) from None
    took = time.monotonic() - signalled
    assert rc == 0, out.text()[-4000:]
    assert took < grace + 5, f"exit took {took:.1f}s with a {grace}s grace period"
    assert not any(process_alive(pid) for pid in children)
    for job in short:
        job.refresh_from_db()
        assert job.status == "succeeded"
    for job in long:
        job.refresh_from_db()
        assert (job.status, job.attempts, job.locked_by) == ("queued", 0, None)
        assert JobEvent.objects.filter(job=job, kind="released").count() == 1
    assert not Job.objects.running().exists()
    report = audit()
    assert report.ok, report.format()


def test_a_second_signal_ends_the_children_at_once(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "long", "seconds": 60}}
                           for _ in range(2)])
    proc = spawn_workers("--processes", "2", "--threads", "1", "--prefetch", "0",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=30))
    out = Output(proc)
    wait_for(lambda: len(_child_pids()) == 2, timeout=60, message="a job running in each child")
    children = _child_pids()
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)  # the impatient operator
    signalled = time.monotonic()
    try:
        rc = proc.wait(10)
    except Exception:
        proc.kill()
        raise AssertionError(out.text()[-4000:]) from None
    assert rc == 1 and time.monotonic() - signalled < 5
    wait_for(lambda: not any(process_alive(pid) for pid in children), timeout=5,
             message="the children are gone")
    # Not released: the processes are gone; the leases lapse and the reaper requeues them.
    assert Job.objects.running().count() == 2


def test_a_handler_looping_past_its_timeout_has_its_process_replaced_then_fails_by_policy(
        tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    spin = services.enqueue("spin", {})  # timeout 2 s, max_attempts 2
    others = services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.25}}
                                    for _ in range(60)])
    proc = spawn_workers("--processes", "2", "--threads", "2",
                         env=worker_env(ledger_path, JOB_TIMEOUT_GRACE_SECONDS=1,
                                        JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        wait_for(lambda: Job.objects.filter(pk=spin.pk, status="failed").exists(), timeout=90,
                 message="the spinning job failed")
        wait_for(lambda: Job.objects.filter(status="succeeded").count() == 60, timeout=90,
                 message="the other jobs succeeded")
        wait_for(lambda: out.text().count("ended for a handler past its timeout") == 2,
                 timeout=30, message="both attempts' processes were replaced")
    finally:
        rc = _stop(proc, out)
    assert rc == 0, out.text()[-4000:]
    spin.refresh_from_db()
    assert spin.attempts == 2 and "timed out after 2s" in spin.last_error
    kinds = list(JobEvent.objects.filter(job=spin).values_list("kind", flat=True))
    assert kinds.count("claimed") >= 2 and kinds.count("retry_scheduled") == 1
    stuck = JobEvent.objects.filter(job=spin, kind="log", data__stuck=True)
    assert stuck.count() == 2
    # The other jobs ran while the spinning one held a thread, each exactly once.
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    spin_runs = ledger.by_job[spin.pk]
    during = [x for j in others for x in ledger.by_job[j.pk]
              if spin_runs[0].started < x.started < spin_runs[0].started + 3]
    assert during, "other jobs started while the handler spun"
    for job in others:
        assert len([x for x in ledger.by_job[job.pk] if x.outcome == "return"]) == 1
    report = audit()
    assert report.ok, report.format()


def test_max_jobs_per_process_recycles_after_that_many_jobs_with_none_lost_or_run_twice(
        tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.005}}
                           for _ in range(250)])
    proc = spawn_workers("--processes", "1", "--threads", "4", "--max-jobs-per-process", "100",
                         env=worker_env(ledger_path, JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        wait_for(lambda: Job.objects.filter(status="succeeded").count() == 250, timeout=120,
                 message="every job succeeded")
    finally:
        rc = _stop(proc, out)
    assert rc == 0, out.text()[-4000:]
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    assert all(len(runs) == 1 for runs in ledger.by_job.values()) and len(ledger.by_job) == 250
    per_process = sorted(Counter(x.pid for x in ledger.executions.values()).values())
    assert per_process == [50, 100, 100]
    assert out.text().count("recycled (exit status 3)") == 2
    report = audit()
    assert report.ok, report.format()


def test_max_memory_per_process_recycles_a_process_that_grew_past_it(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "hog", "mb": 60}}
                           for _ in range(6)])
    proc = spawn_workers("--processes", "1", "--threads", "1", "--prefetch", "0",
                         "--max-memory-per-process", "200",
                         env=worker_env(ledger_path, JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        wait_for(lambda: Job.objects.filter(status="succeeded").count() == 6, timeout=120,
                 message="every job succeeded")
    finally:
        rc = _stop(proc, out)
    assert rc == 0, out.text()[-4000:]
    assert "over --max-memory-per-process 200 MiB: recycling" in out.text()
    assert "recycled (exit status 3)" in out.text()
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    assert all(len(runs) == 1 for runs in ledger.by_job.values()) and len(ledger.by_job) == 6
    # A process leaking 60 MiB a job was replaced before it held them all.
    assert len({x.pid for x in ledger.executions.values()}) >= 2


def test_a_stop_that_catches_a_child_still_starting_is_a_clean_stop(tmp_path):
    """SIGTERM while the children are still in Python's start-up, before any of our code could
    install a handler (here held there by a sitecustomize that sleeps in spawned children
    only; on a loaded machine the interpreter's own start-up is the window): they die of the
    signal. They held nothing, so the stop is clean: exit status 0, no worker row left to
    turn lost."""
    from django_pg_jobqueue.models import WorkerProcess

    (tmp_path / "sitecustomize.py").write_text(
        "import sys, time\n"
        "if '--multiprocessing-fork' in sys.argv:\n"
        "    time.sleep(5)\n")
    pythonpath = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    proc = spawn_workers("--processes", "2", "--threads", "1",
                         env={**worker_env(tmp_path / "ledger.tsv", JOB_WORKER_LOG_LEVEL="INFO"),
                              "PYTHONPATH": pythonpath})
    out = Output(proc)
    wait_for(lambda: "started worker process 1" in out.text(), timeout=30,
             message="the supervisor started its second child")
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(30)
    except Exception:
        proc.kill()
        raise AssertionError(out.text()[-4000:]) from None
    assert "killed by signal SIGTERM" in out.text() or "stopped before it started" in out.text(), \
        out.text()[-4000:]  # the window was hit: the test proves something
    assert rc == 0, out.text()[-4000:]
    assert not WorkerProcess.objects.exists(), out.text()[-4000:]
