"""Hooks around handlers, from the settings: JOB_MIDDLEWARE wraps every handler call, in a
worker pool and in testing.drain alike; JOB_ERROR_HOOKS hear every failed attempt once, with
what follows it (a retry or the end): an error the handler raised, an unknown job type, a
result that cannot be stored, a transaction left open, a timeout, an expired lease."""
import logging
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_pg_jobqueue import services, testing
from django_pg_jobqueue.exceptions import PermanentError
from django_pg_jobqueue.models import Job
from tests.handlers import hygiene_handlers

CALLS: list = []
FAILURES: list = []
_lock = threading.Lock()
_heard = threading.Condition(_lock)  # notified with each failure a hook hears

MIDDLEWARE = ["tests.worker.test_middleware.outer", "tests.worker.test_middleware.inner"]
HOOKS = ["tests.worker.test_middleware.record_failure"]


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
    with _heard:
        FAILURES.append((job.id, job.attempt, type(exc).__name__, str(exc), outcome,
                         getattr(exc, "reason", None)))
        _heard.notify_all()


def _wait_heard(n: int, timeout: float) -> None:
    """Until the hooks heard `n` failures (woken by each)."""
    with _heard:
        assert _heard.wait_for(lambda: len(FAILURES) >= n, timeout), FAILURES


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


def _unstorable(ctx, payload):
    return {"not json": object()}


def _left_open_raw(ctx, payload):
    hygiene_handlers.leave_begin(ctx)


def _left_open_atomic(ctx, payload):
    hygiene_handlers.leave_atomic(ctx)


def _until_stopped(ctx, payload):
    ctx.wait(30)
    return {"late": True}


def _by_reason(failures) -> dict:
    """{(job id, attempt): (exception type, reason, outcome)}, asserting each attempt was
    heard once."""
    heard = {}
    for job_id, attempt, name, _message, outcome, reason in failures:
        assert (job_id, attempt) not in heard, f"job {job_id} attempt {attempt} heard twice"
        heard[job_id, attempt] = (name, reason, outcome)
    return heard


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
        pool = worker_pool(threads=2)
        pool.test_signals.wait_ended(ids, "succeeded", timeout=20)
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
        (boom.id, 1, "ValueError", "boom 1", "queued", None),
        (boom.id, 2, "ValueError", "boom 1", "failed", None),
        (permanent.id, 1, "PermanentError", "never again", "failed", None),
    ])
    assert Job.objects.get(pk=boom.pk).status == "failed"


@pytest.mark.django_db
@override_settings(JOB_ERROR_HOOKS=["tests.worker.test_middleware.broken_hook", *HOOKS])
def test_a_failing_error_hook_changes_nothing_about_the_job(custom_handler, caplog):
    custom_handler("mw_permanent", _permanent)
    job = services.enqueue("mw_permanent", {"n": 3})
    log = logging.getLogger("django_pg_jobqueue.middleware")  # the package's do not propagate
    log.addHandler(caplog.handler)
    try:
        testing.drain(["mw_permanent"])
    finally:
        log.removeHandler(caplog.handler)
    assert Job.objects.get(pk=job.pk).status == "failed"
    assert [f[0] for f in FAILURES] == [job.id]  # the next hook still ran
    assert "error hook" in caplog.text and "the hook itself fails" in caplog.text


@pytest.mark.django_db
def test_a_middleware_that_cannot_be_imported_is_an_error_naming_the_setting(custom_handler):
    custom_handler("mw_echo", _echo)
    services.enqueue("mw_echo", {"n": 1})
    with override_settings(JOB_MIDDLEWARE=["tests.worker.test_middleware.no_such_middleware"]):
        with pytest.raises(ImproperlyConfigured, match="JOB_MIDDLEWARE"):
            testing.drain(["mw_echo"], raise_errors=True)
    with override_settings(JOB_MIDDLEWARE="tests.worker.test_middleware.outer"):  # not a list
        with pytest.raises(ImproperlyConfigured, match="JOB_MIDDLEWARE"):
            from django_pg_jobqueue import conf

            conf.get()


@pytest.mark.django_db
@override_settings(JOB_ERROR_HOOKS=HOOKS, JOB_RETRY_BASE_SECONDS=0.0, JOB_RETRY_JITTER=0.0,
                   JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS=0)
def test_an_error_hook_hears_the_failures_no_handler_raised_in_drain(custom_handler):
    custom_handler("mw_echo", _echo)
    custom_handler("mw_unstorable", _unstorable)
    custom_handler("mw_left_open", _left_open_atomic, max_attempts=1)
    custom_handler("mw_crash", _echo, max_attempts=2)
    ok = services.enqueue("mw_echo", {"n": 1})
    unknown = services.enqueue("mw_echo", {"n": 2})
    Job.objects.filter(pk=unknown.pk).update(type="mw_no_such_handler")
    unstorable = services.enqueue("mw_unstorable", {})
    left_open = services.enqueue("mw_left_open", {})
    testing.drain()
    crashed = services.enqueue("mw_crash", {"n": 3})
    testing.crash_mid_handler(crashed)
    testing.expire_lease(crashed)
    assert testing.run_reaper() == {"queued": 1}
    assert testing.drain(["mw_crash"], include_scheduled=True).succeeded == 1
    assert _by_reason(FAILURES) == {
        (unknown.id, 1): ("AttemptFailed", "unknown_type", "failed"),
        (unstorable.id, 1): ("UnstorableResult", None, "failed"),
        (left_open.id, 1): ("AttemptFailed", "transaction_left_open", "failed"),
        (crashed.id, 1): ("AttemptFailed", "lease_expired", "queued"),
    }
    assert ok.id not in {f[0] for f in FAILURES}  # a success tells no hook
    message = {f[0]: f[3] for f in FAILURES}
    assert message[unknown.id] == Job.objects.get(pk=unknown.pk).last_error
    assert "lease expired" in message[crashed.id]


def test_an_error_hook_hears_every_failed_attempt_once_in_a_worker_pool(
        worker_pool, custom_handler):
    custom_handler("mw_boom", _boom, max_attempts=2)
    custom_handler("mw_unstorable", _unstorable)
    custom_handler("mw_left_open", _left_open_raw, max_attempts=1)
    custom_handler("mw_stubborn", _until_stopped, max_attempts=1)
    custom_handler("mw_echo", _echo, max_attempts=1)
    with override_settings(JOB_ERROR_HOOKS=HOOKS, JOB_UNKNOWN_TYPE_FAIL_AFTER_SECONDS=0):
        boom = services.enqueue("mw_boom", {"n": 1})
        unknown = services.enqueue("mw_echo", {"n": 2})
        Job.objects.filter(pk=unknown.pk).update(type="mw_no_such_handler")
        unstorable = services.enqueue("mw_unstorable", {})
        left_open = services.enqueue("mw_left_open", {})
        timed_out = services.enqueue("mw_stubborn", {}, timeout_seconds=1)
        expired = services.enqueue("mw_echo", {"n": 3})
        # claimed by a worker that then died: the pool's reaper takes it at lease expiry
        services.claim(worker_ids=["dead-worker"], job_ids=[expired.id])
        testing.expire_lease(expired)
        ids = [boom.id, unknown.id, unstorable.id, left_open.id, timed_out.id, expired.id]
        worker_pool(threads=3)
        # The hooks are told after each failure was written and signalled, in the writer's
        # thread (an executor's, the renewer's, the reaper's): the hook's own signal.
        _wait_heard(7, timeout=20)
        assert Job.objects.filter(id__in=ids, status="failed").count() == 6
    assert _by_reason(FAILURES) == {
        (boom.id, 1): ("ValueError", None, "queued"),
        (boom.id, 2): ("ValueError", None, "failed"),
        (unknown.id, 1): ("AttemptFailed", "unknown_type", "failed"),
        (unstorable.id, 1): ("UnstorableResult", None, "failed"),
        (left_open.id, 1): ("AttemptFailed", "transaction_left_open", "failed"),
        (timed_out.id, 1): ("AttemptFailed", "timeout", "failed"),
        (expired.id, 1): ("AttemptFailed", "lease_expired", "failed"),
    }
