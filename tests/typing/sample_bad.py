"""Caller mistakes a type checker must report (tests/contracts/test_typing.py runs mypy on this file)."""
from django_pg_jobqueue import aenqueue, enqueue, handler
from django_pg_jobqueue.testing import drain

enqueue("x", {}, priority="high")  # priority is an int


@handler("y", max_attempts="5")  # max_attempts is an int
def y(ctx, payload):
    return None


async def view() -> None:
    await aenqueue("x", {}, timeout_seconds="30")  # timeout_seconds is an int


drain(max_jobs="10")  # max_jobs is an int
