"""Bench-only handler: loaded only under bench.settings, never in the product."""
from jobs.registry import handler

from bench.common import stamp


@handler("bench_stamp", description="Benchmark: records its start time, then returns.")
def bench_stamp(ctx, payload):
    stamp(payload)
    return None
