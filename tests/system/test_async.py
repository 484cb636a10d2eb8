"""The queue from async code: `async def` handlers and async Django tasks on real
`run_job_workers` processes (success, timeout, cancel), and `aenqueue()` / `aenqueue_many()`
from an async view, refusing what `enqueue()` refuses with the same exceptions and messages.
Also this module's `urlpatterns`: the async view the tests call."""
import json
import math
from datetime import datetime, timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import JsonResponse
from django.test import AsyncClient
from django.urls import path

from django_pg_jobqueue import aenqueue, aenqueue_many, enqueue, enqueue_many, services
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.tasks_compat import TaskResultStatus
from tests.handlers import async_handlers
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, stop_workers, wait_until_jobs

WORKER_ENV = {"JOB_EXTRA_HANDLER_MODULES": "tests.handlers.async_handlers", "JOB_LEASE_SECONDS": "2",
              "JOB_POLL_INTERVAL_SECONDS": "0.1", "JOB_RETRY_BASE_SECONDS": "0.1",
              "JOB_RETRY_JITTER": "0"}


# -- the async view ------------------------------------------------------------------------
async def enqueue_view(request):
    """POST a JSON object of aenqueue()'s arguments: 201 with the job's id, or 400 saying
    what aenqueue() refused."""
    try:
        job = await aenqueue(**json.loads(request.body))
    except InvalidJobArgument as exc:
        return JsonResponse({"error": type(exc).__name__, "argument": exc.argument,
                             "message": str(exc)}, status=400)
    return JsonResponse({"id": job.id}, status=201)


urlpatterns = [path("enqueue/", enqueue_view)]


@pytest.fixture
def workers():
    started = []

    def start(*args) -> Output:
        proc = spawn_workers("--threads", "1", *args, env=WORKER_ENV)
        started.append(proc)
        return Output(proc)  # the worker's output, read as it comes

    yield start
    stop_workers(*started, timeout=30)


def reasons(job) -> list[tuple[str, str | None]]:
    return [(e.kind, (e.data or {}).get("reason")) for e in
            JobEvent.objects.filter(job_id=job.pk, kind__in=["retry_scheduled", "failed"])
            .order_by("id")]


# -- async handlers and tasks on run_job_workers ---------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_an_async_handler_and_an_async_task_succeed_on_run_job_workers(workers):
    job = enqueue("async_report", {"n": 7})
    result = async_handlers.async_multiply.enqueue(6, 7)
    workers()
    wait_until_jobs("succeeded", pk=job.pk)
    got = Job.objects.get(pk=job.pk).result
    # The async ORM and sync_to_async read the job; their queries ran on the executor thread
    # waiting for the coroutine, not on the event loop's thread.
    assert (got["type"], got["attempt"], got["count"], got["n"]) == ("async_report", 1, 1, 7)
    assert got["orm_thread"] != got["loop_thread"]
    assert JobEvent.objects.filter(job_id=job.pk, kind="log", message="read my job").exists()
    assert Job.objects.get(pk=job.pk).progress_message == "half way"  # ctx.aprogress
    wait_until_jobs("succeeded", pk=int(result.id))
    done = async_handlers.async_multiply.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 42


@pytest.mark.django_db(transaction=True)
def test_an_async_handler_past_its_timeout_is_cancelled_and_retried_by_policy(workers):
    job = enqueue("async_nap", {"seconds": 60}, timeout_seconds=1, max_attempts=2)
    out = workers()
    wait_until_jobs("failed", pk=job.pk, timeout=40, message="two timed-out attempts")
    row = Job.objects.get(pk=job.pk)
    assert row.attempts == 2 and "timed out" in row.last_error
    assert reasons(job) == [("retry_scheduled", "timeout"), ("failed", "timeout")]
    # Each attempt's coroutine was cancelled at its await (the handler printed so), not left
    # sleeping: the one executor thread was free for the second attempt at once.
    out.wait_for_line("async_nap: cancelled attempt", count=2, timeout=10)
    assert not out.matching("async_nap: woke")


@pytest.mark.django_db(transaction=True)
def test_a_cancel_request_cancels_a_running_async_handler(workers):
    job = enqueue("async_nap", {"seconds": 60})
    out = workers()
    wait_until_jobs("running", pk=job.pk)
    services.cancel(job.pk)
    wait_until_jobs("cancelled", pk=job.pk, timeout=20)
    out.wait_for_line("async_nap: cancelled attempt 1", timeout=10)  # the handler's print
    after = enqueue("async_report", {"n": 1})  # the executor is free again
    wait_until_jobs("succeeded", pk=after.pk, timeout=20)


# -- aenqueue from an async view ---------------------------------------------------------------
@pytest.mark.urls("tests.system.test_async")
@pytest.mark.django_db(transaction=True)
def test_aenqueue_from_an_async_view_enqueues_a_job_that_runs(workers):
    client = AsyncClient()
    response = async_to_sync(client.post)("/enqueue/", {"type": "async_report", "payload": {
        "n": 3}, "priority": 5}, content_type="application/json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.priority == 5
    workers()
    wait_until_jobs("succeeded", pk=job.pk)
    assert Job.objects.get(pk=job.pk).result["n"] == 3


# Arguments enqueue() refuses; the JSON-expressible ones are sent through the async view too.
REFUSED = {
    "unknown type": {"type": "no_such_type"},
    "priority as text": {"type": "noop", "priority": "5"},
    "queue with a newline": {"type": "noop", "queue": "a\n"},
    "negative delay": {"type": "noop", "delay_seconds": -1},
    "zero timeout": {"type": "noop", "timeout_seconds": 0},
    "NUL in the payload": {"type": "noop", "payload": {"a": "x\x00"}},
    "blank idempotency key": {"type": "noop", "idempotency_key": "  "},
}
PYTHON_ONLY = {
    "both delay and run_at": {"type": "noop", "delay_seconds": 5,
                              "run_at": datetime.fromisoformat("2030-01-01T00:00:00+00:00")},
    "NaN in the payload": {"type": "noop", "payload": {"a": math.nan}},
    "naive run_at": {"type": "noop", "run_at": datetime(2030, 1, 1)},
    "negative timedelta": {"type": "noop", "delay_seconds": timedelta(seconds=-1)},
}


def _refusal(call) -> InvalidJobArgument:
    with pytest.raises(InvalidJobArgument) as caught:
        call()
    return caught.value


def _same(a: InvalidJobArgument, b: InvalidJobArgument) -> None:
    assert (type(a), a.argument, a.index, str(a)) == (type(b), b.argument, b.index, str(b))


@pytest.mark.django_db
@pytest.mark.parametrize("kwargs", [*REFUSED.values(), *PYTHON_ONLY.values()],
                         ids=[*REFUSED, *PYTHON_ONLY])
def test_aenqueue_and_aenqueue_many_refuse_what_their_sync_twins_refuse(kwargs):
    sync = _refusal(lambda: enqueue(**kwargs))
    _same(_refusal(lambda: async_to_sync(aenqueue)(**kwargs)), sync)
    batch = [{"type": "noop"}, kwargs]
    _same(_refusal(lambda: async_to_sync(aenqueue_many)(batch)),
          _refusal(lambda: enqueue_many(batch)))
    assert not Job.objects.exists()


@pytest.mark.urls("tests.system.test_async")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED)
def test_an_async_view_refuses_bad_arguments_as_enqueue_does(body):
    sync = _refusal(lambda: enqueue(**body))
    response = async_to_sync(AsyncClient().post)("/enqueue/", body,
                                                 content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"error": type(sync).__name__, "argument": sync.argument,
                               "message": str(sync)}
    assert not Job.objects.exists()


# -- the docs' pattern: a model write and its job in one transaction, from async code ----------
@sync_to_async
def _sign_up(username: str, fail: bool):
    with transaction.atomic():
        user = get_user_model().objects.create(username=username)
        enqueue("noop", {"user": user.pk})
        if fail:
            raise RuntimeError("after the enqueue")
    return user


@pytest.mark.django_db(transaction=True)
def test_a_job_enqueued_with_a_model_write_from_async_code_commits_and_rolls_back_with_it():
    async def view_code(username, fail):
        return await _sign_up(username, fail)

    with pytest.raises(RuntimeError):
        async_to_sync(view_code)("rolled-back", True)
    assert not get_user_model().objects.filter(username="rolled-back").exists()
    assert not Job.objects.exists()
    user = async_to_sync(view_code)("kept", False)
    assert Job.objects.get().payload == {"user": user.pk}


# -- in the suite of a project: testing.drain runs async handlers as the workers do -----------
@pytest.mark.django_db
def test_drain_runs_an_async_handler_on_the_tests_own_connection(custom_handler):
    from django_pg_jobqueue.testing import drain

    async def count_users(ctx, payload):
        return {"users": await get_user_model().objects.filter(username="in-test").acount()}

    custom_handler("count_users", count_users)
    get_user_model().objects.create(username="in-test")  # uncommitted: the test's transaction
    job = enqueue("count_users")
    assert drain().succeeded == 1
    assert Job.objects.get(pk=job.pk).result == {"users": 1}
