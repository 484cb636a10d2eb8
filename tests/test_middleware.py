"""Hooks around handlers, from the settings: JOB_MIDDLEWARE wraps every handler call, in a
worker pool and in testing.drain alike; JOB_ERROR_HOOKS hear every failure a handler raises,
with what follows it (a retry or the end)."""
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_pg_jobqueue import services, testing
from django_pg_jobqueue.exceptions import PermanentError
from django_pg_jobqueue.models import Job
from tests.utils import wait_for

CALLS: list = []
FAILURES: list = []
_lock = threading.Lock()

MIDDLEWARE = ["tests.test_middleware.outer", "tests.test_middleware.inner"]
HOOKS = ["tests.test_middleware.record_failure"]


def outer(call_next, ctx, job):
    with _lock:
        CALLS.append(("outer before", job.id))
    result = call_next()
    with _lock:
        CALLS.append(("outer after", job.id))
    return {**result, "wrapped": True} if isinstance(result, dict) else result


def inner(call_next, ctx, job):
    with _lock:
        CALLS.append(("inner", job.id, ctx.job_id, job.attempt))
    return call_next()


def record_failure(job, exc, outcome):
    with _lock:
        FAILURES.append((job.id, job.attempt, type(exc).__name__, str(exc), outcome))


def broken_hook(job, exc, outcome):
    raise RuntimeError("the hook itself fails")


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    FAILURES.clear()


def _echo(ctx, payload):
    return {"echo": payload["n"]}


def _boom(ctx, payload):
    raise ValueError(f"boom {payload['n']}")


def _permanent(ctx, payload):
    raise PermanentError("never again")


@pytest.mark.django_db
@override_settings(JOB_MIDDLEWARE=MIDDLEWARE)
def test_middleware_from_the_settings_wraps_each_handler_call_in_drain(custom_handler):
    custom_handler("mw_echo", _echo)
    job = services.enqueue("mw_echo", {"n": 7})
    assert testing.drain(["mw_echo"]).succeeded == 1
    assert CALLS == [("outer before", job.id), ("inner", job.id, job.id, 1),
                     ("outer after", job.id)]
    job.refresh_from_db()
    assert job.result == {"echo": 7, "wrapped": True}  # a middleware may change the result


def test_middleware_from_the_settings_wraps_each_handler_call_in_a_worker_pool(
        worker_pool, custom_handler):
    custom_handler("mw_echo", _echo)
    with override_settings(JOB_MIDDLEWARE=MIDDLEWARE):
        ids = [services.enqueue("mw_echo", {"n": n}).id for n in range(5)]
        worker_pool(threads=2)
        wait_for(lambda: Job.objects.filter(id__in=ids, status="succeeded").count() == 5,
                 timeout=20, message="5 jobs to succeed")
    assert sorted(c[1] for c in CALLS if c[0] == "inner") == ids
    assert sorted(c[1] for c in CALLS if c[0] == "outer after") == ids
    assert all(j.result["wrapped"] for j in Job.objects.filter(id__in=ids))


@pytest.mark.django_db
@override_settings(JOB_ERROR_HOOKS=HOOKS, JOB_RETRY_BASE_SECONDS=0.0, JOB_RETRY_JITTER=0.0)
def test_an_error_hook_sees_each_failure_and_whether_a_retry_follows(custom_handler):
    custom_handler("mw_boom", _boom, max_attempts=2)
    custom_handler("mw_permanent", _permanent, max_attempts=5)
    boom = services.enqueue("mw_boom", {"n": 1})
    permanent = services.enqueue("mw_permanent", {"n": 2})
    testing.drain(["mw_boom", "mw_permanent"], include_scheduled=True)
    assert sorted(FAILURES) == sorted([
        (boom.id, 1, "ValueError", "boom 1", "queued"),
        (boom.id, 2, "ValueError", "boom 1", "failed"),
        (permanent.id, 1, "PermanentError", "never again", "failed"),
    ])
    assert Job.objects.get(pk=boom.pk).status == "failed"


@pytest.mark.django_db
@override_settings(JOB_ERROR_HOOKS=["tests.test_middleware.broken_hook", *HOOKS])
def test_a_failing_error_hook_changes_nothing_about_the_job(custom_handler):
    custom_handler("mw_permanent", _permanent)
    job = services.enqueue("mw_permanent", {"n": 3})
    testing.drain(["mw_permanent"])
    assert Job.objects.get(pk=job.pk).status == "failed"
    assert [f[0] for f in FAILURES] == [job.id]  # the next hook still ran


@pytest.mark.django_db
def test_a_middleware_that_cannot_be_imported_is_an_error_naming_the_setting(custom_handler):
    custom_handler("mw_echo", _echo)
    services.enqueue("mw_echo", {"n": 1})
    with override_settings(JOB_MIDDLEWARE=["tests.test_middleware.no_such_middleware"]):
        with pytest.raises(ImproperlyConfigured, match="JOB_MIDDLEWARE"):
            testing.drain(["mw_echo"], raise_errors=True)
    with override_settings(JOB_MIDDLEWARE="tests.test_middleware.outer"):  # not a list
        with pytest.raises(ImproperlyConfigured, match="JOB_MIDDLEWARE"):
            from django_pg_jobqueue import conf

            conf.get()
