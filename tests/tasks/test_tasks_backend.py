"""The django.tasks backend, driven only through Django's public task API, with a real worker.

The tasks are module-level functions here, so the in-process worker imports this module."""
import asyncio
import threading
from datetime import timedelta

import django
import pytest
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import enqueue, services, task_options
from django_pg_jobqueue.tasks_backend import QueueBackend, QueueTask
from django_pg_jobqueue.tasks_compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    check_tasks,
    default_task_backend,
    task,
    task_enqueued,
    task_finished,
    task_started,
)
from tests.utils import give_back_the_loop

ORDER: list[str] = []
GATE = threading.Event()


@task
def add(a, b):
    return a + b


@task
def record(label):
    ORDER.append(label)
    return label


@task_options(max_attempts=3)
@task(takes_context=True)
def fail_then_succeed(context, fail_times):
    if context.attempt <= fail_times:
        raise ValueError(f"failing attempt {context.attempt}")
    return {"attempt": context.attempt, "job_id": context.job.job_id}


@task_options(max_attempts=2)
@task
def always_fail(message):
    raise KeyError(message)


@task
def gated(seconds):
    GATE.wait(seconds)
    return "released"


@task
async def async_multiply(a, b):
    await give_back_the_loop()
    return a * b


@task_options(max_attempts=1, timeout_seconds=1)
@task
async def async_sleep(seconds):
    await asyncio.sleep(seconds)  # the work: a nap the timeout may cancel
    return "woke"


@task
def returns_a_set():
    return {1, 2}


def finished(pool, result, fn=add, timeout: float = 10.0):
    """The task's result once `pool` wrote its job's final outcome (its test signal)."""
    pool.test_signals.wait_finished([int(result.id)], timeout)
    return fn.get_result(result.id)


# -- success ----------------------------------------------------------------------------------

def test_a_task_runs_in_the_worker_and_its_return_value_comes_back(worker_pool):
    pool = worker_pool(threads=2)
    result = add.enqueue(2, b=40)
    assert result.status == TaskResultStatus.READY
    assert result.backend == "default" and result.args == [2] and result.kwargs == {"b": 40}
    done = finished(pool, result)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 42
    assert done.errors == []
    assert done.attempts == 1 and len(done.worker_ids) == 1
    assert done.enqueued_at <= done.started_at <= done.last_attempted_at <= done.finished_at
    result.refresh()  # Django's refresh goes through get_result too
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 42


def test_an_async_task_runs_natively_and_aenqueue_and_aget_result_work(worker_pool):
    pool = worker_pool(threads=1)

    async def produce():
        return await async_multiply.aenqueue(6, 7)

    result = asyncio.run(produce())
    finished(pool, result, async_multiply)

    async def read():
        return await async_multiply.aget_result(result.id)

    done = asyncio.run(read())
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 42


def test_a_task_result_is_waited_for_as_a_job_is_woken_at_its_outcome(worker_pool):
    from django_pg_jobqueue import await_result, wait

    worker_pool(threads=1)
    result = add.enqueue(1, 2)
    assert wait(result, timeout=15) == 3  # then refresh() reads the whole TaskResult
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3

    async def produce_and_wait():
        enqueued = await async_multiply.aenqueue(3, 5)
        return await await_result(enqueued, timeout=15)

    assert asyncio.run(produce_and_wait()) == 15


# -- exception and retry ----------------------------------------------------------------------

def test_a_failing_task_is_retried_and_then_succeeds(worker_pool):
    pool = worker_pool(threads=1)
    result = fail_then_succeed.enqueue(fail_times=1)
    done = finished(pool, result, fail_then_succeed)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == {"attempt": 2, "job_id": int(result.id)}
    assert done.attempts == 2
    [error] = done.errors
    assert error.exception_class is ValueError
    assert "failing attempt 1" in error.traceback and "fail_then_succeed" in error.traceback


def test_a_task_that_always_fails_ends_failed_with_each_attempts_error(worker_pool):
    pool = worker_pool(threads=1)
    result = always_fail.enqueue("no such thing")
    done = finished(pool, result, always_fail)
    assert done.status == TaskResultStatus.FAILED
    assert done.attempts == 2  # max_attempts=2 from @task_options(...)
    assert [e.exception_class_path for e in done.errors] == ["builtins.KeyError"] * 2
    assert "no such thing" in done.errors[-1].traceback
    with pytest.raises(ValueError, match="failed"):
        _ = done.return_value


def test_signals_follow_each_attempt(worker_pool):
    seen = []

    def on(signal_name):
        def receiver(sender, task_result, **kwargs):
            if task_result.task.func is fail_then_succeed.func:
                seen.append((signal_name, task_result.status, task_result.attempts))
        return receiver

    receivers = [(task_enqueued, on("enqueued")), (task_started, on("started")),
                 (task_finished, on("finished"))]
    for signal, receiver in receivers:
        signal.connect(receiver, sender=QueueBackend)
    try:
        pool = worker_pool(threads=1)
        result = fail_then_succeed.enqueue(fail_times=1)
        finished(pool, result, fail_then_succeed)
    finally:
        for signal, receiver in receivers:
            signal.disconnect(receiver, sender=QueueBackend)
    assert seen == [
        ("enqueued", TaskResultStatus.READY, 0),
        ("started", TaskResultStatus.RUNNING, 1),
        ("finished", TaskResultStatus.READY, 1),  # a retry is scheduled
        ("started", TaskResultStatus.RUNNING, 2),
        ("finished", TaskResultStatus.SUCCESSFUL, 2),
    ]


def test_a_return_value_that_is_not_json_fails_the_task_without_retrying(worker_pool):
    pool = worker_pool(threads=1)
    result = returns_a_set.enqueue()
    done = finished(pool, result, returns_a_set)
    assert done.status == TaskResultStatus.FAILED and done.attempts == 1
    assert done.errors[0].exception_class is TypeError


# -- get_result while queued, running and finished --------------------------------------------

def test_get_result_while_queued_running_and_finished(worker_pool):
    GATE.clear()
    result = gated.enqueue(10)
    queued = gated.get_result(result.id)
    assert queued.status == TaskResultStatus.READY
    assert queued.started_at is None and queued.worker_ids == [] and not queued.is_finished
    with pytest.raises(ValueError, match="not finished"):
        _ = queued.return_value

    pool = worker_pool(threads=1)
    pool.test_signals.wait_started([int(result.id)])
    running = gated.get_result(result.id)
    assert running.status == TaskResultStatus.RUNNING
    assert running.started_at is not None and running.finished_at is None
    assert running.worker_ids == [pool.executors[0].worker_id]
    with pytest.raises(ValueError, match="not finished"):
        _ = running.return_value

    GATE.set()
    done = finished(pool, result, gated)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == "released"
    assert done.finished_at >= done.started_at


def test_get_result_refuses_unknown_ids_and_other_tasks_results(db):
    result = add.enqueue(1, 2)
    with pytest.raises(TaskResultMismatch):
        record.get_result(result.id)
    for bad in ("999999999", "abc", ""):
        with pytest.raises(TaskResultDoesNotExist):
            add.get_result(bad)
    plain_job = enqueue("noop")  # a job, but not a task
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(plain_job.id))


# -- priority, run_after, queues, options -------------------------------------------------------

def test_higher_priority_tasks_run_first(worker_pool):
    ORDER.clear()
    ids = [record.using(priority=p).enqueue(label).id
           for label, p in [("low", -10), ("mid", 0), ("high", 50), ("top", 100)]]
    pool = worker_pool(threads=1, batch_size=1)
    pool.test_signals.wait_finished([int(i) for i in ids])
    assert ORDER == ["top", "high", "mid", "low"]
    assert record.get_result(ids[2]).task.priority == 50


def test_run_after_defers_the_task(worker_pool):
    pool = worker_pool(threads=1)
    run_after = timezone.now() + timedelta(seconds=1.5)
    result = add.using(run_after=run_after).enqueue(1, 1)
    assert result.task.run_after == run_after
    for _ in range(5):
        assert add.get_result(result.id).status == TaskResultStatus.READY
        threading.Event().wait(0.2)
    done = finished(pool, result, timeout=10)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.started_at >= run_after


def test_queue_names_are_validated_against_the_backend_queues(db):
    with pytest.raises(InvalidTask, match="not valid"):
        add.using(queue_name="reports")
    with override_settings(TASKS={"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
                                              "QUEUES": ["default", "reports"]}}):
        result = add.using(queue_name="reports").enqueue(1, 2)
        assert add.get_result(result.id).task.queue_name == "reports"
        with pytest.raises(InvalidTask):
            add.using(queue_name="x" * 101)


@pytest.mark.skipif(django.VERSION[:2] == (6, 0), reason="Django 6.0's @task takes no extra arguments")
def test_task_arguments_reach_the_task_class_where_django_passes_them(db):
    declared = task(max_attempts=2, timeout_seconds=1)(_module_level_helper)
    assert isinstance(declared, QueueTask) and declared.max_attempts == 2
    assert declared.timeout_seconds == 1
    with pytest.raises(InvalidTask, match="timeout"):
        task(timeout_seconds=-1)(_module_level_helper)


def test_task_class_carries_retries_timeouts_and_an_idempotency_key(db):
    assert isinstance(always_fail, QueueTask)
    first = add.using(idempotency_key="sum:1:2", max_attempts=7).enqueue(1, 2)
    again = add.using(idempotency_key="sum:1:2", max_attempts=7).enqueue(1, 2)
    assert again.id == first.id
    assert add.get_result(first.id).task.max_attempts == 7
    with pytest.raises(InvalidTask, match="max_attempts"):
        add.using(max_attempts=0)
    with pytest.raises(InvalidTask, match="timeout"):
        add.using(timeout_seconds=-1)


def _module_level_helper():
    return None


def test_a_cancelled_task_is_failed_with_an_error_saying_so(db):
    result = add.enqueue(1, 2)
    services.cancel(int(result.id), actor="test")
    done = add.get_result(result.id)
    assert done.status == TaskResultStatus.FAILED
    [error] = done.errors
    assert error.exception_class_path == "django_pg_jobqueue.exceptions.JobCancelled"
    assert "cancelled" in error.traceback


def test_a_timed_out_async_task_is_cancelled_and_failed_with_a_timeout_error(worker_pool):
    pool = worker_pool(threads=1)
    result = async_sleep.enqueue(30)
    done = finished(pool, result, async_sleep, timeout=10)
    assert done.status == TaskResultStatus.FAILED
    assert done.errors[0].exception_class is TimeoutError
    # The coroutine was cancelled: its one executor runs the next task long before 30 s.
    assert finished(pool, add.enqueue(1, b=1), timeout=3).return_value == 2


def test_the_backend_reports_its_features_and_misconfiguration(db):
    assert (QueueBackend.supports_defer and QueueBackend.supports_async_task
            and QueueBackend.supports_get_result and QueueBackend.supports_priority)
    assert default_task_backend.check() == []
    bad = {"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend", "QUEUES": "default",
                       "OPTIONS": {"retries": 3}}}
    with override_settings(TASKS=bad):
        ids = {m.id for m in check_tasks()}  # the check Django registers for TASKS
        assert {"django_pg_jobqueue.E101", "django_pg_jobqueue.W101"} <= ids


# -- Django's Tasks contract: what its own backends do, ours does -----------------------------

@task
def echo(*args, **kwargs):
    return [args, kwargs]


def test_get_result_equals_the_result_enqueue_returned(db):
    for t in (echo, echo.using(priority=7, queue_name="default"),
              echo.using(run_after=timezone.now() + timedelta(hours=2)),
              always_fail.using(timeout_seconds=9), async_sleep):
        result = t.enqueue(1, "two", three=[3.5, None, True])
        again = default_task_backend.get_result(result.id)
        assert again == result, (again, result)
        assert again.task == t  # no max_attempts/timeout defaults filled in, run_after kept


def test_get_result_keeps_run_after_of_a_deferred_task(db):
    from zoneinfo import ZoneInfo

    at = timezone.now().astimezone(ZoneInfo("America/Chicago")) + timedelta(days=1)
    result = echo.using(run_after=at).enqueue()
    assert echo.get_result(result.id).task.run_after == at
    from django_pg_jobqueue.models import Job

    assert Job.objects.get(pk=int(result.id)).available_at == at


def test_args_postgresql_cannot_store_are_refused_naming_args_and_nothing_is_written(db):
    from django_pg_jobqueue.exceptions import InvalidJobArgument
    from django_pg_jobqueue.models import Job

    before = Job.objects.count()
    with pytest.raises(InvalidJobArgument, match=r"args\[0\]") as caught:
        echo.enqueue("a\x00b")
    assert caught.value.argument == "args"
    with pytest.raises(InvalidJobArgument, match=r"kwargs\['x'\]") as caught:
        echo.enqueue(x=float("nan"))
    assert caught.value.argument == "kwargs"
    assert Job.objects.count() == before


def _move_task(result_id, path):
    """What a deploy that removed or renamed a task's module leaves behind."""
    from django_pg_jobqueue.models import Job

    job = Job.objects.get(pk=int(result_id))
    # a task's job is typed by its task's path: the row names the missing path twice
    Job.objects.filter(pk=job.pk).update(type=path, payload={**job.payload, "task": path})


@pytest.mark.parametrize("path, exception_class_path", [
    ("demo.no_such_module.gone", "builtins.ModuleNotFoundError"),
    ("demo.handlers.no_such_task", "builtins.ImportError"),
])
def test_a_task_that_cannot_be_imported_keeps_its_import_error_and_stays_readable(
        db, path, exception_class_path):
    from django_pg_jobqueue.testing import drain

    result = always_fail.enqueue("x")  # max_attempts=2
    _move_task(result.id, path)
    readable = default_task_backend.get_result(result.id)  # no TaskResultDoesNotExist
    assert readable.status == TaskResultStatus.READY and readable.task.module_path == path
    drain(include_scheduled=True)
    done = default_task_backend.get_result(result.id)
    assert done.status == TaskResultStatus.FAILED and done.attempts == 2  # retried like any error
    assert [e.exception_class_path for e in done.errors] == [exception_class_path] * 2
    assert issubclass(done.errors[0].exception_class, ImportError)
    assert path.rpartition(".")[0] in done.errors[0].traceback
    with pytest.raises(ImportError, match="cannot load task"):
        done.task.call()


def test_a_task_imported_again_after_a_failed_import_runs(db):
    from django_pg_jobqueue.testing import drain

    result = add.using(max_attempts=3).enqueue(2, 3)
    _move_task(result.id, "demo.no_such_module.add")
    drain()
    assert default_task_backend.get_result(result.id).status == TaskResultStatus.READY  # retrying
    _move_task(result.id, add.module_path)  # the deploy caught up
    drain(include_scheduled=True)
    done = add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 5
    assert [e.exception_class_path for e in done.errors] == ["builtins.ModuleNotFoundError"]


def test_every_system_check_of_the_backend_carries_a_hint(db):
    from unittest import mock

    from django.apps import apps

    backend = QueueBackend("default", {"QUEUES": "not a list", "OPTIONS": {"x": 1}})
    with mock.patch.object(apps, "is_installed", return_value=False), \
            mock.patch("django_pg_jobqueue.tasks.backend.connections",
                       {"default": mock.Mock(vendor="sqlite")}):
        with override_settings(TASKS={"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
                                                  "QUEUES": "not a list", "OPTIONS": {"x": 1}}}):
            found = {m.id: m for m in backend.check()}
    assert set(found) == {"django_pg_jobqueue.E101", "django_pg_jobqueue.E102",
                          "django_pg_jobqueue.E103", "django_pg_jobqueue.W101"}
    for message in found.values():
        assert message.hint, message.id
    assert "INSTALLED_APPS" in found["django_pg_jobqueue.E103"].hint


def test_queue_names_outside_the_queue_pattern_are_invalid_tasks(db):
    with override_settings(TASKS={"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
                                              "QUEUES": []}}):
        with pytest.raises(InvalidTask, match="queue_name"):
            add.using(queue_name="bad queue!")
        assert add.using(queue_name="reports.eu-1").queue_name == "reports.eu-1"
