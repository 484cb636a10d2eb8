"""`@task_options(...)`: the queue's options for a Django task, leaving the task importable and
runnable under any Tasks backend (Django's ImmediateBackend and DummyBackend ignore them)."""
import importlib
import os
import subprocess
import sys

import django
import pytest
from django.test import override_settings

from django_pg_jobqueue import task_options
from django_pg_jobqueue.exceptions import InvalidJobArgument, JobArgumentTypeError
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.tasks_compat import DUMMY_BACKEND, IMMEDIATE_BACKEND, TaskResultStatus

MODULE = "tests.tasks_with_options"


def fresh_tasks():
    """The tasks module imported anew, so its @task runs under the TASKS in force."""
    sys.modules.pop(MODULE, None)
    return importlib.import_module(MODULE)


@pytest.fixture(autouse=True)
def _forget_the_module():
    yield
    sys.modules.pop(MODULE, None)


def test_a_task_with_queue_options_imports_and_runs_under_the_immediate_backend():
    with override_settings(TASKS={"default": {"BACKEND": IMMEDIATE_BACKEND}}):
        tasks = fresh_tasks()
        result = tasks.send_welcome.enqueue(7)
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.return_value == {"welcomed": 7}
        assert tasks.double.enqueue(21).return_value == 42  # options below @task


def test_a_task_with_queue_options_imports_and_enqueues_under_the_dummy_backend():
    with override_settings(TASKS={"default": {"BACKEND": DUMMY_BACKEND}}):
        tasks = fresh_tasks()
        assert tasks.send_welcome.enqueue(7).status == TaskResultStatus.READY


@pytest.mark.django_db
def test_the_queue_backend_gives_each_enqueue_the_declared_attempts_and_timeout():
    tasks = fresh_tasks()  # the suite's TASKS: QueueBackend
    result = tasks.send_welcome.enqueue(7)
    job = Job.objects.get(pk=int(result.id))
    assert (job.max_attempts, job.timeout_seconds) == (5, 30)
    below = Job.objects.get(pk=int(tasks.double.enqueue(1).id))
    assert below.max_attempts == 2
    # .using(...) still wins for one enqueue; the result's task is the task as enqueued.
    once = tasks.send_welcome.using(max_attempts=9).enqueue(8)
    assert Job.objects.get(pk=int(once.id)).max_attempts == 9
    assert tasks.send_welcome.get_result(result.id).task == result.task


@pytest.mark.parametrize(("kwargs", "argument", "error"), [
    ({"max_attempts": 0}, "max_attempts", InvalidJobArgument),
    ({"max_attempts": "5"}, "max_attempts", JobArgumentTypeError),
    ({"timeout_seconds": 1.5}, "timeout_seconds", JobArgumentTypeError),
    ({"timeout_seconds": True}, "timeout_seconds", JobArgumentTypeError),
    ({"timeout_seconds": 10**9}, "timeout_seconds", InvalidJobArgument),
])
def test_bad_task_options_are_refused_naming_the_argument(kwargs, argument, error):
    with pytest.raises(error) as caught:
        task_options(**kwargs)
    assert caught.value.argument == argument


# Django 5.2 without the `tasks` extra: a Python where `import django_tasks` fails.
WITHOUT_THE_BACKPORT = """
import sys
sys.modules["django_tasks"] = None
import django
django.setup()
from django_pg_jobqueue import enqueue
from django_pg_jobqueue.registry import registry
print("loaded", "django_task" in registry)
"""


@pytest.mark.skipif(django.VERSION >= (6, 0), reason="Django 6 has django.tasks built in")
def test_on_django_5_2_the_app_loads_without_the_django_tasks_backport():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_THE_BACKPORT], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["loaded", "False"]


@pytest.mark.django_db(transaction=True)
def test_a_tasks_retry_policy_sets_its_delays_and_what_it_gives_up_on():
    from django_pg_jobqueue import testing
    from django_pg_jobqueue.models import JobEvent

    tasks = fresh_tasks()
    retried = Job.objects.get(pk=int(tasks.flaky.enqueue("value").id))
    given_up = Job.objects.get(pk=int(tasks.flaky.enqueue("key").id))
    testing.drain(include_scheduled=True)
    delays = [e.data["delay_seconds"] for e in
              JobEvent.objects.filter(job_id=retried.pk, kind="retry_scheduled").order_by("id")]
    assert delays == [0.25, 0.25]
    given_up.refresh_from_db()
    assert (given_up.status, given_up.attempts) == ("failed", 1)


def test_a_bad_task_retry_policy_is_refused_naming_the_argument():
    with pytest.raises(InvalidJobArgument) as refused:
        task_options(retry_policy={"delays_seconds": "soon"})
    assert refused.value.argument == "retry_policy"
