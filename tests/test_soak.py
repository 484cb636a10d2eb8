"""Soak: sustained enqueue and drain with pruning on, for minutes (SOAK=1, `make soak`).

A producer enqueues at a steady rate, worker processes drain, their pruners delete finished
jobs past a short retention. Every few seconds the test samples the claim latency (a probe
claims from a queue of its own, through the same index and the same churned table), the
size of `jobs` and `job_events`, and their dead tuples. It asserts that the claim p99 stays
flat, the tables stop growing once retention kicks in, and dead tuples stay bounded, and it
prints the figures. When the server runs with autovacuum off, the test vacuums the two
tables every 10 s itself, as such an operator must (and says so). SOAK_SECONDS (default 180)
and SOAK_RATE (jobs/s, default 150) tune it.
"""
import os
import statistics
import threading
import time

import pytest
from django.db import connection

from django_pg_jobqueue import services
from tests import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.chaos_handlers import Output, worker_env
from tests.utils import spawn_workers

pytestmark = [
    pytest.mark.slow, pytest.mark.e2e, pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("SOAK"), reason="soak test: SOAK=1 (make soak)"),
    pytest.mark.timeout(3600),
]

RETENTION_SECONDS = 20


def _p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))] if values else 0.0


def _table_stats():
    with connection.cursor() as cur:
        cur.execute("SELECT pg_total_relation_size('jobs') + pg_total_relation_size('job_events'),"
                    " (SELECT sum(n_live_tup) FROM pg_stat_user_tables"
                    "   WHERE relname IN ('jobs', 'job_events')),"
                    " (SELECT sum(n_dead_tup) FROM pg_stat_user_tables"
                    "   WHERE relname IN ('jobs', 'job_events')),"
                    " (SELECT count(*) FROM jobs WHERE status = 'queued')")
        size, live, dead, queued = cur.fetchone()
    return int(size), int(live or 0), int(dead or 0), int(queued)


def test_soak_claim_latency_flat_table_size_bounded(tmp_path):
    seconds = float(os.environ.get("SOAK_SECONDS", 180))
    rate = float(os.environ.get("SOAK_RATE", 150))
    env = worker_env(tmp_path / "ledger.tsv", CHAOS_LEDGER="",
                     JOB_RETENTION_SUCCEEDED=f"{RETENTION_SECONDS}s",
                     JOB_RETENTION_FAILED=f"{RETENTION_SECONDS}s",
                     JOB_PRUNE_INTERVAL_SECONDS=2)
    workers = [spawn_workers("--threads", "4", "--queues", "default", env=env) for _ in range(2)]
    outputs = [Output(w) for w in workers]
    stop = threading.Event()
    enqueued = [0]

    def produce():
        try:
            tick = 0.2
            while not stop.is_set():
                started = time.monotonic()
                n = max(1, int(rate * tick))
                services.enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.005}}
                                       for _ in range(n)])
                enqueued[0] += n
                stop.wait(max(0.0, tick - (time.monotonic() - started)))
        finally:
            connection.close()

    with connection.cursor() as cur:
        cur.execute("SHOW autovacuum")
        autovacuum = cur.fetchone()[0] == "on"
    vacuums = [0]

    def vacuum():
        # What an operator whose server runs with autovacuum off must schedule: without it
        # nothing reclaims the dead rows that every claim, completion and prune leaves.
        try:
            while not stop.wait(10):
                with connection.cursor() as cur:
                    cur.execute("VACUUM (ANALYZE) jobs, job_events")
                vacuums[0] += 1
        finally:
            connection.close()

    producer = threading.Thread(target=produce, daemon=True)
    vacuumer = None if autovacuum else threading.Thread(target=vacuum, daemon=True)
    samples = []   # (t, claim latencies in the window, size, live, dead, queued)
    try:
        producer.start()
        if vacuumer:
            vacuumer.start()
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            window = []
            until = time.monotonic() + 5
            while time.monotonic() < until:
                services.enqueue("noop", queue="soak-probe")
                t0 = time.perf_counter()
                claimed = services.claim(worker_ids=["soak-probe"], queues=["soak-probe"])
                window.append(time.perf_counter() - t0)
                for c in claimed:
                    services.complete(c.id, c.lease_token, worker_id="soak-probe")
                time.sleep(0.05)
            samples.append((time.monotonic() - began, window, *_table_stats()))
            s = samples[-1]
            print(f"  t={s[0]:6.1f}s claim p99 {_p99(s[1]) * 1000:6.2f} ms  size {s[2] / 1e6:6.1f} MB"
                  f"  live {s[3]:7d}  dead {s[4]:6d}  queued {s[5]:6d}", flush=True)
    finally:
        stop.set()
        producer.join(10)
        if vacuumer:
            vacuumer.join(60)
        for w in workers:
            w.send_signal(15)
        codes = [w.wait(30) for w in workers]
    assert codes == [0, 0], "\n".join(o.text()[-2000:] for o in outputs)

    third = max(1, len(samples) // 3)
    first = [x for s in samples[:third] for x in s[1]]
    last = [x for s in samples[-third:] for x in s[1]]
    p99_first, p99_last = _p99(first), _p99(last)
    # Size once retention has had time to act (2x retention in), versus at the end.
    settled = [s for s in samples if s[0] > 2 * RETENTION_SECONDS + 10]
    size_mid, size_end = settled[len(settled) // 2][2], settled[-1][2]
    max_dead = max(s[4] for s in samples)
    max_live = max(s[3] for s in samples)
    max_queued = max(s[5] for s in samples)
    print(f"\nsoak: {seconds:.0f}s at {rate:.0f} jobs/s ({enqueued[0]} jobs), pruning at "
          f"{RETENTION_SECONDS}s retention; claim p99 {p99_first * 1000:.2f} ms (first third) vs "
          f"{p99_last * 1000:.2f} ms (last third), median {statistics.median(last) * 1000:.2f} ms; "
          f"jobs+events {size_mid / 1e6:.1f} MB mid-run vs {size_end / 1e6:.1f} MB at the end; "
          f"dead tuples max {max_dead}, live max {max_live}, queued max {max_queued}; "
          + ("autovacuum on" if autovacuum else
             f"autovacuum is OFF on this server: the test ran VACUUM every 10 s ({vacuums[0]}x)"))
    assert max_queued < rate * 10, "the workers fell behind: not a steady state"
    assert p99_last <= max(2 * p99_first, p99_first + 0.005)
    assert size_end <= 1.5 * size_mid
    assert max_dead <= max(20000, 2 * max_live)
