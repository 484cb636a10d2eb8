"""Procrastinate's measurements. Runs in bench/.venv-peers (PsycopgConnector, LISTEN/NOTIFY
on, its default). `all` measures; `worker` is one worker process it spawns."""
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import psycopg  # noqa: E402
from procrastinate import App, PsycopgConnector  # noqa: E402

from bench.common import (  # noqa: E402
    CpuSampler,
    analyze,
    best_drain,
    conninfo,
    defaults_drain,
    emit,
    enqueue_runs,
    peer_arguments,
    pickup_result,
    stamp,
    stamped_pickups,
)

BULK_CHUNK = 1000
# Silence its "App is instantiated in the main module" hint: the bench defines it here on purpose.
logging.getLogger("procrastinate").setLevel(logging.ERROR)
FIRST: list[float] = []


def make_app(url):
    app = App(connector=PsycopgConnector(conninfo=conninfo(url)))

    @app.task(name="noop")
    async def noop(i=None):
        if not FIRST:
            FIRST.append(time.time())
        if i is not None:
            stamp({"i": i})

    return app, noop


def sql(url, query):
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        cur = c.execute(query)
        return cur.fetchone() if cur.description else None


def reset(url, install=False):
    if install:
        async def go():
            app, _ = make_app(url)
            async with app.open_async():
                await app.schema_manager.apply_schema_async()
        asyncio.run(go())
    sql(url, "TRUNCATE procrastinate_jobs, procrastinate_events RESTART IDENTITY CASCADE")


def enqueue(url, n, bulk):
    async def go():
        app, noop = make_app(url)
        async with app.open_async():
            t0 = time.perf_counter()
            if bulk:
                for start in range(0, n, BULK_CHUNK):
                    await noop.batch_defer_async(*([{}] * min(BULK_CHUNK, n - start)))
            else:
                for _ in range(n):
                    await noop.defer_async()
            return n / (time.perf_counter() - t0)
    return asyncio.run(go())


def _worker(url, concurrency, drain):
    async def go():
        app, _ = make_app(url)
        async with app.open_async():
            await app.run_worker_async(concurrency=concurrency, wait=not drain)
        return time.time()
    done = asyncio.run(go())
    print(json.dumps({"first": FIRST[0] if FIRST else None, "done": done}), flush=True)


def spawn(url, concurrency, drain, stamp_file=""):
    return subprocess.Popen(
        [sys.executable, __file__, "worker", "--url", url, "--concurrency", str(concurrency)]
        + (["--drain"] if drain else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=dict(os.environ, BENCH_STAMP_FILE=stamp_file), text=True)


def drain(url, n, procs, concurrency):
    reset(url)
    enqueue(url, n, bulk=True)
    analyze(url)
    with CpuSampler() as cpu:
        workers = [spawn(url, concurrency, True) for _ in range(procs)]
        outs = [json.loads(w.communicate(timeout=900)[0].strip().splitlines()[-1])
                for w in workers]
    left = sql(url, "SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'")[0]
    if left:
        raise RuntimeError(f"procrastinate drain left {left} jobs")
    first, last = min(o["first"] for o in outs if o["first"]), max(o["done"] for o in outs)
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(url, n, gap):
    reset(url)
    stamp_file = tempfile.mktemp(prefix="bench-proc-stamps-")
    open(stamp_file, "w").close()
    w = spawn(url, 4, False, stamp_file)
    time.sleep(2.0)

    async def produce():
        app, noop = make_app(url)
        enq = {}
        async with app.open_async():
            for i in range(n):
                enq[i] = time.time()
                await noop.defer_async(i=i)
                await asyncio.sleep(gap)
        return enq

    enq = asyncio.run(produce())
    samples = stamped_pickups(enq, stamp_file)
    w.terminate()
    w.wait(timeout=30)
    return samples


def main():
    ap = peer_arguments(
        "all", "worker", configs="1x10,2x10,2x50",
        defaults_help="worker processes for the drain at defaults (run_worker_async())")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--drain", action="store_true")
    args = ap.parse_args()
    if args.cmd == "worker":
        _worker(args.url, args.concurrency, args.drain)
        return
    import importlib.metadata as md

    reset(args.url, install=True)
    result = {"system": "procrastinate", "version": md.version("procrastinate"), "n": args.n}
    result["enqueue_single"], result["enqueue_bulk"] = enqueue_runs(
        "procrastinate", args.runs, lambda: enqueue(args.url, args.n, bulk=False),
        lambda: enqueue(args.url, args.n, bulk=True), reset=lambda: reset(args.url))
    # Its defaults: the worker's own concurrency (read from procrastinate.worker.Worker).
    import inspect

    from procrastinate.worker import Worker

    default_conc = inspect.signature(Worker.__init__).parameters["concurrency"].default
    result["drain_defaults"] = defaults_drain(
        lambda: drain(args.url, args.n, args.defaults_procs, default_conc), args.runs,
        "procrastinate", f"{args.defaults_procs} processes x worker defaults "
        f"(concurrency {default_conc})")
    result["drain"] = best_drain(args.configs, lambda p, c: drain(args.url, args.n, p, c),
                                 args.runs, "procrastinate", "{} processes x concurrency {}")
    result["pickup"] = pickup_result("procrastinate", args.runs,
                                     lambda: pickup(args.url, args.pickup_n, args.pickup_gap))
    emit(result)


if __name__ == "__main__":
    main()
