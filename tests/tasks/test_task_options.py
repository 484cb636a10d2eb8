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

MODULE = "tests.handlers.tasks_with_options"


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


# Django 5.2 without the `tasks` extra: a Python where `import django_tasks` fails. The app
# loads, @periodic decorates a handler and the catalogue lists job types all the same.
WITHOUT_THE_BACKPORT = """
import sys
sys.modules["django_tasks"] = None
import django
django.setup()
from django_pg_jobqueue import enqueue
from django_pg_jobqueue.catalogue import job_types
from django_pg_jobqueue.periodic import periodic
from django_pg_jobqueue.registry import handler, registry

@periodic("0 * * * *")
@handler("hourly_without_tasks")
def hourly(ctx, payload):
    pass

assert "hourly_without_tasks" in {t["name"] for t in job_types()}
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


KEYS_MODULE = "tests.handlers.tasks_with_keys"


@pytest.fixture
def keyed():
    sys.modules.pop(KEYS_MODULE, None)
    yield importlib.import_module(KEYS_MODULE)
    sys.modules.pop(KEYS_MODULE, None)


def _key_of(result) -> tuple[str | None, int | None]:
    job = Job.objects.get(pk=int(result.id))
    return job.concurrency_key, job.concurrency_key_limit


@pytest.mark.django_db
def test_a_tasks_concurrency_key_is_declared_once_or_made_from_its_arguments(keyed):
    assert _key_of(keyed.build_report.enqueue(1)) == ("reports", 2)
    assert _key_of(keyed.sync_customer.enqueue(42)) == ("customer:42", 1)
    assert _key_of(keyed.sync_customer.enqueue(customer=7, seconds=0)) == ("customer:7", 1)
    assert _key_of(keyed.plain.enqueue(1)) == (None, None)


@pytest.mark.django_db
def test_using_gives_one_enqueue_its_own_key_or_limit(keyed):
    assert _key_of(keyed.plain.using(concurrency_key="tenant:3", concurrency_key_limit=4)
                   .enqueue(1)) == ("tenant:3", 4)
    # .using()'s key wins over the declared one, with its own limit (default 1) ...
    assert _key_of(keyed.build_report.using(concurrency_key="urgent").enqueue(1)) == ("urgent", 1)
    # ... and a limit alone changes the declared key's limit.
    assert _key_of(keyed.build_report.using(concurrency_key_limit=5).enqueue(1)) == ("reports", 5)
    result = keyed.plain.using(concurrency_key="tenant:3").enqueue(1)
    assert keyed.plain.get_result(result.id).task == result.task  # the task as enqueued


@pytest.mark.parametrize(("kwargs", "argument", "error"), [
    ({"concurrency_key": ""}, "concurrency_key", InvalidJobArgument),
    ({"concurrency_key": "x" * 201}, "concurrency_key", InvalidJobArgument),
    ({"concurrency_key": 42}, "concurrency_key", JobArgumentTypeError),
    ({"concurrency_key": "a\x00b"}, "concurrency_key", InvalidJobArgument),
    ({"concurrency_key_limit": 2}, "concurrency_key_limit", InvalidJobArgument),
    ({"concurrency_key": "k", "concurrency_key_limit": 0}, "concurrency_key_limit",
     InvalidJobArgument),
    ({"concurrency_key": lambda n: "k", "concurrency_key_limit": "2"}, "concurrency_key_limit",
     JobArgumentTypeError),
])
def test_bad_task_concurrency_keys_are_refused_as_enqueue_refuses_them(kwargs, argument, error):
    from django_pg_jobqueue import enqueue

    with pytest.raises(error) as caught:
        task_options(**kwargs)
    assert caught.value.argument == argument
    if not callable(kwargs.get("concurrency_key")):  # enqueue() takes only a str
        with pytest.raises(error) as by_enqueue:
            enqueue("noop", **kwargs)
        assert (by_enqueue.value.argument, str(by_enqueue.value)) == (argument, str(caught.value))


@pytest.mark.django_db
def test_a_tasks_fairness_key_is_made_from_its_arguments_or_given_by_using(keyed):
    def fairness_key(result):
        return Job.objects.get(pk=int(result.id)).fairness_key

    assert fairness_key(keyed.tenant_export.enqueue("acme")) == "tenant:acme"
    assert fairness_key(keyed.tenant_export.using(fairness_key="tenant:vip").enqueue("x")) == (
        "tenant:vip")
    result = keyed.plain.using(fairness_key="tenant:b").enqueue(1)
    assert fairness_key(result) == "tenant:b"
    assert keyed.plain.get_result(result.id).task == result.task  # the task as enqueued
    assert fairness_key(keyed.plain.enqueue(1)) is None


@pytest.mark.django_db
def test_a_bad_task_fairness_key_is_refused_as_enqueue_refuses_it(keyed):
    from django_pg_jobqueue.tasks_compat import InvalidTask

    with pytest.raises(InvalidJobArgument) as caught:
        task_options(fairness_key=" ")
    assert caught.value.argument == "fairness_key"
    with pytest.raises(InvalidTask, match="fairness_key: must have 1 to 200 characters"):
        keyed.plain.using(fairness_key=" ").enqueue(1)
    with pytest.raises(InvalidJobArgument) as caught:
        keyed.tenant_export.enqueue("x" * 300)
    assert caught.value.argument == "fairness_key"
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_bad_key_from_using_or_from_the_tasks_function_is_refused_and_nothing_is_stored(keyed):
    from django_pg_jobqueue.tasks_compat import InvalidTask

    before = Job.objects.count()
    with pytest.raises(InvalidTask, match="concurrency_key: must have 1 to 200 characters"):
        keyed.plain.using(concurrency_key=" ").enqueue(1)
    with pytest.raises(InvalidTask, match="concurrency_key_limit: must be between 1 and 1000"):
        keyed.plain.using(concurrency_key="k", concurrency_key_limit=1001).enqueue(1)
    with pytest.raises(InvalidJobArgument) as caught:
        keyed.sync_customer.enqueue("x" * 300)
    assert caught.value.argument == "concurrency_key"
    assert Job.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_a_task_returning_a_value_nested_past_the_limit_fails_for_good_on_any_python():
    # Django's normalize_json and Python's json both recurse, to depths that differ between
    # versions; the queue's own limit (64 levels) decides, before either runs.
    from django_pg_jobqueue import testing

    tasks = fresh_tasks()
    fits = tasks.nested.enqueue(64)
    past = tasks.nested.enqueue(65)
    far_past = tasks.nested.enqueue(5000)
    testing.drain()
    assert Job.objects.get(pk=int(fits.id)).status == "succeeded"
    for result in (past, far_past):
        job = Job.objects.get(pk=int(result.id))
        assert (job.status, job.attempts) == ("failed", 1), job.last_error
        assert "nests deeper than 64 levels (MAX_JSON_DEPTH)" in job.last_error
