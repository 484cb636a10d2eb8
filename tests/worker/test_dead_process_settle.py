"""services.settle_dead_process, what a supervisor does with the jobs of a child it found
dead: those the child was running are charged by their policy, the rest it held released
uncharged; jobs of another process (a pid that merely starts alike) and jobs taken from the
dead process meanwhile are left alone."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.retries import RetryPolicy

pytestmark = pytest.mark.django_db


def test_running_jobs_are_charged_held_ones_released_and_no_other_process_is_touched():
    running = services.enqueue("noop", {}, max_attempts=2)
    last_try = services.enqueue("noop", {}, max_attempts=1)
    prefetched = services.enqueue("noop", {})
    neighbour = services.enqueue("noop", {})  # host-1234: not host-123's
    services.claim(worker_ids=["host-123-1"], job_ids=[running.id])
    services.claim(worker_ids=["host-123-2"], job_ids=[last_try.id])
    services.claim(worker_ids=["host-123-prefetch"], job_ids=[prefetched.id])
    services.claim(worker_ids=["host-1234-1"], job_ids=[neighbour.id])

    done = services.settle_dead_process(
        "host-123", running=[running.id, last_try.id, neighbour.id],
        cause="worker process host-123 died (killed by signal SIGKILL)",
        policy_for=lambda job_type: RetryPolicy(delays_seconds=(0,)))

    assert (done.retried, done.failed, done.released) == ([running.id], [last_try.id],
                                                          [prefetched.id])
    rows = {j.id: j for j in Job.objects.all()}
    assert (rows[running.id].status, rows[running.id].attempts) == ("queued", 1)
    assert rows[running.id].last_error == (
        "worker process host-123 died (killed by signal SIGKILL) while running this job "
        f"(and job {last_try.id})")
    assert (rows[last_try.id].status, rows[last_try.id].attempts) == ("failed", 1)
    assert (rows[prefetched.id].status, rows[prefetched.id].attempts) == ("queued", 0)
    assert JobEvent.objects.get(job=prefetched, kind="released").message == (
        "worker process host-123 died (killed by signal SIGKILL) before it ran this job")
    assert (rows[neighbour.id].status, rows[neighbour.id].locked_by) == ("running",
                                                                         "host-1234-1")


def test_without_charge_every_job_is_released_and_a_job_reclaimed_meanwhile_is_left_alone():
    mine = services.enqueue("noop", {})
    moved = services.enqueue("noop", {})
    services.claim(worker_ids=["host-9-1", "host-9-2"], job_ids=[mine.id, moved.id])
    # The reaper took `moved` and another process claimed it before the supervisor looked.
    Job.objects.filter(pk=moved.id).update(locked_by="other-7-1")

    done = services.settle_dead_process("host-9", running=[mine.id, moved.id],
                                        cause="worker process host-9 died", charge=False)

    assert (done.retried, done.failed, done.released) == ([], [], [mine.id])
    assert Job.objects.get(pk=mine.id).attempts == 0
    assert Job.objects.get(pk=moved.id).locked_by == "other-7-1"


def test_a_job_that_ran_but_whose_outcome_was_not_written_is_charged_as_the_reaper_would():
    # Its handler returned (the thread no longer reports it running) but the completer had not
    # written its success when the process died: it ran, so it is charged, as the reaper
    # charges a lease that expired under a thread's id; a job still under the prefetch
    # buffer's id never started and is given back.
    ran = services.enqueue("noop", {}, max_attempts=3)
    waiting = services.enqueue("noop", {})
    services.claim(worker_ids=["host-77-1"], job_ids=[ran.id])
    services.claim(worker_ids=["host-77-prefetch"], job_ids=[waiting.id])

    done = services.settle_dead_process("host-77", running=[], cause="worker process host-77 died",
                                        policy_for=lambda job_type: RetryPolicy(delays_seconds=(0,)))

    assert (done.retried, done.failed, done.released) == ([ran.id], [], [waiting.id])
    row = Job.objects.get(pk=ran.id)
    assert (row.status, row.attempts) == ("queued", 1)
    assert row.last_error == ("worker process host-77 died after running this job, before its "
                              "outcome was written")
    assert Job.objects.get(pk=waiting.id).attempts == 0


def test_the_dead_processs_row_counts_what_its_supervisor_did_with_its_jobs():
    from django_pg_jobqueue.models import WorkerProcess

    WorkerProcess.objects.create(id="host-55", hostname="host", pid=55, threads=2, queues=["*"])
    running, last_try, prefetched = (services.enqueue("noop", {}, max_attempts=n)
                                     for n in (2, 1, 2))
    services.claim(worker_ids=["host-55-1"], job_ids=[running.id])
    services.claim(worker_ids=["host-55-2"], job_ids=[last_try.id])
    services.claim(worker_ids=["host-55-prefetch"], job_ids=[prefetched.id])
    services.settle_dead_process("host-55", running=[running.id, last_try.id], cause="died",
                                 policy_for=lambda job_type: RetryPolicy(delays_seconds=(0,)))
    row = WorkerProcess.objects.get(pk="host-55")
    assert (row.jobs_requeued, row.jobs_failed) == (2, 1)
