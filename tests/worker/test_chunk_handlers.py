"""Chunk handlers (`@handler(chunk_size=N)`) in a worker pool and in drain: one call takes
the jobs of a chunk, each job held and renewed on its own lease while it runs, and each
settled on its own by the executor's one outcome path: a success, a failure retried by its
policy, a cancel, or, for an answer of the wrong shape, a failure for good."""
import threading

import pytest

from django_pg_jobqueue import enqueue, enqueue_many, services
from django_pg_jobqueue.exceptions import JobCancelled
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.testing import drain
from django_pg_jobqueue.worker.executor import chunk_outcomes

RELEASE = threading.Event()
CALLS: list[list[int]] = []


@pytest.fixture(autouse=True)
def _reset():
    RELEASE.clear()
    CALLS.clear()
    yield
    RELEASE.set()


def waiting_chunk(ctxs, payloads):
    """Holds its chunk until the test releases it; a job cancelled meanwhile ends cancelled."""
    CALLS.append([ctx.job_id for ctx in ctxs])
    RELEASE.wait(10)
    return [JobCancelled(ctx.stop_reason) if ctx.should_stop() else {"n": payload["n"]}
            for ctx, payload in zip(ctxs, payloads, strict=True)]


@pytest.mark.django_db(transaction=True)
def test_a_chunk_runs_in_one_call_each_lease_renewed_and_each_job_settled_alone(
        worker_pool, custom_handler):
    custom_handler("chunk_wait", waiting_chunk, chunk_size=10, chunk_wait_seconds=2.0)
    ids = [job.id for job in enqueue_many([{"type": "chunk_wait", "payload": {"n": i}}
                                           for i in range(10)])]
    pool = worker_pool(threads=1)
    pool.test_signals.wait_started(ids)
    assert sorted(CALLS[0]) == ids  # one call, all ten: the chunk filled before its wait ran out
    # Every job of the chunk is held, and renewed, under its own lease token.
    assert pool.renewer.run_once()["renewed"] == 10
    services.cancel(ids[3])
    assert pool.renewer.run_once()["cancelled"] == 1  # reaches that job's ctx alone
    RELEASE.set()
    pool.test_signals.wait_ended(ids)
    statuses = dict(Job.objects.filter(id__in=ids).values_list("id", "status"))
    assert statuses.pop(ids[3]) == "cancelled"
    assert set(statuses.values()) == {"succeeded"}
    assert len(CALLS) == 1


def raising_chunk(ctxs, payloads):
    raise RuntimeError("the whole chunk failed")


def misshapen_chunk(ctxs, payloads):
    return {"not": "a list"}


@pytest.mark.django_db
def test_a_chunk_handler_that_raises_fails_each_job_by_its_own_retry_policy(custom_handler):
    custom_handler("chunk_raise", raising_chunk, chunk_size=5, max_attempts=2)
    job = enqueue("chunk_raise", {})
    result = drain("chunk_raise")  # drain gives a chunk handler one job a call
    assert result.retried == 1
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("queued", 1)
    assert "the whole chunk failed" in job.last_error


@pytest.mark.django_db
def test_a_chunk_answer_that_is_not_one_item_per_job_fails_each_job_for_good(custom_handler):
    custom_handler("chunk_misshapen", misshapen_chunk, chunk_size=5, max_attempts=3)
    job = enqueue("chunk_misshapen", {})
    drain("chunk_misshapen")
    job.refresh_from_db()
    assert job.status == "failed" and job.attempts == 1
    assert "a list of one item per job it was given (1), not dict" in job.last_error
    assert JobEvent.objects.filter(job=job, kind="failed").exists()


def test_chunk_outcomes_read_each_item_as_its_jobs_result_or_exception():
    boom = ValueError("boom")
    assert chunk_outcomes([1, boom, None], None, 3) == [(1, None), (None, boom), (None, None)]
    assert chunk_outcomes(None, boom, 2) == [(None, boom), (None, boom)]
    short = chunk_outcomes([1], None, 2)
    assert all(result is None and "(2), not a list of 1" in str(exc) for result, exc in short)
