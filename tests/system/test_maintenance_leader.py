"""One worker process per database runs the maintenance loops (the reaper, the pruner, the
periodic enqueuer, the stager), elected through a lease row renewed by its heartbeat; a killed
leader is replaced within seconds and nothing it was reaping is lost; idle workers back off
their polling while LISTEN is up, and jobs that become due later still start promptly."""
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.functions import Now
from django.test import override_settings

from django_pg_jobqueue import sql
from django_pg_jobqueue.models import Job, LeaderLease
from django_pg_jobqueue.services import enqueue
from django_pg_jobqueue.worker.leader import MAINTENANCE, Leadership
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, stop_workers, wait_for, wait_for_leader, wait_until_jobs

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"JOB_LEASE_SECONDS": "2", "JOB_REAPER_INTERVAL_SECONDS": "0.5",
        "JOB_LEADER_LEASE_SECONDS": "3", "JOB_POLL_INTERVAL_SECONDS": "0.2"}


def test_two_processes_never_both_hold_the_lease_and_a_resignation_hands_it_over():
    a, b = Leadership("host-a-1", lease_seconds=5), Leadership("host-b-2", lease_seconds=5)
    assert a.beat() is True
    assert b.beat() is False  # held, not expired: b takes nothing and locks nothing
    assert a.is_leader() and not b.is_leader()
    assert a.beat() is True  # renewing keeps it
    a.resign()
    assert not a.is_leader()
    assert b.beat() is True and b.is_leader()
    assert a.beat() is False


def _lease_runs_out() -> None:
    """The maintenance lease's end moved into the past, as the database's clock would."""
    LeaderLease.objects.filter(role=MAINTENANCE).update(expires_at=Now() - timedelta(seconds=1))


def test_an_expired_lease_is_taken_by_the_next_heartbeat_and_the_old_holder_stops_believing():
    now = [1000.0]
    a = Leadership("host-a-1", lease_seconds=1, clock=lambda: now[0])
    b = Leadership("host-b-2", lease_seconds=1)
    assert a.beat()
    now[0] += 1.1  # past the 1 s lease on a's clock, and on the database's
    _lease_runs_out()
    assert not a.is_leader()  # its own clock ended the term, without asking the database
    assert b.beat() and b.is_leader()
    assert not a.beat()


def test_a_leader_whose_heartbeat_finds_another_leader_steps_down_without_hanging():
    # No is_leader() call between the terms: the old leader still believes it leads when its
    # next heartbeat learns otherwise (a slow heartbeat on a busy machine). That beat once
    # deadlocked the renewer on the leadership's own lock, wedging the whole process.
    a, b = Leadership("host-a-1", lease_seconds=1), Leadership("host-b-2", lease_seconds=1)
    assert a.beat()
    _lease_runs_out()  # on the database's clock: a, by its own, still leads
    assert b.beat()
    answers = []
    beat = threading.Thread(target=lambda: answers.append(a.beat()), daemon=True)
    beat.start()
    beat.join(5)
    assert not beat.is_alive(), "the old leader's heartbeat hung"
    assert answers == [False]
    assert not a.elected.is_set() and not a.is_leader()
    checked = threading.Thread(target=a.is_leader, daemon=True)  # the lock is free again
    checked.start()
    checked.join(5)
    assert not checked.is_alive()


def test_many_contenders_at_once_elect_exactly_one():
    contenders = [Leadership(f"host-{i}", lease_seconds=5) for i in range(16)]
    won, barrier = [], threading.Barrier(len(contenders))

    def contend(lead):
        from django.db import connections

        barrier.wait()
        try:
            if lead.beat():
                won.append(lead.process_id)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=contend, args=(lead,)) for lead in contenders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(won) == 1, won
    assert LeaderLease.objects.get(role=MAINTENANCE).holder == won[0]


@override_settings(JOB_MAINTENANCE_LEADER=False)
def test_with_the_leader_off_every_process_runs_maintenance():
    lead = Leadership("host-a-1")
    assert lead.is_leader() and lead.beat()
    assert not LeaderLease.objects.exists()


@pytest.mark.e2e
def test_only_the_leader_reaps_and_a_killed_leader_is_replaced_without_losing_a_job():
    """Three real worker processes: one holds the lease; SIGKILL it while it holds running
    jobs; another process takes the lease within the lease plus a heartbeat, and its reaper
    requeues the dead leader's jobs, which then succeed."""
    procs = [spawn_workers("--threads", "2", env=FAST) for _ in range(3)]
    try:
        leader = wait_for_leader()
        pids = {f"{p.pid}": p for p in procs}
        victim = pids[leader.rsplit("-", 1)[1]]
        # Jobs that run long enough to be held by every process, the leader included.
        for _ in range(6):
            enqueue("sleep", {"seconds": 2.5}, max_attempts=3)
        wait_until_jobs("running", at_least=1, locked_by__startswith=leader + "-", timeout=20,
                        message="the leader holds a running job")
        victim.send_signal(signal.SIGKILL)
        victim.wait(5)
        killed_at = time.monotonic()
        new_leader = wait_for_leader(other_than=leader, timeout=15)
        handover = time.monotonic() - killed_at
        assert handover < 10, handover
        assert new_leader.rsplit("-", 1)[1] in pids
        # Every job succeeded, the dead leader's requeued by the new one.
        wait_until_jobs("succeeded", timeout=40)
        assert Job.objects.count() == 6
    finally:
        stop_workers(*procs)


def test_the_stager_notifies_a_queue_once_when_its_delayed_jobs_become_due():
    from django_pg_jobqueue.worker.stager import Stager

    stager = Stager(interval=0.2)
    assert stager.run_once() == 0
    enqueue("noop", {}, queue="later", delay_seconds=3600)
    enqueue("noop", {}, queue="later", delay_seconds=3600)
    enqueue("noop", {}, queue="now")  # runnable at once: its own NOTIFY, none from the stager
    assert stager.run_once() == 0  # not yet due
    # Their delay ends now, on the database's clock: after the last pass, before the next.
    Job.objects.filter(queue="later").update(available_at=Now())
    with connection.cursor() as cur:
        cur.execute(f"LISTEN {sql.NOTIFY_CHANNEL}")
    assert stager.run_once() == 1  # one queue, however many jobs
    notes = list(connection.connection.notifies(timeout=1, stop_after=1))
    assert [n.payload for n in notes] == ["later"]
    assert stager.run_once() == 0  # already notified


@pytest.mark.e2e
def test_an_idle_worker_backs_off_its_polling_and_still_runs_a_delayed_job_on_time():
    """One idle process polls at the base interval at first, then less and less often up to
    JOB_POLL_INTERVAL_MAX_SECONDS; a job enqueued with a delay starts within about a second
    of becoming due (the leader's stager wakes it), not at the next backed-off poll."""
    env = {**FAST, "JOB_POLL_INTERVAL_SECONDS": "0.5", "JOB_POLL_INTERVAL_MAX_SECONDS": "8",
           "JOB_POLL_JITTER_SECONDS": "0"}
    proc = spawn_workers("--threads", "1", env={**env, "JOB_WORKER_LOG_LEVEL": "DEBUG"})
    out = Output(proc)
    try:
        wait_for_leader()
        # Five claims that found nothing: the next poll is 8 s away (0.5 s doubled from the
        # second on), far past the delay below.
        out.wait_for_line("polled, claimed 0 of", count=5, timeout=30)
        job = enqueue("noop", {}, delay_seconds=2.0)
        wait_until_jobs("succeeded", pk=job.id, timeout=10, message="the delayed job ran")
        job.refresh_from_db()
        late = (job.started_at - job.available_at).total_seconds()
        assert late < 1.5, f"started {late:.2f}s after it became due"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except Exception:
            proc.kill()


def test_a_leader_killed_in_the_middle_of_a_reap_loses_nothing_and_reaps_nothing_twice():
    """The leader's reap of an expired job is held half-done (its event insert waits on a lock
    the test holds on job_events, its row lock on the job taken), and the leader is SIGKILLed
    there. Whatever the dead leader's statement did, a new leader takes over within 10 s and
    the job ends requeued exactly once: one lease_expired event, a clean audit."""
    import psycopg

    from django_pg_jobqueue.audit import audit
    from django_pg_jobqueue.engine import default_engine
    from django_pg_jobqueue.models import JobEvent
    from django_pg_jobqueue.testing import expire_lease, run_reaper
    from tests.utils import worker_database_url

    # The workers serve `default` only: the expired job's queue has no worker to run it again,
    # so its requeue is what the test sees.
    procs = [spawn_workers("--threads", "1", "--queues", "default", env=FAST) for _ in range(3)]
    blocker = psycopg.connect(worker_database_url())
    try:
        leader = wait_for_leader()
        victim = {f"{p.pid}": p for p in procs}[leader.rsplit("-", 1)[1]]
        job = enqueue("noop", {}, queue="reaped-mid-way", max_attempts=3)
        (claimed,) = default_engine().claim(worker_ids=["ghost-host-1"], job_ids=[job.id])
        blocker.execute("LOCK TABLE job_events IN SHARE MODE")  # event inserts wait from now on
        expire_lease(claimed.id)

        def reap_waiting():
            with connection.cursor() as cur:
                # The reap's opening words: pg_stat_activity keeps only a statement's first
                # track_activity_query_size bytes (1 kB by default).
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND query LIKE %s", ["%WITH expired AS (%"])
                return cur.fetchone()[0] > 0

        # Polls: the other process's statement waiting on our lock shows only there.
        wait_for(reap_waiting, timeout=20, message="the leader's reap waits half-done")
        assert Job.objects.get(pk=job.id).status == "running"  # nothing committed yet
        victim.send_signal(signal.SIGKILL)
        victim.wait(5)
        killed_at = time.monotonic()
        blocker.rollback()  # the half-done reap's backend may now finish or roll back
        new_leader = wait_for_leader(other_than=leader, timeout=15)
        assert time.monotonic() - killed_at < 10
        assert new_leader != leader
        wait_until_jobs("queued", pk=job.id, timeout=15, message="the expired job requeued")
        # Reaped once: the reap's row lock kept a new leader off the job until the dead
        # leader's statement ended. Three more passes of the same statement (here, in this
        # process, as the new leader's sweeps run it) reap nothing again.
        assert [run_reaper() for _ in range(3)] == [{}] * 3
        kinds = list(JobEvent.objects.filter(job_id=job.id).order_by("id")
                     .values_list("kind", flat=True))
        assert kinds.count("lease_expired") == 1, kinds
        assert kinds[:2] == ["created", "lease_expired"], kinds  # it carries its start
        job.refresh_from_db()
        assert job.locked_by is None and job.lease_token is None and job.attempts == 1
        report = audit(job_ids=[job.id])
        assert report.ok, report.format()
    finally:
        blocker.close()
        stop_workers(*procs)
