# ruff: noqa: B018  (Django's tests read properties for their exceptions: kept as written)
"""Django's own Tasks tests, run against QueueBackend: it keeps the contract Django's backends keep.

Adapted from Django 6.1.3's `tests/tasks/` (django-6.1.3.tar.gz from PyPI, files tasks.py,
test_tasks.py, test_dummy_backend.py, test_immediate_backend.py; BSD-3-Clause, (c) Django
Software Foundation and contributors). Only the tests that apply to a database backend are
kept, and only their plumbing was changed:

- the backend: TASKS points at `django_pg_jobqueue.tasks_backend.QueueBackend` instead of
  DummyBackend / ImmediateBackend; a second QueueBackend alias with QUEUES = [] stands in for
  the "immediate" alias where a test needs a backend accepting any queue;
- the store: `default_task_backend.results` (DummyBackend's list) becomes `get_result(id)`;
  SimpleTestCase becomes TestCase (the results live in PostgreSQL);
- the worker step: ImmediateBackend runs a task inside `enqueue`; here `run_queued()` runs
  the queued jobs through `django_pg_jobqueue.testing.drain` after it, and the result is
  read back with `refresh()`;
- the commit: `task_enqueued` (and so its "enqueued" log line) is sent when the enqueueing
  transaction commits, so those tests run `captureOnCommitCallbacks(execute=True)`;
- the tasks module is this module (Django's `tasks.tasks`), and its `test_context` task is
  named `check_context` so that pytest does not take it for a test.

Left out, as not about a database backend: DummyBackend.clear, ImmediateBackend's refusal
of run_after and get_result, KeyboardInterrupt propagating out of an in-process enqueue,
the custom-backend and missing-backend plumbing, and Task pickling of other backends.
"""
import dataclasses
import pickle
from datetime import datetime
from unittest import mock, skipIf

import django
from django.db import transaction
from django.test import TestCase, TransactionTestCase, override_settings
from django.utils import timezone
from django.utils.module_loading import import_string

from django_pg_jobqueue.tasks_backend import QueueBackend
from django_pg_jobqueue.tasks_compat import (
    DEFAULT_TASK_QUEUE_NAME,
    IS_BACKPORT,
    LOGGER_NAME,
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    InvalidTask,
    InvalidTaskBackend,
    Task,
    TaskContext,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
    task,
    task_backends,
)
from django_pg_jobqueue.testing import drain

BACKEND = "django_pg_jobqueue.tasks_backend.QueueBackend"
# Where Django 6.0 and the django-tasks backport (Django 5.2) behave otherwise than 6.1's
# framework, which these tests come from; they are about the framework, not about a backend.
BEFORE_6_1 = IS_BACKPORT or django.VERSION < (6, 1)
ASYNC_REFUSED = f"Backend does not support async {'tasks' if IS_BACKPORT else 'Tasks'}."
BACKPORT_TASK_PICKLES_NOT = skipIf(BEFORE_6_1, "Task has no __reduce__ before Django 6.1")
TASKS = {
    "default": {"BACKEND": BACKEND, "QUEUES": ["default", "queue_1"]},
    "any_queue": {"BACKEND": BACKEND, "QUEUES": []},
    "missing": {"BACKEND": "does.not.exist"},
}


def run_queued():
    """The worker step: run every queued job now, as a worker would."""
    return drain(include_scheduled=True)


# -- tasks.py ---------------------------------------------------------------------------------
with override_settings(TASKS=TASKS):

    @task()
    def noop_task(*args, **kwargs):
        return None

    @task
    def noop_task_from_bare_decorator(*args, **kwargs):
        return None

    @task()
    async def noop_task_async(*args, **kwargs):
        return None

    @task()
    def calculate_meaning_of_life():
        return 42

    @task()
    def failing_task_value_error():
        raise ValueError("This Task failed due to ValueError")

    @task()
    def failing_task_system_exit():
        raise SystemExit("This Task failed due to SystemExit")

    @task()
    def complex_exception():
        raise ValueError(ValueError("This task failed"))

    @task()
    def complex_return_value():
        # Return something which isn't JSON serializable nor picklable.
        return lambda: True

    @task(takes_context=True)
    def get_task_id(context):
        return context.task_result.id

    @task(takes_context=True)
    def check_context(context, attempt):
        assert isinstance(context, TaskContext)
        assert context.attempt == attempt


MODULE = __name__


# -- test_tasks.py ----------------------------------------------------------------------------
@override_settings(TASKS=TASKS, USE_TZ=True)
class TaskTestCase(TestCase):
    def test_using_correct_backend(self):
        self.assertEqual(default_task_backend, task_backends["default"])
        self.assertIsInstance(task_backends["default"], QueueBackend)

    def test_task_decorator(self):
        self.assertIsInstance(noop_task, Task)
        self.assertIsInstance(noop_task_async, Task)
        self.assertIsInstance(noop_task_from_bare_decorator, Task)

    def test_enqueue_task(self):
        result = noop_task.enqueue()

        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual(result.task, noop_task)
        self.assertEqual(result.args, [])
        self.assertEqual(result.kwargs, {})

        self.assertEqual(default_task_backend.get_result(result.id), result)

    async def test_enqueue_task_async(self):
        result = await noop_task.aenqueue()

        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual(result.task, noop_task)
        self.assertEqual(result.args, [])
        self.assertEqual(result.kwargs, {})

        self.assertEqual(await default_task_backend.aget_result(result.id), result)

    def test_enqueue_with_invalid_argument(self):
        with self.assertRaisesMessage(TypeError, "Unsupported type"):
            noop_task.enqueue(datetime.now())

    async def test_aenqueue_with_invalid_argument(self):
        with self.assertRaisesMessage(TypeError, "Unsupported type"):
            await noop_task.aenqueue(datetime.now())

    def test_using_priority(self):
        self.assertEqual(noop_task.priority, 0)
        self.assertEqual(noop_task.using(priority=1).priority, 1)
        self.assertEqual(noop_task.priority, 0)

    def test_using_queue_name(self):
        self.assertEqual(noop_task.queue_name, DEFAULT_TASK_QUEUE_NAME)
        self.assertEqual(noop_task.using(queue_name="queue_1").queue_name, "queue_1")
        self.assertEqual(noop_task.queue_name, DEFAULT_TASK_QUEUE_NAME)

    def test_using_run_after(self):
        now = timezone.now()

        self.assertIsNone(noop_task.run_after)
        self.assertEqual(noop_task.using(run_after=now).run_after, now)
        self.assertIsNone(noop_task.run_after)

    def test_using_unknown_backend(self):
        self.assertEqual(noop_task.backend, "default")

        with self.assertRaisesMessage(InvalidTaskBackend, "The connection 'unknown' doesn't exist."):
            noop_task.using(backend="unknown")

    def test_using_missing_backend(self):
        self.assertEqual(noop_task.backend, "default")

        with self.assertRaisesMessage(
            InvalidTaskBackend, "Could not find backend 'does.not.exist': No module named 'does'",
        ):
            noop_task.using(backend="missing")

    def test_using_creates_new_instance(self):
        new_task = noop_task.using()

        self.assertEqual(new_task, noop_task)
        self.assertIsNot(new_task, noop_task)

    def test_chained_using(self):
        now = timezone.now()

        run_after_task = noop_task.using(run_after=now)
        self.assertEqual(run_after_task.run_after, now)

        priority_task = run_after_task.using(priority=10)
        self.assertEqual(priority_task.priority, 10)
        self.assertEqual(priority_task.run_after, now)

        self.assertEqual(run_after_task.priority, 0)

    async def test_refresh_result(self):
        result = await noop_task.aenqueue()

        original_result = dataclasses.asdict(result)

        await result.arefresh()  # Django calls result.refresh() here too: sync, as below

        self.assertEqual(dataclasses.asdict(result), original_result)

    def test_refresh_result_sync(self):
        result = noop_task.enqueue()
        original_result = dataclasses.asdict(result)
        result.refresh()
        self.assertEqual(dataclasses.asdict(result), original_result)

    def test_naive_datetime(self):
        with self.assertRaisesMessage(InvalidTask, "run_after must be an aware datetime."):
            noop_task.using(run_after=datetime.now())

    def test_invalid_priority(self):
        message = (f"priority must be a whole number between {TASK_MIN_PRIORITY} and "
                   f"{TASK_MAX_PRIORITY}.")
        for priority in (-101, 101, 3.1):
            with self.assertRaisesMessage(InvalidTask, message):
                noop_task.using(priority=priority)

        noop_task.using(priority=100)
        noop_task.using(priority=-100)
        noop_task.using(priority=0)

    def test_unknown_queue_name(self):
        with self.assertRaisesMessage(InvalidTask, "Queue 'queue-2' is not valid for backend."):
            noop_task.using(queue_name="queue-2")
        # Validation is bypassed when the backend QUEUES is an empty list.
        self.assertEqual(
            noop_task.using(queue_name="queue-2", backend="any_queue").queue_name, "queue-2")

    def test_call_task(self):
        self.assertEqual(calculate_meaning_of_life.call(), 42)

    async def test_call_task_async(self):
        self.assertEqual(await calculate_meaning_of_life.acall(), 42)

    async def test_call_async_task(self):
        self.assertIsNone(await noop_task_async.acall())

    def test_call_async_task_sync(self):
        self.assertIsNone(noop_task_async.call())

    def test_get_result(self):
        result = default_task_backend.enqueue(noop_task, (), {})

        new_result = noop_task.get_result(result.id)

        self.assertEqual(result, new_result)

    async def test_get_result_async(self):
        result = await default_task_backend.aenqueue(noop_task, (), {})

        new_result = await noop_task.aget_result(result.id)

        self.assertEqual(result, new_result)

    async def test_get_missing_result(self):
        with self.assertRaises(TaskResultDoesNotExist):
            await noop_task.aget_result("123")

    def test_get_missing_result_sync(self):
        with self.assertRaises(TaskResultDoesNotExist):
            noop_task.get_result("123")

    def test_get_incorrect_result(self):
        result = default_task_backend.enqueue(noop_task_async, (), {})
        with self.assertRaisesMessage(TaskResultMismatch, "Task does not match"):
            noop_task.get_result(result.id)

    async def test_get_incorrect_result_async(self):
        result = await default_task_backend.aenqueue(noop_task_async, (), {})
        with self.assertRaisesMessage(TaskResultMismatch, "Task does not match"):
            await noop_task.aget_result(result.id)

    def test_invalid_function(self):
        for invalid_function in [any, self.test_invalid_function]:
            with self.subTest(invalid_function):
                with self.assertRaisesMessage(
                    InvalidTask, "Task function must be defined at a module level.",
                ):
                    task()(invalid_function)

    def test_get_backend(self):
        self.assertEqual(noop_task.backend, "default")
        self.assertIsInstance(noop_task.get_backend(), QueueBackend)

        other_task = noop_task.using(backend="any_queue")
        self.assertEqual(other_task.backend, "any_queue")
        self.assertIs(other_task.get_backend(), task_backends["any_queue"])

    def test_name(self):
        self.assertEqual(noop_task.name, "noop_task")
        self.assertEqual(noop_task_async.name, "noop_task_async")

    def test_module_path(self):
        self.assertEqual(noop_task.module_path, f"{MODULE}.noop_task")
        self.assertEqual(noop_task_async.module_path, f"{MODULE}.noop_task_async")

        self.assertIs(import_string(noop_task.module_path), noop_task)
        self.assertIs(import_string(noop_task_async.module_path), noop_task_async)

    @BACKPORT_TASK_PICKLES_NOT
    def test_pickle_task(self):
        unpickled_task = pickle.loads(pickle.dumps(noop_task))

        self.assertEqual(unpickled_task, noop_task)

    @BACKPORT_TASK_PICKLES_NOT
    def test_pickle_task_result(self):
        result = noop_task.enqueue()
        unpickled_result = pickle.loads(pickle.dumps(result))

        self.assertEqual(unpickled_result, result)

    @override_settings(TASKS={})
    def test_no_backends(self):
        with self.assertRaises(InvalidTaskBackend):
            noop_task.enqueue()

    def test_task_error_invalid_exception(self):
        result = failing_task_value_error.enqueue()
        with self.assertLogs(LOGGER_NAME):
            run_queued()
        result.refresh()

        self.assertEqual(len(result.errors), 3)  # max_attempts: JOB_DEFAULT_MAX_ATTEMPTS

        object.__setattr__(result.errors[0], "exception_class_path", "subprocess.run")

        with self.assertRaisesMessage(
            ValueError, "'subprocess.run' does not reference a valid exception."
        ):
            result.errors[0].exception_class

    def test_task_error_unknown_module(self):
        result = failing_task_value_error.enqueue()
        with self.assertLogs(LOGGER_NAME):
            run_queued()
        result.refresh()

        object.__setattr__(result.errors[0], "exception_class_path", "does.not.exist")

        with self.assertRaises(ImportError):
            result.errors[0].exception_class

    def test_takes_context_without_taking_context(self):
        with self.assertRaisesMessage(
            InvalidTask, "Task takes context but does not have a first argument of 'context'.",
        ):
            task(takes_context=True)(calculate_meaning_of_life.func)

    @skipIf(BEFORE_6_1, "@task refuses run_after otherwise before Django 6.1")
    def test_run_after_in_decorator(self):
        msg = "run_after cannot be defined statically with the @task decorator."
        with self.assertRaisesMessage(TypeError, msg):
            task(run_after=timezone.now())(calculate_meaning_of_life.func)


# -- test_dummy_backend.py: a stored task before any worker ran it ----------------------------
@override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": []}})
class StoredTaskTestCase(TestCase):
    def test_using_correct_backend(self):
        self.assertEqual(default_task_backend, task_backends["default"])
        self.assertIsInstance(task_backends["default"], QueueBackend)
        self.assertEqual(default_task_backend.alias, "default")
        self.assertEqual(default_task_backend.options, {})

    def test_enqueue_task(self):
        for t in [noop_task, noop_task_async]:
            with self.subTest(t):
                result = t.enqueue(1, two=3)

                self.assertEqual(result.status, TaskResultStatus.READY)
                self.assertIs(result.is_finished, False)
                self.assertIsNone(result.started_at)
                self.assertIsNone(result.last_attempted_at)
                self.assertIsNone(result.finished_at)
                with self.assertRaisesMessage(ValueError, "Task has not finished yet"):
                    result.return_value
                self.assertEqual(result.task, t)
                self.assertEqual(result.args, [1])
                self.assertEqual(result.kwargs, {"two": 3})
                self.assertEqual(result.attempts, 0)

                self.assertEqual(default_task_backend.get_result(result.id), result)

    async def test_enqueue_task_async(self):
        for t in [noop_task, noop_task_async]:
            with self.subTest(t):
                result = await t.aenqueue()

                self.assertEqual(result.status, TaskResultStatus.READY)
                self.assertIs(result.is_finished, False)
                self.assertIsNone(result.started_at)
                self.assertIsNone(result.last_attempted_at)
                self.assertIsNone(result.finished_at)
                with self.assertRaisesMessage(ValueError, "Task has not finished yet"):
                    result.return_value
                self.assertEqual(result.task, t)
                self.assertEqual(result.args, [])
                self.assertEqual(result.kwargs, {})
                self.assertEqual(result.attempts, 0)

                self.assertEqual(await default_task_backend.aget_result(result.id), result)

    def test_get_result(self):
        result = default_task_backend.enqueue(noop_task, (), {})

        new_result = default_task_backend.get_result(result.id)

        self.assertEqual(result, new_result)

    async def test_get_result_async(self):
        result = await default_task_backend.aenqueue(noop_task, (), {})

        new_result = await default_task_backend.aget_result(result.id)

        self.assertEqual(result, new_result)

    def test_refresh_result(self):
        result = default_task_backend.enqueue(calculate_meaning_of_life, (), {})

        run_queued()  # DummyBackend sets the stored result's status by hand here

        self.assertEqual(result.status, TaskResultStatus.READY)
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)

    async def test_refresh_result_async(self):
        from asgiref.sync import sync_to_async

        result = await default_task_backend.aenqueue(calculate_meaning_of_life, (), {})

        await sync_to_async(run_queued)()

        self.assertEqual(result.status, TaskResultStatus.READY)
        await result.arefresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)

    async def test_get_missing_result(self):
        with self.assertRaises(TaskResultDoesNotExist):
            await default_task_backend.aget_result("123")

    def test_enqueue_logs(self):
        with self.assertLogs(LOGGER_NAME, level="DEBUG") as captured_logs, \
                self.captureOnCommitCallbacks(execute=True):
            result = noop_task.enqueue()

        self.assertEqual(len(captured_logs.output), 1)
        self.assertIn("enqueued", captured_logs.output[0])
        self.assertIn(result.id, captured_logs.output[0])

    def test_errors(self):
        result = noop_task.enqueue()
        self.assertEqual(result.errors, [])

    def test_validate_disallowed_async_task(self):
        with mock.patch.multiple(default_task_backend, supports_async_task=False):
            with self.assertRaisesMessage(InvalidTask, ASYNC_REFUSED):
                default_task_backend.validate_task(noop_task_async)

    def test_check(self):
        errors = list(default_task_backend.check())
        self.assertEqual(len(errors), 0, errors)

    def test_takes_context(self):
        result = get_task_id.enqueue()
        self.assertEqual(result.status, TaskResultStatus.READY)

    def test_validate_on_enqueue(self):
        task_with_custom_queue_name = noop_task.using(queue_name="unknown_queue")

        with override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": ["queue-1"]}}):
            with self.assertRaisesMessage(InvalidTask, "Queue 'unknown_queue' is not valid for backend"):
                task_with_custom_queue_name.enqueue()

    async def test_validate_on_aenqueue(self):
        task_with_custom_queue_name = noop_task.using(queue_name="unknown_queue")

        with override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": ["queue-1"]}}):
            with self.assertRaisesMessage(InvalidTask, "Queue 'unknown_queue' is not valid for backend"):
                await task_with_custom_queue_name.aenqueue()


class StoredTaskTransactionTestCase(TransactionTestCase):
    @override_settings(TASKS={"default": {"BACKEND": BACKEND}})
    def test_doesnt_wait_until_transaction_commit_by_default(self):
        # DummyBackend stores the result at once; this backend writes it in the caller's
        # transaction: readable inside it at once, and kept once it commits.
        with transaction.atomic():
            result = noop_task.enqueue()

            self.assertIsNotNone(result.enqueued_at)

            self.assertEqual(default_task_backend.get_result(result.id), result)

        self.assertEqual(default_task_backend.get_result(result.id), result)


# -- test_immediate_backend.py: the same tasks, once the worker step ran them -----------------
@override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": []}})
class RunTaskTestCase(TestCase):
    def enqueue_and_run(self, t, *args, **kwargs):
        result = t.enqueue(*args, **kwargs)
        run_queued()
        result.refresh()
        return result

    def test_enqueue_task(self):
        for t in [noop_task, noop_task_async]:
            with self.subTest(t):
                result = self.enqueue_and_run(t, 1, two=3)

                self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
                self.assertIs(result.is_finished, True)
                self.assertIsNotNone(result.started_at)
                self.assertIsNotNone(result.last_attempted_at)
                self.assertIsNotNone(result.finished_at)
                self.assertGreaterEqual(result.started_at, result.enqueued_at)
                self.assertGreaterEqual(result.finished_at, result.started_at)
                self.assertIsNone(result.return_value)
                self.assertEqual(result.task, t)
                self.assertEqual(result.args, [1])
                self.assertEqual(result.kwargs, {"two": 3})
                self.assertEqual(result.attempts, 1)

    def test_catches_exception(self):
        test_data = [
            (failing_task_value_error, ValueError, "This Task failed due to ValueError"),
            (failing_task_system_exit, SystemExit, "This Task failed due to SystemExit"),
        ]
        for t, exception, message in test_data:
            with (
                self.subTest(t),
                self.assertLogs(LOGGER_NAME, level="ERROR") as captured_logs,
            ):
                # One attempt, as ImmediateBackend makes: this backend retries otherwise.
                result = self.enqueue_and_run(t.using(max_attempts=1))

                self.assertEqual(len(captured_logs.output), 1)
                self.assertIn(message, captured_logs.output[0])

                self.assertEqual(result.status, TaskResultStatus.FAILED)
                with self.assertRaisesMessage(ValueError, "Task failed"):
                    result.return_value
                self.assertIs(result.is_finished, True)
                self.assertIsNotNone(result.started_at)
                self.assertIsNotNone(result.last_attempted_at)
                self.assertIsNotNone(result.finished_at)
                self.assertGreaterEqual(result.started_at, result.enqueued_at)
                self.assertGreaterEqual(result.finished_at, result.started_at)
                self.assertEqual(result.errors[0].exception_class, exception)
                traceback = result.errors[0].traceback
                self.assertIs(
                    traceback and traceback.endswith(f"{exception.__name__}: {message}\n"),
                    True,
                    traceback,
                )
                self.assertEqual(result.task, t.using(max_attempts=1))
                self.assertEqual(result.args, [])
                self.assertEqual(result.kwargs, {})

    def test_complex_exception(self):
        with self.assertLogs(LOGGER_NAME, level="ERROR"):
            result = self.enqueue_and_run(complex_exception.using(max_attempts=1))

        self.assertEqual(result.status, TaskResultStatus.FAILED)
        with self.assertRaisesMessage(ValueError, "Task failed"):
            result.return_value
        self.assertIsNotNone(result.started_at)
        self.assertIsNotNone(result.last_attempted_at)
        self.assertIsNotNone(result.finished_at)
        self.assertGreaterEqual(result.started_at, result.enqueued_at)
        self.assertGreaterEqual(result.finished_at, result.started_at)

        self.assertIsNone(result._return_value)
        self.assertEqual(result.errors[0].exception_class, ValueError)
        self.assertIn('ValueError(ValueError("This task failed"))', result.errors[0].traceback)

        self.assertEqual(result.task, complex_exception.using(max_attempts=1))
        self.assertEqual(result.args, [])
        self.assertEqual(result.kwargs, {})

    def test_complex_return_value(self):
        with self.assertLogs(LOGGER_NAME, level="ERROR"):
            result = self.enqueue_and_run(complex_return_value)

        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIsNotNone(result.started_at)
        self.assertIsNotNone(result.last_attempted_at)
        self.assertIsNotNone(result.finished_at)
        self.assertGreaterEqual(result.started_at, result.enqueued_at)
        self.assertGreaterEqual(result.finished_at, result.started_at)
        self.assertIsNone(result._return_value)
        self.assertEqual(result.errors[0].exception_class, TypeError)
        self.assertIn("Unsupported type", result.errors[0].traceback)

    def test_result(self):
        result = self.enqueue_and_run(calculate_meaning_of_life)

        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 42)

    async def test_result_async(self):
        from asgiref.sync import sync_to_async

        result = await default_task_backend.aenqueue(calculate_meaning_of_life, [], {})
        await sync_to_async(run_queued)()
        await result.arefresh()

        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 42)

    def test_enqueue_logs(self):
        with self.assertLogs(LOGGER_NAME, level="DEBUG") as captured_logs:
            with self.captureOnCommitCallbacks(execute=True):
                result = noop_task.enqueue()
            run_queued()

        self.assertEqual(len(captured_logs.output), 3)

        self.assertIn("enqueued", captured_logs.output[0])
        self.assertIn(result.id, captured_logs.output[0])

        self.assertIn("state=RUNNING", captured_logs.output[1])
        self.assertIn(result.id, captured_logs.output[1])

        self.assertIn("state=SUCCESSFUL", captured_logs.output[2])
        self.assertIn(result.id, captured_logs.output[2])

    def test_failed_logs(self):
        with self.assertLogs(LOGGER_NAME, level="DEBUG") as captured_logs:
            with self.captureOnCommitCallbacks(execute=True):
                result = failing_task_value_error.using(max_attempts=1).enqueue()
            run_queued()

        self.assertEqual(len(captured_logs.output), 3)
        self.assertIn("state=RUNNING", captured_logs.output[1])
        self.assertIn(result.id, captured_logs.output[1])

        self.assertIn("state=FAILED", captured_logs.output[2])
        self.assertIn(result.id, captured_logs.output[2])

    def test_successful_task_no_none_in_logs(self):
        with self.assertLogs(LOGGER_NAME, level="DEBUG") as captured_logs:
            result = self.enqueue_and_run(noop_task)

        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)

        for log_output in captured_logs.output:
            self.assertNotIn("None", log_output)

    def test_takes_context(self):
        result = self.enqueue_and_run(get_task_id)

        self.assertEqual(result.return_value, result.id)

    def test_context(self):
        result = self.enqueue_and_run(check_context, 1)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)

    def test_validate_on_enqueue(self):
        task_with_custom_queue_name = noop_task.using(queue_name="unknown_queue")

        with override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": ["queue-1"]}}):
            with self.assertRaisesMessage(InvalidTask, "Queue 'unknown_queue' is not valid for backend"):
                task_with_custom_queue_name.enqueue()
