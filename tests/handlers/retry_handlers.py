"""Handlers with retry policies, for tests/services/test_retry_policies.py and the rolling-deploy test.

Worker subprocesses import this module through JOB_EXTRA_HANDLER_MODULES; the test process
imports it to enqueue (enqueue() needs the type registered)."""
from django_pg_jobqueue import RetryPolicy
from django_pg_jobqueue.registry import handler

DELAYS = [1.0, 2.0, 3.0]


class CardDeclined(Exception):
    """Retrying cannot help: the retry policy gives up on it."""


@handler("retry_listed_delays", max_attempts=len(DELAYS) + 1,
         retry_policy=RetryPolicy(delays_seconds=DELAYS, give_up_on=[CardDeclined]))
def always_fails(ctx, payload):
    if payload.get("declined"):
        raise CardDeclined("card declined")
    raise ValueError(f"attempt {ctx.attempt} fails")


def retry_after_attempt(attempt, exc):
    """A function policy: 0.1 s per attempt spent."""
    return 0.1 * attempt


@handler("retry_by_function", max_attempts=3,
         retry_policy=RetryPolicy(function="tests.handlers.retry_handlers.retry_after_attempt"))
def fails_for_a_function(ctx, payload):
    raise ValueError("fails")


@handler("deployed_later")
def deployed_later(ctx, payload):
    """Only the new workers know it: an old worker runs without this module."""
    return {"ran_on": ctx.worker_id}
