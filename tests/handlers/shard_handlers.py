"""The handler of tests/system/test_shards.py: each run appends its job's id to the ledger
SHARD_LEDGER names and prints a line the test waits for; with `then`, it enqueues a job of
that queue (maybe another shard's) from inside the worker."""
import os

from django_pg_jobqueue import enqueue
from django_pg_jobqueue.registry import handler
from tests.handlers.appending import AppendedFile

_LEDGER = AppendedFile("SHARD_LEDGER")


@handler("shard_record", max_attempts=1, description="Records its run in SHARD_LEDGER.")
def shard_record(ctx, payload):
    if payload.get("then"):
        enqueue("shard_record", {"from": ctx.job_id}, queue=payload["then"])
    _LEDGER.write(f"{ctx.job_id}\n")
    os.write(1, f"shard job ran {ctx.job_id}\n".encode())  # one write: lines never interleave
