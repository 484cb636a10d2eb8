"""Deterministic handlers for tests, benchmarks and smoke checks: `noop`, `sleep`, `flaky`, `fail`.

None of them is registered unless a project opts in, by importing this module from one of its
own `handlers.py` modules or by naming it in a setting:

    JOB_EXTRA_HANDLER_MODULES = ["django_pg_jobqueue.builtin_handlers"]
"""
from .exceptions import PermanentError
from .registry import handler


@handler("noop", description="Returns at once.", payload_example={})
def noop(ctx, payload):
    return {"ok": True}


@handler("sleep", description="Sleeps payload.seconds, reporting progress; stops when asked.",
         payload_example={"seconds": 5})
def sleep(ctx, payload):
    seconds = float(payload.get("seconds", 1))
    steps = max(1, min(20, int(seconds * 4)))
    for step in range(steps):
        if ctx.wait(seconds / steps):
            ctx.raise_if_should_stop()
        ctx.progress(int((step + 1) * 100 / steps), f"slept {(step + 1) * seconds / steps:.2f}s")
    return {"slept_seconds": seconds}


@handler("flaky", description="Fails its first payload.fail_times attempts, then succeeds.",
         payload_example={"fail_times": 2})
def flaky(ctx, payload):
    fail_times = int(payload.get("fail_times", 1))
    if ctx.attempt <= fail_times:
        raise RuntimeError(f"flaky: failing attempt {ctx.attempt} of the first {fail_times}")
    return {"succeeded_on_attempt": ctx.attempt}


@handler("fail", description="Always fails; payload.permanent=true fails without retrying.",
         payload_example={"permanent": False})
def fail(ctx, payload):
    if payload.get("permanent"):
        raise PermanentError(payload.get("message", "permanent failure requested"))
    raise RuntimeError(payload.get("message", "failure requested"))
