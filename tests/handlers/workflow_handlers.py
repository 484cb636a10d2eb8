"""Handlers of the tests of results passed along and durable steps. Worker subprocesses import
this module through JOB_EXTRA_HANDLER_MODULES."""
import os
import signal

from django.db import connection

from django_pg_jobqueue.exceptions import SignalTimedOut
from django_pg_jobqueue.registry import handler


@handler("pass_add", description="Test handler: the sum of its dependencies' results, plus payload.add.")
def pass_add(ctx, payload):
    return sum(r for r in ctx.dependency_results if r is not None) + payload.get("add", 0)


@handler("pass_collect", description="Test handler: returns its dependencies' results.")
def pass_collect(ctx, payload):
    return {"results": ctx.dependency_results}


def _effect(job_id: int, step: str, attempt: int) -> str:
    """A step's side effect: a row in step_effects (the test creates the table)."""
    with connection.cursor() as cur:
        cur.execute("INSERT INTO step_effects (job_id, step, attempt) VALUES (%s, %s, %s)",
                    [job_id, step, attempt])
    return f"{step} done in attempt {attempt}"


@handler("three_steps", max_attempts=3,
         description="Test handler: three durable steps; payload.die_after killed after that step.")
def three_steps(ctx, payload):
    results = []
    for n, step in enumerate(["reserve", "charge", "ship"], start=1):
        results.append(ctx.step(step, _effect, ctx.job_id, step, ctx.attempt))
        if payload.get("die_after") == n and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    return results


@handler("await_approval",
         description="Test handler: waits for signal 'approved' (payload.timeout), returns its data.")
def await_approval(ctx, payload):
    try:
        return {"approved": ctx.wait_for_signal("approved", timeout=payload.get("timeout"))}
    except SignalTimedOut:
        return {"approved": None, "timed_out": True}
