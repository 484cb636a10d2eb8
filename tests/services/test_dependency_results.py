"""A job enqueued after others reads their results from its context (`ctx.dependency_results`),
in the order its `after` named them, in one query, capped by the result size limit."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.testing import drain
from tests.handlers import workflow_handlers  # noqa: F401  (registers the handlers in this process)
from tests.handlers.chaos_handlers import LEASE_SECONDS, REAPER_INTERVAL_SECONDS
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

WORKER_ENV = {"JOB_EXTRA_HANDLER_MODULES": "tests.handlers.workflow_handlers",
              "JOB_WORKER_LOG_LEVEL": "WARNING", "JOB_POLL_INTERVAL_SECONDS": "0.2",
              "JOB_POLL_JITTER_SECONDS": "0.05", "JOB_LEASE_SECONDS": str(LEASE_SECONDS),
              "JOB_REAPER_INTERVAL_SECONDS": str(REAPER_INTERVAL_SECONDS)}


def _result(job):
    return Job.objects.values_list("result", flat=True).get(pk=job.pk)


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_chain_and_a_group_pass_their_results_along_in_a_worker_process():
    first = services.enqueue("pass_add", {"add": 1})
    second = services.enqueue("pass_add", {"add": 10}, after=[first])
    third = services.enqueue("pass_add", {"add": 100}, after=[second])
    group = services.enqueue_many([{"type": "pass_add", "payload": {"add": n}}
                                   for n in range(10)])
    order = group[5:] + group[:5]  # the order given, not the ids'
    final = services.enqueue("pass_collect", {}, after=order)
    worker = spawn_workers("--threads", "4", env=WORKER_ENV)
    try:
        wait_until_jobs("succeeded", pk__in=[final.pk, third.pk], timeout=40,
                        message="the chain and the group")
    finally:
        stop_workers(worker)
    assert [_result(j) for j in (first, second, third)] == [1, 11, 111]
    assert _result(final) == {"results": [5, 6, 7, 8, 9, 0, 1, 2, 3, 4]}


@pytest.mark.django_db
def test_the_results_are_read_once_on_first_use_and_none_without_dependencies(
        custom_handler, monkeypatch):
    from django_pg_jobqueue.services import workflows

    reads, seen = [], []

    def counted(job_id):
        reads.append(job_id)
        return workflows.dependency_results(job_id)

    monkeypatch.setattr(services, "dependency_results", counted)
    custom_handler("read_twice", lambda ctx, payload: seen.append(
        (ctx.dependency_results, ctx.dependency_results)))
    custom_handler("read_never", lambda ctx, payload: None)
    a = services.enqueue("pass_add", {"add": 2})
    b = services.enqueue("read_twice", {}, after=[a])
    c = services.enqueue("read_twice", {})
    services.enqueue("read_never", {}, after=[a])
    drain()
    assert seen == [([2], [2]), ([], [])]
    assert reads == [a.id, b.id, c.id]  # once per job that reads them, not for read_never


@pytest.mark.django_db
def test_a_dependency_that_did_not_succeed_gives_none(custom_handler):
    got = []
    custom_handler("got", lambda ctx, payload: got.append(ctx.dependency_results))
    a = services.enqueue("pass_add", {"add": 3})
    b = services.enqueue("pass_add", {"add": 4})
    services.enqueue("got", {}, after=[a, b], after_failure="run")
    services.cancel(b.id)
    drain()
    assert got == [[3, None]]


@pytest.mark.django_db
def test_results_over_the_size_limit_in_all_fail_the_job_for_good(custom_handler):
    custom_handler("big", lambda ctx, payload: "x" * 600)
    first, second = services.enqueue("big", {}), services.enqueue("big", {})
    last = services.enqueue("pass_collect", {}, after=[first, second])
    with override_settings(JOB_MAX_RESULT_BYTES=1000):
        drain()
    job = Job.objects.get(pk=last.pk)
    assert job.status == "failed" and job.attempts == 1
    assert "1204 bytes" in job.last_error and "JOB_MAX_RESULT_BYTES (1000)" in job.last_error
