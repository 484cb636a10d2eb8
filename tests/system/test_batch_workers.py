"""Batches on real `run_job_workers` processes: three processes racing to finish a batch's
last members enqueue its callbacks exactly once (on_complete and on_failure for a batch with
one permanent failure, never on_success; on_success and on_complete for an all-success
batch), with exact counts; the reapers' sweeps, which run meanwhile, add none. The default
suite runs a batch of 200; the `slow` marker's variant, 1,000."""

import pytest

from django_pg_jobqueue import batch_progress, services
from django_pg_jobqueue.engine import default_engine
from django_pg_jobqueue.models import HistoryEvent, Job, JobBatch
from tests.handlers import batch_handlers  # noqa: F401  (registers the handlers in this process)
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

REAPER_INTERVAL_SECONDS = 0.5
ENV = {"JOB_EXTRA_HANDLER_MODULES": "tests.handlers.batch_handlers",
       "JOB_WORKER_LOG_LEVEL": "WARNING", "JOB_POLL_INTERVAL_SECONDS": "0.2",
       "JOB_REAPER_INTERVAL_SECONDS": str(REAPER_INTERVAL_SECONDS)}
CALLBACKS = {"on_complete": {"type": "batch_callback", "payload": {"tag": "complete"}},
             "on_success": {"type": "batch_callback", "payload": {"tag": "success"}},
             "on_failure": {"type": "batch_callback", "payload": {"tag": "failure"}}}


def drain_batch(size: int, fail: set[int]) -> tuple[JobBatch, dict[str, Job]]:
    workers = [spawn_workers("--threads", "4", env=ENV) for _ in range(3)]
    outputs = [Output(w) for w in workers]
    try:
        # Every process up before the batch exists, so that all three share its members and
        # race to finish the last ones (each process says so once its pool runs).
        for out in outputs:
            out.wait_for_line("running (", timeout=60)
        batch = services.enqueue_batch(
            [{"type": "batch_member", "payload": {"n": i, "fail": i in fail, "seconds": 0.01}}
             for i in range(size)], pass_results=True, **CALLBACKS)
        wait_until_jobs(("succeeded", "failed"), count=size, batch_id=batch.id,
                        timeout=60 + size / 5, message="the batch's members")
        wait_until_jobs("succeeded", count=2, type="batch_callback", timeout=30,
                        message="the batch's two callbacks")
        # The reapers' batch sweep, the statement each worker's reaper runs, finishes the
        # batch no more: still two callbacks after four.
        assert [default_engine().settle_batches() for _ in range(4)] == [[]] * 4
    finally:
        stop_workers(*workers)
    found = list(Job.objects.filter(type="batch_callback"))
    assert len(found) == 2, [j.payload.get("tag") for j in found]
    # The three processes shared the members (each process's worker ids: <host>-<pid>-<n>),
    # so each finished some of them and settled the batch after them.
    finishers = (HistoryEvent.objects.filter(job__batch_id=batch.id, kind__in=["succeeded", "failed"])
                 .values_list("worker_id", flat=True))
    assert len({worker_id.rsplit("-", 1)[0] for worker_id in finishers}) == 3
    batch.refresh_from_db()
    return batch, {job.payload["tag"]: job for job in found}


def check_failure_batch(size: int) -> None:
    batch, found = drain_batch(size, fail={size // 2})
    assert set(found) == {"complete", "failure"}  # never on_success
    for job in found.values():
        summary = job.payload["batch"]
        assert {k: summary[k] for k in ("id", "total", "succeeded", "failed", "cancelled")} == {
            "id": batch.id, "total": size, "succeeded": size - 1, "failed": 1, "cancelled": 0}
        expected = list(range(size))
        expected[size // 2] = None
        assert summary["results"] == expected
    assert (batch.succeeded, batch.failed, batch.cancelled) == (size - 1, 1, 0)
    progress = batch_progress(batch.id)
    assert (progress["done"], progress["pending"], progress["running"]) == (size, 0, 0)


def test_three_processes_finish_a_batch_of_200_with_one_failure_and_enqueue_its_callbacks_once():
    check_failure_batch(200)


@pytest.mark.slow
def test_three_processes_finish_a_batch_of_1000_with_one_failure_and_enqueue_its_callbacks_once():
    check_failure_batch(1000)


def test_three_processes_finish_an_all_success_batch_with_on_success_and_on_complete_once():
    batch, found = drain_batch(200, fail=set())
    assert set(found) == {"complete", "success"}
    assert found["success"].payload["batch"]["succeeded"] == 200
    assert batch.callback_jobs == {"on_complete": found["complete"].id,
                                   "on_success": found["success"].id}
