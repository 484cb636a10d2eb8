"""The start witness (witness.py): the process beside an unsupervised worker that records, when
the worker dies, which prefetched jobs its threads had started, so that a thread need not wait
for a prefetched job's start to be written before its handler runs, and a job whose handler
killed its process is still charged its attempt while the ones that only waited are not."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.engine import default_engine
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.testing import expire_lease, run_reaper
from django_pg_jobqueue.worker.held import Held
from django_pg_jobqueue.worker.pool import WorkerPool
from django_pg_jobqueue.worker.starter import Starter

pytestmark = pytest.mark.django_db(transaction=True)

PREFETCH_ID = "vm-9-prefetch"


def _prefetched(n: int) -> list:
    jobs = [services.enqueue("noop", {}, max_attempts=3) for _ in range(n)]
    return services.claim(worker_ids=[PREFETCH_ID] * n, job_ids=[j.id for j in jobs])


def test_a_dead_processs_started_prefetched_job_is_charged_and_a_waiting_one_is_not():
    started, waiting = _prefetched(2)
    witness = default_engine().start_witness(PREFETCH_ID, ["vm-9-1", "vm-9-2"])
    assert witness.alive()
    witness.set_running(1, started.id)  # thread vm-9-2 runs it; no start written yet
    witness.close()  # the end of the pipe: what a dying process leaves the witness
    assert not witness.alive()
    assert Job.objects.get(pk=started.id).locked_by == "vm-9-2"
    assert Job.objects.get(pk=waiting.id).locked_by == PREFETCH_ID
    for job in (started, waiting):
        expire_lease(Job.objects.get(pk=job.id))
    assert run_reaper() == {"queued": 1, "released": 1}
    rows = {j.id: (j.status, j.attempts) for j in Job.objects.all()}
    assert rows == {started.id: ("queued", 1), waiting.id: ("queued", 0)}
    assert JobEvent.objects.get(job_id=waiting.id, kind="released").data["reason"] == "unstarted"


def test_the_witness_leaves_alone_a_job_whose_start_or_outcome_was_written_meanwhile():
    adopted, finished = _prefetched(2)
    services.adopt_prefetched([(adopted.id, adopted.lease_token, "vm-9-1")])
    services.complete(finished.id, finished.lease_token, worker_id="vm-9-2", result=None)
    witness = default_engine().start_witness(PREFETCH_ID, ["vm-9-1", "vm-9-2"])
    witness.set_running(0, adopted.id)
    witness.set_running(1, finished.id)
    witness.close()
    assert Job.objects.get(pk=adopted.id).locked_by == "vm-9-1"
    row = Job.objects.get(pk=finished.id)
    assert (row.status, row.locked_by) == ("succeeded", None)


def test_a_slot_cleared_after_its_job_means_nothing_was_started():
    [job] = _prefetched(1)
    witness = default_engine().start_witness(PREFETCH_ID, ["vm-9-1"])
    witness.set_running(0, job.id)
    witness.set_running(0, 0)  # the thread finished it (its outcome not yet written)
    witness.close()
    assert Job.objects.get(pk=job.id).locked_by == PREFETCH_ID


def test_a_pool_with_a_live_witness_does_not_wait_for_a_start_and_without_one_does(
        monkeypatch):
    pool = WorkerPool(threads=1, prefetch=4)
    written = []
    monkeypatch.setattr(pool.starter, "start_job", lambda *a: written.append(a) or False)
    queued = []
    monkeypatch.setattr(pool.starter, "note_start", lambda *a: queued.append(a))
    assert pool.start_prefetched(1, None, "w") is False  # no witness: written and waited for
    pool.start_witness()
    try:
        assert pool.witness.alive()
        assert pool.start_prefetched(2, None, "w") is True
        assert pool.start_prefetched(3, None, "w", witnessed=False) is False  # a chunk's
        pool.witness.proc.kill()
        pool.witness.proc.wait()
        assert pool.start_prefetched(4, None, "w") is False  # it died: waited for again
        assert pool.witness is None
    finally:
        if pool.witness is not None:
            pool.witness.close()
    assert [a[0] for a in written] == [1, 3, 4] and [a[0] for a in queued] == [2]


def test_a_noted_start_is_left_out_only_for_a_job_that_succeeded_meanwhile():
    """A start nobody waits for is written after a few milliseconds, unless its job's success
    went to the completer meanwhile (that statement ends the job and names its thread). A job
    that ended otherwise without writing its row (its handler raised LeaseLost, its outcome
    could not be written) still has its start written: the reaper must charge it."""
    running, succeeded, left_running = _prefetched(3)
    done = Held.of(succeeded, succeeded.worker_id)
    starter = Starter(succeeded=lambda held: held is done)
    starter.start()
    for c, worker_id, held in ((running, "vm-9-1", Held.of(running, running.worker_id)),
                               (succeeded, "vm-9-2", done),
                               (left_running, "vm-9-3", Held.of(left_running, "x"))):
        starter.note_start(c.id, c.lease_token, worker_id, held)
    starter.stop()  # writes what was noted, then ends
    starter.join(10)
    owners = dict(Job.objects.values_list("id", "locked_by"))
    assert owners == {running.id: "vm-9-1", succeeded.id: PREFETCH_ID, left_running.id: "vm-9-3"}
