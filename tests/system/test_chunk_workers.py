"""A chunk handler on a real `run_job_workers` process: 1,000 jobs of a type whose handler
takes 50 at once are drained in at most 25 calls, and each job's outcome is its own: the one
job of each call that fails is retried alone (and then succeeds), the rest succeed once."""
import pytest

from django_pg_jobqueue import enqueue_many
from django_pg_jobqueue.models import Job, JobEvent
from tests.handlers import chunk_handlers
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

JOBS = 1000


def test_a_chunk_handler_drains_1000_jobs_in_at_most_25_calls_with_per_job_outcomes(tmp_path):
    ledger = tmp_path / "calls.txt"
    enqueue_many([{"type": "chunk_sum", "payload": {"n": i}} for i in range(JOBS)])
    worker = spawn_workers("--threads", "1", env={
        "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.chunk_handlers",
        "JOB_WORKER_LOG_LEVEL": "WARNING", "JOB_TEST_CHUNK_CALLS": str(ledger)})
    try:
        wait_until_jobs("succeeded", count=JOBS, type="chunk_sum", timeout=60,
                        message="every job of the chunk handler")
    finally:
        stop_workers(worker)
    sizes = [int(line) for line in ledger.read_text().split()]
    assert len(sizes) <= 25, sizes
    assert max(sizes) == chunk_handlers.CHUNK_SIZE
    jobs = list(Job.objects.filter(type="chunk_sum"))
    # One failure per call that held a first attempt, each retried alone: its job ran twice,
    # every other job once.
    retried = [job for job in jobs if job.attempts == 2]
    assert {job.attempts for job in jobs} == {1, 2}
    assert len(retried) <= len(sizes)
    assert sum(sizes) == JOBS + len(retried)
    assert (JobEvent.objects.filter(job__type="chunk_sum", kind="retry_scheduled").count()
            == len(retried))
    assert sorted(job.result["n"] for job in jobs) == list(range(JOBS))
