"""Bench-only handler: loaded only under bench.settings, never in the product."""
from bench.common import stamp
from django_pg_jobqueue.registry import handler


@handler("bench_stamp", description="Benchmark: records its start time, then returns.")
def bench_stamp(ctx, payload):
    stamp(payload)
    return None
