"""Bench-only handler: loaded only under bench.settings, never in the product."""
from bench.common import stamp
from django_pg_jobqueue.registry import handler


@handler("bench_stamp", description="Benchmark: records its start time, then returns.")
def bench_stamp(ctx, payload):
    stamp(payload)
    return None


@handler("bench_orm", description="Benchmark: one ORM query on the default alias, then returns.")
def bench_orm(ctx, payload):
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(pk=0).exists()
    return None


@handler("bench_cpu", description="Benchmark: a pure-Python loop of fixed cost (payload.loops).")
def bench_cpu(ctx, payload):
    total = 0
    for i in range(int(payload.get("loops", 200_000))):
        total += i * i % 7
    return {"total": total}
