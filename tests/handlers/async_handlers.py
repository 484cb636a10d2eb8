"""Async handlers and an async Django task, for tests/system/test_async.py's worker subprocesses
(imported there through JOB_EXTRA_HANDLER_MODULES, and by the test itself to enqueue).

`async_nap` sleeps with `await`, and prints how it ended to the worker's output, so that the
test sees from outside the worker process that its coroutine was cancelled.
"""
import asyncio
import threading

from asgiref.sync import sync_to_async

from django_pg_jobqueue import handler
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.tasks_compat import task
from tests.utils import give_back_the_loop


@handler("async_report")
async def async_report(ctx, payload):
    """Reads its own job with the async ORM and with sync_to_async, reports progress."""
    job = await Job.objects.aget(pk=ctx.job_id)
    await ctx.aprogress(50, "half way")
    await ctx.alog("read my job", type=job.type)

    def on_this_thread():
        return threading.current_thread().name, Job.objects.filter(pk=ctx.job_id).count()

    thread, count = await sync_to_async(on_this_thread)()
    await give_back_the_loop()
    return {"type": job.type, "attempt": ctx.attempt, "count": count, "orm_thread": thread,
            "loop_thread": threading.current_thread().name, "n": payload.get("n")}


@handler("async_nap")
async def async_nap(ctx, payload):
    try:
        await asyncio.sleep(payload["seconds"])  # the work: a nap the timeout may cancel
    except asyncio.CancelledError:
        print(f"async_nap: cancelled attempt {ctx.attempt}", flush=True)
        raise
    print(f"async_nap: woke attempt {ctx.attempt}", flush=True)
    return {"woke": True}


@task
async def async_multiply(a, b):
    await give_back_the_loop()
    return a * b
