"""A worker process killed with SIGKILL mid-drain: its jobs are requeued once their leases
expire and finish elsewhere; nothing is lost, nothing succeeds twice."""
import os
import select
import signal
import time
from collections import Counter

import pytest
from django.utils.dateparse import parse_datetime

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.handlers.chaos_handlers import (
    LEASE_SECONDS,
    REAPER_INTERVAL_SECONDS,
    Ledger,
    Output,
    worker_env,
)
from tests.utils import spawn_workers, stop_gracefully, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def test_sigkilled_workers_jobs_all_finish_after_lease_expiry(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    services.enqueue_many(
        [{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.4}} for _ in range(150)]
        + [{"type": "chaos", "payload": {"mode": "long", "seconds": 3}, "priority": 10}
           for _ in range(3)])
    victim = spawn_workers("--threads", "6", env=worker_env(ledger_path))
    Output(victim)  # keeps the pipe drained
    prefix = None
    try:
        # Kill it while it holds several jobs, the long ones among them.
        # The 3 long ones (3 s) first, then at least 6 in all.
        wait_until_jobs("running", count=3, payload__mode="long", message="victim busy")
        wait_until_jobs("running", at_least=6, message="victim busy")
        prefix = Job.objects.running().values_list("locked_by", flat=True)[0].rsplit("-", 1)[0]
        victim.send_signal(signal.SIGKILL)
        killed_at = time.time()
        victim.wait(5)
    finally:
        if victim.poll() is None:
            victim.kill()
    orphans = dict(Job.objects.running().filter(locked_by__startswith=prefix + "-")
                   .values_list("id", "locked_by"))
    assert len(orphans) >= 6
    assert victim.returncode == -signal.SIGKILL

    survivor = spawn_workers("--threads", "6", env=worker_env(ledger_path))
    survivor_out = Output(survivor)
    try:
        wait_until_jobs(("succeeded", "failed"), timeout=60)
    finally:
        rc = stop_gracefully(survivor, survivor_out)
    assert rc == 0, survivor_out.text()[-3000:]

    assert Counter(Job.objects.values_list("status", flat=True)) == {"succeeded": 153}
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    long_ids = set(Job.objects.filter(payload__mode="long").values_list("id", flat=True))
    recovery, recovery_first = [], []
    for job_id, locked_by in orphans.items():
        events = list(HistoryEvent.objects.filter(job_id=job_id).order_by("id"))
        # A job still in the victim's prefetch buffer never started: given back uncharged.
        unstarted = locked_by == prefix + "-prefetch"
        expired = [e for e in events if e.kind == ("released" if unstarted else "lease_expired")]
        assert len(expired) == 1 and expired[0].worker_id == locked_by
        assert not unstarted or (expired[0].data["reason"] == "unstarted"
                                 and not ledger.by_job[job_id][:-1])
        # The next attempt's start, carried by its outcome (the claim writes no event).
        reclaimed = [parse_datetime(e.data["started_at"]) for e in events
                     if e.id > expired[0].id and "started_at" in e.data]
        delay = reclaimed[0].timestamp() - killed_at
        (recovery_first if job_id in long_ids else recovery).append(delay)
        success = [e for e in events if e.kind == "succeeded"]
        assert len(success) == 1
        # The success ran to the end under the new lease, in the survivor.
        ex = ledger.executions[success[0].data["lease_token"]]
        assert ex.outcome == "return" and ex.pid == survivor.pid
        # The killed execution started in the victim and never ended.
        killed = [x for x in ledger.by_job[job_id] if x.pid == victim.pid]
        assert all(x.outcome is None for x in killed)
    # Every job ran exactly once more than it was killed; the others exactly once.
    for job_id, runs in ledger.by_job.items():
        assert len([x for x in runs if x.outcome == "return"]) == 1
    worst = max(recovery_first)
    print(f"\nworker crash: {len(orphans)} orphaned jobs; the 3 high-priority ones re-claimed "
          f"{min(recovery_first):.2f}-{worst:.2f}s after SIGKILL (lease {LEASE_SECONDS}s, "
          f"reaper {REAPER_INTERVAL_SECONDS}s, plus the survivor's start-up); the others, "
          f"requeued behind the backlog in claim order, {min(recovery):.2f}-{max(recovery):.2f}s")
    # Lease + reaper interval + the survivor's start-up (a couple of seconds) + backoff. Jobs
    # the reaper requeues are due at now() + backoff, so ordinary ones wait behind the backlog
    # that was due before them; high-priority ones go first.
    assert len(recovery_first) == 3
    assert worst < LEASE_SECONDS + REAPER_INTERVAL_SECONDS + 6
    report = audit()
    assert report.ok, report.format()


def _wait_any_exit(procs, timeout: float) -> list:
    """The processes among `procs` that have exited, waiting up to `timeout` for one to (on
    their pidfds: woken by the exit itself, not by polling)."""
    fds = {os.pidfd_open(p.pid): p for p in procs}
    try:
        select.select(list(fds), [], [], timeout)
    finally:
        for fd in fds:
            os.close(fd)
    return [p for p in procs if p.poll() is not None]


def _backlog_with_poison(deaths: int, per_death: int) -> set[int]:
    """A backlog of short jobs (three attempts each) with, before every `per_death` of them,
    one max_attempts=1 job that kills its process (os._exit and SIGKILL in turn); the
    killers' ids."""
    specs = []
    for i in range(deaths):
        specs.append({"type": "chaos", "max_attempts": 1,
                      "payload": {"mode": "die", "how": "sigkill" if i % 2 else "exit"}})
        specs += [{"type": "chaos", "max_attempts": 3, "payload": {"mode": "ok", "seconds": 0.02}}
                  for _ in range(per_death)]
    jobs = services.enqueue_many(specs)
    return {j.id for j, s in zip(jobs, specs, strict=True) if s["payload"]["mode"] == "die"}


def _assert_charged_only_for_runs(ledger_path, poison: set[int]) -> int:
    """Every job but the killers succeeded, the killers failed after their one run, and every
    job was charged exactly the runs the ledger saw; returns how many prefetched jobs were
    given back unstarted (at least one: else no death caught a prefetched job)."""
    ledger = Ledger.read(ledger_path)
    assert not ledger.duplicate_starts
    statuses = dict(Job.objects.values_list("id", "status"))
    wrongly = {i: s for i, s in statuses.items() if (s == "failed") != (i in poison)}
    assert not wrongly, f"jobs that ended wrongly: {wrongly}"
    # Charged exactly for the runs it had: each job's attempts are its starts in the ledger.
    attempts = dict(Job.objects.values_list("id", "attempts"))
    charged = {i: (n, len(ledger.by_job[i])) for i, n in attempts.items()
               if n != len(ledger.by_job[i])}
    assert not charged, f"(attempts, runs) of jobs charged for runs they never had: {charged}"
    assert all(attempts[i] == 1 for i in poison)
    # Given back unstarted by the reaper (at lease expiry) or, under a supervisor, by the
    # supervisor at once (services.settle_dead_process).
    released = (HistoryEvent.objects.filter(kind="released", data__reason="unstarted").count()
                + HistoryEvent.objects.filter(kind="released",
                                          message__endswith="before it ran this job").count())
    assert released, "no process died holding a prefetched job: the test proved nothing"
    report = audit()
    assert report.ok, report.format()
    return released


def test_jobs_a_dying_process_had_only_prefetched_are_requeued_uncharged(tmp_path):
    """Two one-thread worker processes drain a backlog with prefetch on; every so often a job
    kills its process in its handler (os._exit, or SIGKILL as the OOM killer does), and the
    test starts another. A job that sat in the dead process's prefetch buffer and never started
    must come back uncharged: every job is charged exactly the runs it had. (The other jobs
    have retries: one whose handler had returned, its success not yet written when its
    process died, ran and is charged and run again, as at-least-once delivery has it.)"""
    ledger_path = tmp_path / "ledger.tsv"
    deaths = 12
    poison = _backlog_with_poison(deaths, per_death=24)
    env = worker_env(ledger_path, JOB_MAINTENANCE_LEADER="false", JOB_PREFETCH=8)
    started_at = time.monotonic()
    procs = [spawn_workers("--threads", "1", env=env) for _ in range(2)]
    outputs = [Output(p) for p in procs]
    exits: list[int] = []
    try:
        while Job.objects.exclude(status__in=["succeeded", "failed"]).exists():
            assert time.monotonic() - started_at < 90, "the backlog did not drain"
            for proc in _wait_any_exit(procs, timeout=0.5):
                exits.append(proc.returncode)
                i = procs.index(proc)
                procs[i] = spawn_workers("--threads", "1", env=env)
                outputs.append(Output(procs[i]))
    finally:
        stop_workers(*procs)
    elapsed = time.monotonic() - started_at
    assert sorted(exits) == sorted([1] * (deaths // 2) + [-signal.SIGKILL] * (deaths // 2))
    released = _assert_charged_only_for_runs(ledger_path, poison)
    # A killer that had been prefetched and died before the starter wrote its start is
    # charged through its process's start witness (witness.py); how often depends on timing.
    witnessed = sum(len(o.matching("recorded as started")) for o in outputs)
    print(f"\n{deaths} process deaths in {elapsed:.1f}s; {released} prefetched jobs "
          f"released unstarted, none charged; {witnessed} start(s) recorded by a witness")


def test_a_supervised_childs_prefetched_jobs_come_back_uncharged_when_it_dies(tmp_path):
    """The same under `run_job_workers --processes 1 --threads 1`: the supervisor replaces its
    child after each death (with its crash backoff, 0.5 s doubling: hence fewer deaths)."""
    ledger_path = tmp_path / "ledger.tsv"
    deaths = 4
    poison = _backlog_with_poison(deaths, per_death=40)
    env = worker_env(ledger_path, JOB_MAINTENANCE_LEADER="false", JOB_PREFETCH=8)
    started_at = time.monotonic()
    host = spawn_workers("--processes", "1", "--threads", "1", env=env)
    out = Output(host)
    try:
        wait_until_jobs(("succeeded", "failed"), timeout=90, message="the backlog drained")
    finally:
        rc = stop_gracefully(host, out)
    assert rc == 0, out.text()[-3000:]
    released = _assert_charged_only_for_runs(ledger_path, poison)
    assert len(out.matching("starting a new one in")) == deaths
    print(f"\n{deaths} deaths of a supervised child in {time.monotonic() - started_at:.1f}s; "
          f"{released} prefetched jobs released unstarted, none charged")
