"""Handlers of the batches' tests. Worker subprocesses import this module through
JOB_EXTRA_HANDLER_MODULES."""
from django_pg_jobqueue import PermanentError
from django_pg_jobqueue.registry import handler


@handler("batch_member", max_attempts=2,
         description="Test handler: returns payload.n after payload.seconds; payload.fail "
                     "fails for good.")
def batch_member(ctx, payload):
    if ctx.wait(payload.get("seconds", 0)):  # a job's work: spreads a batch over workers
        ctx.raise_if_should_stop()
    if payload.get("fail"):
        raise PermanentError(f"member {payload.get('n')} fails for good")
    return payload.get("n")


@handler("batch_callback", description="Test handler: returns the batch it was given.")
def batch_callback(ctx, payload):
    return payload
