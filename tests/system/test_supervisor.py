"""`run_job_workers --processes N`: a supervisor and N real worker processes. A child killed
with SIGKILL is replaced and its jobs settled at once (those it was running charged, those it
had only prefetched released uncharged); a handler looping forever past its timeout has
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
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` and `spin` in this process)
from tests.handlers.chaos_handlers import Ledger, Output, worker_env
from tests.utils import process_alive, spawn_workers, stop_gracefully, wait_for, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


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
        # Polls: which processes hold jobs is known only from the rows they locked.
        pids = wait_for(lambda: len(_child_pids()) == 2 and _child_pids(), timeout=60,
                        message="both children running jobs")
        victim = min(pids)
        held = dict(Job.objects.running().filter(locked_by__contains=f"-{victim}-")
                    .values_list("id", "locked_by"))
        assert held
        os.kill(victim, signal.SIGKILL)
        out.wait_for_line("killed by signal SIGKILL", timeout=10)
        # A new child takes the dead one's place and the jobs finish, the victim's too.
        wait_until_jobs("succeeded", timeout=90)
        ledger = Ledger.read(ledger_path)
        pids_seen = {x.pid for x in ledger.executions.values()}
        assert len(pids_seen - pids) >= 1, "a replacement child ran jobs"
        assert not ledger.duplicate_starts
        for job_id, locked_by in held.items():
            kinds = list(HistoryEvent.objects.filter(job_id=job_id).values_list("kind", flat=True))
            # Settled by the supervisor at once, not at lease expiry: charged if its handler
            # was running, released uncharged if it waited in the prefetch buffer.
            assert kinds.count("lease_expired") == 0 and kinds.count("succeeded") == 1
            settled = list(HistoryEvent.objects.filter(job_id=job_id, worker_id__contains=f"-{victim}-")
                           .exclude(kind__in=["claimed", "progress"])
                           .values_list("kind", flat=True))
            assert settled in (["retry_scheduled"], ["released"])
        assert process_alive(proc.pid)
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
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
    # No prefetch: a child up first would otherwise hold a short job in its buffer, not in a
    # handler, and release it at the stop.
    proc = spawn_workers("--processes", "2", "--threads", "2", "--prefetch", "0",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=grace,
                                        JOB_WORKER_LOG_LEVEL="DEBUG"))
    out = Output(proc)
    # The four handlers started (the children's own lines), not four rows claimed: under load
    # a claim and its handler's start can be far apart, and the short jobs' 1.5 s must count
    # from the start to end within the grace.
    out.wait_for_line("started job=", count=4, timeout=60)
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
        assert HistoryEvent.objects.filter(job=job, kind="released").count() == 1
    assert not Job.objects.running().exists()
    report = audit()
    assert report.ok, report.format()


def test_a_second_signal_ends_the_children_at_once(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many([{"type": "chaos", "payload": {"mode": "long", "seconds": 60}}
                           for _ in range(2)])
    proc = spawn_workers("--processes", "2", "--threads", "1", "--prefetch", "0",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=30,
                                        JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    wait_until_jobs("running", count=2, timeout=60)  # --threads 1: one in each child
    children = _child_pids()
    proc.send_signal(signal.SIGTERM)
    out.wait_for_line("supervisor: stopping", timeout=10)
    proc.send_signal(signal.SIGTERM)  # the impatient operator, once the first was taken
    signalled = time.monotonic()
    try:
        rc = proc.wait(10)
    except Exception:
        proc.kill()
        raise AssertionError(out.text()[-4000:]) from None
    assert rc == 1 and time.monotonic() - signalled < 5
    # Polls: the children are not ours to wait() on (the supervisor's).
    wait_for(lambda: not any(process_alive(pid) for pid in children), timeout=5,
             message="the children are gone")
    # Released uncharged by the supervisor once they were gone (its own kill, not theirs).
    assert not Job.objects.running().exists()
    assert list(Job.objects.values_list("status", "attempts")) == [("queued", 0)] * 2
    assert HistoryEvent.objects.filter(kind="released").count() == 2


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
        wait_until_jobs("failed", pk=spin.pk, timeout=90)
        wait_until_jobs("succeeded", count=60, timeout=90)
        out.wait_for_line("ended for a handler past its timeout", count=2, timeout=30)
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
    assert rc == 0, out.text()[-4000:]
    spin.refresh_from_db()
    assert spin.attempts == 2 and "timed out after 2s" in spin.last_error
    events = list(HistoryEvent.objects.filter(job=spin).values_list("kind", "data"))
    kinds = [kind for kind, _ in events]
    # Two attempts at least, each start carried by its outcome (the claim writes no event).
    assert sum("started_at" in data for _, data in events) >= 2
    assert kinds.count("retry_scheduled") == 1
    stuck = HistoryEvent.objects.filter(job=spin, kind="log", data__stuck=True)
    assert stuck.count() == 2
    # The other jobs ran while the spinning one held a thread, each exactly once.
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    spin_runs = ledger.by_job[spin.pk]
    during = [x for j in others for x in ledger.by_job[j.pk]
              if spin_runs[0].started < x.started < spin_runs[0].started + 3]
    assert during, "other jobs started while the handler spun"
    # Each exactly once, but for a job that a replaced process was running when it ended: that
    # is released uncharged (its handler, woken only after the release is written, may have
    # returned meanwhile, its completion refused) and runs again on another process.
    replaced = {x.pid for x in spin_runs}
    for job in others:
        returns = sorted((x for x in ledger.by_job[job.pk] if x.outcome == "return"),
                         key=lambda x: x.started)
        assert len(returns) == 1 or (
            len(returns) == 2 and returns[0].pid in replaced
            and returns[1].pid not in replaced), returns
        assert HistoryEvent.objects.filter(job=job, kind="succeeded").count() == 1
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
        wait_until_jobs("succeeded", count=250, timeout=120)
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
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
        # The recycle first (the supervisor's line: each child's start-up under load has taken
        # 10 s), then the jobs, all run by then or soon after.
        out.wait_for_line("recycled (exit status 3)", timeout=120)
        wait_until_jobs("succeeded", count=6, timeout=120)
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
    assert rc == 0, out.text()[-4000:]
    out.wait_for_line("over --max-memory-per-process 200 MiB: recycling", timeout=5)
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
    out.wait_for_line("started worker process 1", timeout=30)
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


def test_a_sigterm_to_the_whole_process_group_is_one_graceful_stop(tmp_path):
    """systemd's default KillMode=control-group sends SIGTERM to every process of the unit:
    each child gets it from systemd and again from its supervisor. That is one stop, not the
    impatient operator's second signal: the running job finishes and everything exits 0."""
    ledger_path = tmp_path / "ledger.tsv"
    job = services.enqueue("chaos", {"mode": "ok", "seconds": 1.5})
    proc = spawn_workers("--processes", "1", "--threads", "1", "--prefetch", "0",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=10,
                                        JOB_WORKER_LOG_LEVEL="INFO"),
                         start_new_session=True)  # its own process group, as a unit's
    out = Output(proc)
    try:
        wait_until_jobs("running", pk=job.pk, timeout=60)
        os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(30)
    except Exception:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(out.text()[-4000:]) from None
    assert "second signal" not in out.text(), out.text()[-4000:]
    assert rc == 0, out.text()[-4000:]
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 1)
    report = audit()
    assert report.ok, report.format()


def test_a_child_that_died_has_its_jobs_settled_at_once_running_ones_charged_prefetched_not(
        tmp_path):
    """A handler that ends its process (os._exit, a segfault, the OOM killer) takes the other
    jobs of that process down with it. The supervisor settles them as soon as it reaps the
    child, not at lease expiry (two minutes here): each job whose handler was running is
    charged the attempt (the killer cannot be told from a bystander; the error names both),
    so the killer fails for good once out of attempts instead of killing process after
    process; a prefetched job that never started goes back uncharged."""
    ledger_path = tmp_path / "ledger.tsv"
    bystander = services.enqueue("chaos", {"mode": "long", "seconds": 60}, priority=10,
                                 max_attempts=1)
    killer = services.enqueue("die", {"seconds": 1.0}, priority=9, max_attempts=2)
    waiting = services.enqueue("chaos", {"mode": "ok"}, priority=8)
    proc = spawn_workers("--processes", "1", "--threads", "2", "--prefetch", "1",
                         env=worker_env(ledger_path, JOB_LEASE_SECONDS=120,
                                        JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        wait_until_jobs(("succeeded", "failed"), timeout=45,
                        message="every job settled, well before any lease expired")
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
    assert rc == 0, out.text()[-4000:]
    assert out.text().count("exited with status 1") == 2, out.text()[-4000:]
    for job in (bystander, killer, waiting):
        job.refresh_from_db()
    assert (bystander.status, bystander.attempts) == ("failed", 1)
    assert "died (exited with status 1) while running this job" in bystander.last_error
    assert f"(and job {killer.pk}" in bystander.last_error  # the other suspect, named
    assert (killer.status, killer.attempts) == ("failed", 2)
    assert "died (exited with status 1) while running this job" in killer.last_error
    assert list(HistoryEvent.objects.filter(job=killer).values_list("kind", flat=True)
                .filter(kind__in=["retry_scheduled", "failed"])) == ["retry_scheduled", "failed"]
    assert (waiting.status, waiting.attempts) == ("succeeded", 1)
    # Its first attempt's start, carried by that attempt's outcome (no claimed event).
    first_claim = (HistoryEvent.objects.filter(job=waiting, data__has_key="started_at")
                   .order_by("id").first())
    if first_claim.worker_id.endswith("-prefetch"):  # it waited in the dead child's buffer
        assert HistoryEvent.objects.filter(job=waiting, kind="released").count() == 1
    assert not HistoryEvent.objects.filter(kind="lease_expired").exists()
    report = audit()
    assert report.ok, report.format()


def test_a_job_that_trips_max_memory_per_process_is_charged_each_time_then_fails(tmp_path):
    """A recycle for memory used to release the running job uncharged, and the next process
    claimed it again and grew again: forever. Now the handler still running when the grace
    ends is charged the attempt, with an error naming the limit, and fails for good once out
    of attempts, as a hard timeout does; a job that only waited in that process is not."""
    ledger_path = tmp_path / "ledger.tsv"
    grow = services.enqueue("grow", {"mb": 250, "seconds": 60}, max_attempts=2, priority=1)
    other = services.enqueue("chaos", {"mode": "ok"})
    # A lease of 10 s, not the fault tests' 2 s: this is about the charge at the recycle,
    # and a renewal more than 1.3 s late (a loaded machine, the 250 MiB being written with
    # the interpreter's lock held) let the reaper end the attempt first.
    proc = spawn_workers("--processes", "1", "--threads", "1", "--prefetch", "1",
                         "--max-memory-per-process", "200",
                         env=worker_env(ledger_path, JOB_SHUTDOWN_GRACE_SECONDS=1,
                                        JOB_LEASE_SECONDS=10, JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    try:
        # Two child start-ups, growths and recycles: on a loaded machine a start-up alone
        # has taken 10 s (a run where 45 s was too short).
        wait_until_jobs("failed", pk=grow.pk, timeout=120)
        # The third child, which runs `other` if the first two only held it, up first: its
        # start-up, not the job, is what a loaded machine makes slow.
        out.wait_for_line("supervisor: started worker process", count=3, timeout=60)
        wait_until_jobs("succeeded", pk=other.pk, timeout=30)
    finally:
        rc = stop_gracefully(proc, out, timeout=30)
    assert rc == 0, out.text()[-4000:]
    assert out.text().count("recycled (exit status 3)") == 2, out.text()[-4000:]
    grow.refresh_from_db()
    assert grow.attempts == 2
    assert grow.last_error.startswith(
        "the process passed --max-memory-per-process (200 MiB) while running this job")
    kinds = list(HistoryEvent.objects.filter(job=grow, kind__in=["retry_scheduled", "failed",
                                                             "released", "lease_expired"])
                 .values_list("kind", flat=True))
    assert kinds == ["retry_scheduled", "failed"]
    other.refresh_from_db()
    assert other.attempts == 1
    report = audit()
    assert report.ok, report.format()
