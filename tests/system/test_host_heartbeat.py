"""One heartbeat per host: under `run_job_workers --processes N` the supervisor beats for all its
children in one statement, each child's row keeping its own figures; a child killed with
SIGKILL stops being beaten for and turns lost within two intervals while its siblings stay
alive; a child that stopped gracefully has its row removed; the maintenance leader is one of
the children, and a killed leader child is replaced within seconds."""
import multiprocessing
import os
import signal
import time

import pytest
from django.db import connection

from django_pg_jobqueue.models import HistoryEvent, LeaderLease, WorkerProcess
from django_pg_jobqueue.selectors import worker_processes
from django_pg_jobqueue.services import enqueue
from django_pg_jobqueue.worker.hostbeat import ChildReport, HostHeartbeat
from django_pg_jobqueue.worker.leader import MAINTENANCE, HostLeadership
from tests.handlers.chaos_handlers import Output
from tests.utils import (
    maintenance_leader,
    process_alive,
    spawn_workers,
    stop_workers,
    wait_for,
    wait_for_leader,
    wait_until_jobs,
)

pytestmark = pytest.mark.django_db(transaction=True)

CHILDREN = 3
# A heartbeat every second (a third of the lease), so that the test waits little.
ENV = {"JOB_LEASE_SECONDS": "3", "JOB_POLL_INTERVAL_SECONDS": "0.2"}


def _report(**figures) -> ChildReport:
    report = ChildReport.create(multiprocessing.get_context("spawn"))
    if figures:
        report.report(**{"rss_bytes": 10 << 20, "jobs_done": 0, "stuck_handlers": 0,
                         "threads": 2, "interval": 1.0, **figures})
    return report


def _beats(supervisor_pid: int) -> dict[str, tuple]:
    with connection.cursor() as cur:
        cur.execute("SELECT id, heartbeat_at, pid FROM job_workers WHERE supervisor_pid = %s",
                    [supervisor_pid])
        return {row[0]: row[1:] for row in cur.fetchall()}


def _wait_beaten(supervisor_pid: int, n: int, timeout: float = 90) -> dict[str, tuple]:
    """The rows a supervisor beats for, once there are `n`. Polls: the supervisor is another
    OS process, and its rows are what the test looks at."""
    return wait_for(lambda: (b := _beats(supervisor_pid)) and len(b) == n and b, timeout,
                    message=f"{n} children beaten for")


# -- the supervisor's side alone, its run_once called directly ----------------------------------
def test_one_pass_beats_every_child_that_reports_each_with_its_own_figures_in_one_statement():
    beat = HostHeartbeat(4242, queues=["*"], interval=1.0, leader_lease_seconds=3.0, elect=True)
    first, second = _report(jobs_done=5, rss_bytes=11 << 20), _report(jobs_done=9, threads=4)
    silent = _report()  # started, not yet reported: not beaten for
    beat.attach(0, 1001, first)
    beat.attach(1, 1002, second)
    beat.attach(2, 1003, silent)
    assert beat.run_once() == {"beaten": 2, "removed": 0, "leader": beat.process_id(1001)}
    rows = {w.pid: w for w in WorkerProcess.objects.all()}
    assert set(rows) == {1001, 1002}
    assert (rows[1001].jobs_done, rows[1001].rss_bytes, rows[1001].threads) == (5, 11 << 20, 2)
    assert (rows[1002].jobs_done, rows[1002].threads) == (9, 4)
    assert {w.supervisor_pid for w in rows.values()} == {4242}
    assert rows[1001].heartbeat_at == rows[1002].heartbeat_at  # one statement's now()
    # The first child that reports leads, and is told so; the others are not.
    assert LeaderLease.objects.get(role=MAINTENANCE).holder == beat.process_id(1001)
    assert first.leads_until() > time.monotonic()
    assert second.leads_until() == 0.0 and silent.leads_until() == 0.0
    assert HostLeadership(beat.process_id(1001), first, supervisor_pid=os.getppid(),
                          lease_seconds=3.0).is_leader()


def test_a_stale_report_is_not_beaten_and_a_stopped_child_is_removed_and_resigned_for():
    beat = HostHeartbeat(4242, queues=["a", "b"], interval=1.0, leader_lease_seconds=3.0,
                         elect=True)
    leader, other = _report(jobs_done=1), _report()
    beat.attach(0, 2001, leader)
    beat.attach(1, 2002, other)
    other.report(rss_bytes=None, jobs_done=0, stuck_handlers=0, threads=2, interval=1.0)
    beat.run_once()
    assert beat.leader == beat.process_id(2001)
    # The leader stops (graceful): it tells the supervisor, which elects the other child in
    # its next pass, resigning for the first at once (no wait for the lease to expire).
    HostLeadership(beat.process_id(2001), leader, supervisor_pid=os.getppid(),
                   lease_seconds=3.0).resign()
    leader.report(rss_bytes=None, jobs_done=1, stuck_handlers=0, threads=2, interval=1.0)
    other.report(rss_bytes=None, jobs_done=0, stuck_handlers=0, threads=2, interval=1.0)
    assert beat.run_once()["leader"] == beat.process_id(2002)
    assert leader.leads_until() == 0.0 and other.leads_until() > time.monotonic()
    # It exits: its row is removed by the next pass, after its last beat.
    beat.detach(0, graceful=True)
    assert beat.run_once()["removed"] == 1
    assert list(WorkerProcess.objects.values_list("pid", flat=True)) == [2002]
    assert WorkerProcess.objects.get().queues == ["a", "b"]
    # A report older than one and a half intervals (the child frozen) is not beaten for.
    other.values[0] = time.monotonic() - 2.0
    assert beat.run_once()["beaten"] == 0


def test_a_child_whose_supervisor_died_resigns_the_lease_even_before_it_noticed_it_led():
    """It learns that it leads lazily, from its supervisor's reports: a child elected in the
    supervisor's last beat, stopping because the supervisor died, may never have asked. It
    resigns anyway (the statement touches the lease only if this child holds it), so another
    host takes maintenance over at once instead of when the lease expires."""
    beat = HostHeartbeat(4242, queues=["*"], interval=1.0, leader_lease_seconds=3.0, elect=True)
    report = _report(jobs_done=1)
    beat.attach(0, 2001, report)
    beat.run_once()
    assert maintenance_leader() == beat.process_id(2001)
    orphan = HostLeadership(beat.process_id(2001), report, supervisor_pid=-1,  # not our parent
                            lease_seconds=3.0)
    assert not orphan.elected.is_set()  # it never asked
    orphan.resign()
    assert _resigned()
    # A child that does not hold the lease resigning changes nothing.
    with connection.cursor() as cur:
        cur.execute("UPDATE job_leader SET expires_at = now() + interval '3 seconds'")
    HostLeadership(beat.process_id(2002), _report(), supervisor_pid=-1, lease_seconds=3.0).resign()
    assert maintenance_leader() == beat.process_id(2001) and not _resigned()


# -- real processes: a supervisor and its children ------------------------------------------------
@pytest.mark.e2e
def test_children_are_beaten_for_together_and_a_killed_child_turns_lost_while_its_siblings_live():
    proc = spawn_workers("--processes", str(CHILDREN), "--threads", "1", env=ENV)
    out = Output(proc)
    try:
        _wait_beaten(proc.pid, CHILDREN)
        # One statement for all: every row's heartbeat_at is the same transaction's now(),
        # pass after pass (here, before the jobs and after the beat that reported them).
        beats = _beats(proc.pid)
        first = {at for at, _ in beats.values()}
        assert len(first) == 1, beats
        # Each row keeps its own figures: jobs run by that child, its own pid and memory.
        for i in range(6):
            job = enqueue("noop", {"i": i})
            wait_until_jobs("succeeded", pk=job.pk, timeout=15, message=f"job {i} ran")
        claimed = {}
        # Who ran each job: its success names the worker (the claim writes no event).
        for worker_id in HistoryEvent.objects.filter(kind="succeeded").values_list("worker_id",
                                                                                 flat=True):
            process_id = worker_id.rsplit("-", 1)[0]
            claimed[process_id] = claimed.get(process_id, 0) + 1

        def figures_caught_up():
            rows = {w.id: w for w in WorkerProcess.objects.filter(supervisor_pid=proc.pid)}
            return all(rows[p].jobs_done == n for p, n in claimed.items() if p in rows) and rows
        # Polls: the figures reach the rows with the supervisor's next beats.
        rows = wait_for(figures_caught_up, timeout=10, message="each row's own jobs_done")
        assert sum(w.jobs_done for w in rows.values()) == 6
        beats = _beats(proc.pid)
        later = {at for at, _ in beats.values()}
        assert len(later) == 1 and later != first, (first, beats)  # one stamp, moved on
        for w in rows.values():
            assert w.id.endswith(f"-{w.pid}") and w.rss_bytes and w.rss_bytes > 0
            assert w.heartbeat_interval_seconds == 1.0 and w.threads == 1
        # SIGKILL one child: its row is never beaten again and turns lost within two
        # intervals of its last beat; its siblings' rows go on moving, alive.
        victim = sorted(rows.values(), key=lambda w: w.pid)[0]
        os.kill(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()

        def lost():
            return next(w for w in worker_processes() if w["id"] == victim.id)["state"] == "lost"
        # Polls: "lost" is read from the clock and the row, as the API reads it.
        wait_for(lost, timeout=10, interval=0.05, message="the killed child shown lost")
        assert time.monotonic() - killed_at <= 2 * 1.0 + 1.0
        # Lost: two intervals without a beat. Its siblings, alive, were beaten since (one
        # statement for all: the victim's row would carry the same stamp if it still were).
        siblings = [w for w in worker_processes()
                    if w["supervisor_pid"] == proc.pid and w["id"] != victim.id]
        assert siblings and all(w["state"] == "alive" for w in siblings), siblings
        beats = _beats(proc.pid)
        assert all(at > beats[victim.id][0] for wid, (at, _) in beats.items()
                   if wid != victim.id), beats  # never beaten for again
        # The supervisor starts another child in its place; it is beaten for with the rest.
        wait_for(lambda: sum(1 for w in worker_processes() if w["supervisor_pid"] == proc.pid
                             and w["state"] == "alive") == CHILDREN,  # polls, as above
                 timeout=60, message="the replacement beaten for")
    finally:
        stop_workers(proc, timeout=40)
    assert proc.returncode == 0, out.text()[-3000:]
    # Stopped gracefully: the children's rows removed by the supervisor; only the killed
    # child's stays, lost, until the reaper forgets it.
    assert list(WorkerProcess.objects.values_list("id", flat=True)) == [victim.id]
    assert maintenance_leader() is None  # the leader child's lease resigned at the stop


@pytest.mark.e2e
def test_a_child_of_the_supervisor_leads_and_a_killed_leader_child_is_replaced_within_seconds():
    proc = spawn_workers("--processes", str(CHILDREN), "--threads", "1", env=ENV)
    out = Output(proc)
    try:
        leader = wait_for_leader(timeout=90)
        children = _wait_beaten(proc.pid, CHILDREN, timeout=30)
        assert leader in children  # a child leads, under its own process id
        os.kill(children[leader][1], signal.SIGKILL)
        killed_at = time.monotonic()
        new_leader = wait_for_leader(other_than=leader, timeout=15)
        # The supervisor resigns for the dead child as soon as it has reaped it.
        assert time.monotonic() - killed_at < 10
        assert new_leader in _beats(proc.pid)
        out.wait_for_line(f"{new_leader} leads maintenance now", timeout=10)
        # Its replacement up before the stop (a child stopped while its interpreter starts
        # dies of the SIGTERM, which the supervisor's exit status counts).
        wait_for(lambda: set(_beats(proc.pid)) - set(children), timeout=60,  # polls, as above
                 message="the replacement beaten for")
    finally:
        stop_workers(proc, timeout=40)
    assert proc.returncode == 0, out.text()[-3000:]


def _resigned() -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT expires_at = '-infinity' FROM job_leader WHERE role = %s",
                    [MAINTENANCE])
        return cur.fetchone()[0]


@pytest.mark.e2e
def test_children_whose_supervisor_was_killed_stop_and_remove_their_own_rows_and_lease():
    proc = spawn_workers("--processes", "2", "--threads", "1", env=ENV)
    Output(proc)
    children = {}
    try:
        wait_for_leader(timeout=90)
        children = _wait_beaten(proc.pid, 2, timeout=30)
        proc.kill()  # SIGKILL: nobody beats for the children any more, nor removes their rows
        proc.wait(10)
        # Each child sees its supervisor gone, stops gracefully, and removes its own row; the
        # leader child resigns its lease itself.
        # Polls: the children are other OS processes, and not ours to wait() on.
        wait_for(lambda: not WorkerProcess.objects.exists() and _resigned()
                 and not any(process_alive(pid) for _, pid in children.values()), timeout=30,
                 message="the children's rows removed, the lease resigned, and the children "
                         "exited")
    finally:
        for _, pid in children.values():
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)
        stop_workers(proc)
