"""Handlers of the tests of results passed along. Worker subprocesses import this module
through JOB_EXTRA_HANDLER_MODULES."""
from django_pg_jobqueue.registry import handler


@handler("pass_add", description="Test handler: the sum of its dependencies' results, plus payload.add.")
def pass_add(ctx, payload):
    return sum(r for r in ctx.dependency_results if r is not None) + payload.get("add", 0)


@handler("pass_collect", description="Test handler: returns its dependencies' results.")
def pass_collect(ctx, payload):
    return {"results": ctx.dependency_results}

