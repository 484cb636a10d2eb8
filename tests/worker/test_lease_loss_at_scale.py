"""When a worker falls behind: its completer's backlog stops its claims, and leases lost by the
thousand are recorded in one statement a pass, so that a stall of the server ends when the
stall does instead of feeding on itself (every job claimed, run, its lease lost, requeued)."""
import threading

import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.engine import PostgresEngine
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services.lifecycle import Completion
from django_pg_jobqueue.testing import _context
from django_pg_jobqueue.worker.completer import Completer
from django_pg_jobqueue.worker.held import Held, HeldJobs
from django_pg_jobqueue.worker.renewer import LeaseRenewer


@pytest.fixture
def lease_lost_writes(monkeypatch):
    """The statements that write lease_lost events: (action, number of jobs) each."""
    from django_pg_jobqueue.services import lifecycle

    writes, insert = [], lifecycle._leases_lost_written

    def counted(lost, action, message):
        writes.append((action, len(lost)))
        return insert(lost, action, message)

    monkeypatch.setattr(lifecycle, "_leases_lost_written", counted)
    return writes


def _steal(job_ids):
    """Give each job a new lease, as the reaper and another worker's claim would."""
    with connection.cursor() as cur:
        cur.execute("UPDATE jobs SET lease_token = gen_random_uuid(), locked_by = 'other' "
                    "WHERE id = ANY(%s)", [list(job_ids)])


@pytest.mark.django_db
def test_a_renewal_pass_that_finds_many_leases_lost_records_them_in_one_write(lease_lost_writes):
    jobs = services.enqueue_many([{"type": "noop"} for _ in range(40)])
    claimed = services.claim(worker_ids=["proc-1"] * 40, job_ids=[j.id for j in jobs])
    held = HeldJobs()
    helds = [Held(c, _context(c, "proc-1")) for c in claimed]
    held.add_many(helds)
    lost_ids = [c.id for c in claimed[:30]]
    _steal(lost_ids)
    renewer = LeaseRenewer(held, process_id="proc", threads=1, queues=["*"])

    counts = renewer.run_once()

    assert (counts["renewed"], counts["lost"]) == (10, 30)
    assert lease_lost_writes == [("renew", 30)]
    events = JobEvent.objects.filter(kind="lease_lost")
    assert sorted(e.job_id for e in events) == sorted(lost_ids)
    by_job = {c.id: c for c in claimed}
    for e in events:  # each names the refused token and attempt, as one write per job did
        assert e.data == {"lease_token": str(by_job[e.job_id].lease_token), "refused": "renew"}
        assert (e.attempt, e.worker_id) == (by_job[e.job_id].attempt, "proc-1")
    # Their handlers are told to stop and they are no longer renewed; the others still are.
    assert {h.job.id for h in helds if h.ctx.stop_reason == "lease_lost"} == set(lost_ids)
    assert {h.job.id for h in held.snapshot()} == {c.id for c in claimed[30:]}


@pytest.mark.django_db
def test_a_completion_batch_whose_leases_were_lost_records_them_in_one_write(lease_lost_writes):
    jobs = services.enqueue_many([{"type": "noop"} for _ in range(20)])
    claimed = services.claim(worker_ids=["proc-1"] * 20, job_ids=[j.id for j in jobs])
    _steal([c.id for c in claimed[::2]])
    held = HeldJobs()
    held.add_many([Held(c, _context(c, "proc-1")) for c in claimed])

    Completer(held).flush(
        [Completion(c.id, c.lease_token, "proc-1", {"n": c.id}, attempt=c.attempt) for c in claimed])

    assert lease_lost_writes == [("complete", 10)]
    assert Job.objects.filter(status="succeeded").count() == 10
    refused = JobEvent.objects.filter(kind="lease_lost")
    assert sorted(e.job_id for e in refused) == sorted(c.id for c in claimed[::2])
    assert {e.data["refused"] for e in refused} == {"complete"}
    assert not len(held)


@pytest.mark.django_db
def test_a_lease_lost_event_for_a_job_deleted_meanwhile_is_left_out_not_the_others():
    jobs = services.enqueue_many([{"type": "noop"} for _ in range(3)])
    claimed = services.claim(worker_ids=["proc-1"] * 3, job_ids=[j.id for j in jobs])
    gone = claimed[1].id
    with connection.cursor() as cur:
        cur.execute("DELETE FROM job_events WHERE job_id = %s", [gone])
        cur.execute("DELETE FROM jobs WHERE id = %s", [gone])

    services.record_leases_lost([(c.id, c.lease_token, "proc-1", 1) for c in claimed],
                                "renew", "lease renewal refused")

    assert sorted(JobEvent.objects.filter(kind="lease_lost").values_list("job_id", flat=True)) \
        == sorted([claimed[0].id, claimed[2].id])


def test_a_pool_whose_completer_is_behind_claims_no_more_until_it_catches_up(
        worker_pool, monkeypatch):
    """With the completer unable to write, the pool claims what its threads and prefetch hold
    plus MAX_PENDING run but unwritten, and no more; once it writes again, every job ends."""
    monkeypatch.setattr(Completer, "MAX_PENDING", 6)
    gate = threading.Event()
    writing = threading.Event()

    class SlowCompleter(PostgresEngine):
        def complete_many(self, completions):
            writing.set()
            gate.wait(30)
            return super().complete_many(completions)

    jobs = services.enqueue_many([{"type": "noop"} for _ in range(200)])
    pool = worker_pool(threads=2, prefetch=4, engine=SlowCompleter())
    assert writing.wait(10)
    # What it may have claimed: MAX_PENDING run but unwritten (the one being written
    # included), two threads' jobs, the prefetch buffer, and one claim under way when the
    # completer filled up (at most threads + prefetch).
    ceiling = 6 + (2 + 4) * 2
    pool.test_signals.claimed.wait(lambda claimed: len(claimed) >= 6)
    # And it stays there while the completer is stuck: ten times the lane held back its claim
    # for want of room in the completer (flow control).
    throttled = pool.test_signals.throttled
    for n in range(len(throttled.seen()) + 1, len(throttled.seen()) + 11):
        throttled.wait(lambda seen, n=n: len(seen) >= n)
        assert Job.objects.exclude(status="queued").count() <= ceiling
    gate.set()
    pool.test_signals.wait_ended([j.id for j in jobs], "succeeded", timeout=30)
    assert not JobEvent.objects.filter(kind="lease_lost").exists()
    pool.shutdown(grace=2)


def test_the_completers_backlog_is_bounded_in_results_bytes_as_well_as_in_count(monkeypatch):
    """A few big results fill the completer's room as surely as many small ones: the pool
    never holds more than about MAX_PENDING_BYTES of results waiting to be written."""
    monkeypatch.setattr(Completer, "MAX_PENDING", 100)
    monkeypatch.setattr(Completer, "MAX_PENDING_BYTES", 2999)
    completer = Completer(HeldJobs())  # not started: nothing is written, the backlog stays
    big = "[" + ",".join(["1"] * 499) + "]"  # 999 bytes of JSON

    def submit(i, result_json):
        completer.submit(Completion(i, None, "proc-1", None, result_json=result_json))

    for i in range(3):
        submit(i, big)
    assert completer.has_room()  # 3 jobs, 2,997 bytes
    submit(3, "[]")
    assert not completer.has_room(timeout=0.05)  # 2,999 bytes: full by its bytes
    completer._settled(1, len(big))  # one big result written
    assert completer.has_room()
    for i in range(4, 101):
        submit(i, None)  # results not yet encoded count by their number only
    assert not completer.has_room()  # 100 pending: full by their number
    completer._settled(99, 2 * len(big) + 2)
    assert completer.has_room()
