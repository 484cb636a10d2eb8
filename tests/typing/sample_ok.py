"""Caller code as an application writes it: `mypy` (make lint) must find nothing wrong here."""
from datetime import timedelta
from typing import Any

from django_pg_jobqueue import (
    JobContext,
    PermanentError,
    aenqueue,
    aenqueue_many,
    enqueue,
    enqueue_many,
    handler,
)
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.testing import (
    assert_enqueued,
    crash_mid_handler,
    drain,
    expire_lease,
    run_reaper,
)


@handler("resize_image", max_attempts=5, timeout_seconds=60, queue="media")
def resize_image(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    ctx.progress(50, "resizing")
    if ctx.should_stop():
        raise PermanentError("stopped")
    return {"ok": True, "job": ctx.job_id}


def produce() -> int:
    job = enqueue("resize_image", {"path": "a.png"}, priority=10, queue="media",
                  delay_seconds=timedelta(seconds=5), max_attempts=3, timeout_seconds=30)
    jobs = enqueue_many([{"type": "resize_image", "payload": {"path": "b.png"}}])
    try:
        enqueue("resize_image", {}, priority=5)
    except InvalidJobArgument as exc:
        print(exc.argument)
    # the decorator keeps the function's own type
    result: dict[str, Any] = resize_image(ctx_for_tests(), {})
    return job.id + len(jobs) + len(result)


@handler("fetch_page", timeout_seconds=30)
async def fetch_page(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    await ctx.aprogress(50, "fetching")
    return {"url": payload["url"]}


async def produce_from_async_code() -> int:
    job = await aenqueue("fetch_page", {"url": "https://example.com/"}, priority=1,
                         delay_seconds=5.0)
    jobs = await aenqueue_many([{"type": "fetch_page", "payload": {"url": "x"}}])
    return job.id + len(jobs)


def ctx_for_tests() -> JobContext:
    raise NotImplementedError


def a_test_of_the_callers_own() -> None:
    enqueue("resize_image", {"path": "c.png"})
    (job,) = assert_enqueued(type="resize_image", payload_subset={"path": "c.png"}, count=1)
    crash = crash_mid_handler(job)
    expire_lease(crash.job_id)
    requeued: dict[str, int] = run_reaper()
    result = drain(["resize_image"], include_scheduled=True, max_jobs=10)
    assert result.succeeded + result.failed == result.ran - result.retried, requeued
