"""Oban for Python's measurements (PyPI `oban`). Runs in bench/.venv-peers (Python 3.12+); `all`
measures; `worker` is one worker process it spawns, run as `oban start` runs one: uvloop,
orjson for psycopg's JSON, its connection pool at its defaults (1 to 10), a producer per queue.

Its defaults: the one queue `default` at limit 10 (a queue has no limit until one is given: 10 is
what its README's `oban start --queues default:10` and its producer's own default give), as
many processes as every system's defaults; its best: the queue limit (and processes) that
drains fastest. Oban keeps a completed job (state `completed`), so the drain is over when no job
is `available` or `executing` (polled every 10 ms, as the Celery adapter polls its queue), from
the first job's start, each worker's handler noting its own."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.common import (  # noqa: E402
    CpuSampler,
    analyze,
    best_drain,
    connect,
    defaults_drain,
    emit,
    enqueue_runs,
    log,
    peer_arguments,
    pickup_result,
    stamp,
    stamped_pickups,
    wait_until,
)

BULK_CHUNK = 1000
DEFAULT_LIMIT = 10
FIRST: list[float] = []
UNFINISHED = "SELECT count(*) FROM oban_jobs WHERE state IN ('available', 'executing')"


def _oban():
    """Imported late: without `oban` (it needs Python 3.12+) `all` says so instead of failing."""
    import oban

    @oban.worker(queue="default")
    class Noop:
        async def process(self, job):
            if not FIRST:
                FIRST.append(time.time())
            if job.args:
                stamp(job.args)

    return oban, Noop


def sql(url, query):
    with connect(url) as c:
        cur = c.execute(query)
        return cur.fetchone() if cur.description else None


async def _with_client(url, fn):
    from oban._config import Config

    oban, noop = _oban()
    conf = Config(dsn=url)
    pool = await conf.create_pool()
    try:
        client = await conf.create_oban(pool)  # no queues: a client that only enqueues
        return await fn(client, noop, pool)
    finally:
        await pool.close()


def install(url):
    from oban.schema import install as install_schema

    async def go(_client, _noop, pool):
        await install_schema(pool)

    asyncio.run(_with_client(url, go))


def reset(url):
    sql(url, "TRUNCATE oban_jobs RESTART IDENTITY")


def enqueue(url, n, bulk):
    reset(url)

    async def go(client, noop, _pool):
        t0 = time.perf_counter()
        if bulk:
            for start in range(0, n, BULK_CHUNK):
                await client.enqueue_many([noop.new() for _ in range(min(BULK_CHUNK, n - start))])
        else:
            for _ in range(n):
                await client.enqueue(noop.new())
        return n / (time.perf_counter() - t0)

    return asyncio.run(_with_client(url, go))


def _worker(url, limit):
    import orjson
    from oban._config import Config
    from psycopg.types.json import set_json_dumps, set_json_loads

    try:
        from uvloop import run as asyncio_run
    except ImportError:
        from asyncio import run as asyncio_run
    set_json_dumps(orjson.dumps)
    set_json_loads(orjson.loads)
    _oban()

    async def go():
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        conf = Config(dsn=url, queues={"default": limit})
        pool = await conf.create_pool()
        try:
            async with await conf.create_oban(pool):
                await stopping.wait()
        finally:
            await pool.close()

    asyncio_run(go())
    print(json.dumps({"first": FIRST[0] if FIRST else None}), flush=True)


def spawn(url, limit, stamp_file=""):
    return subprocess.Popen([sys.executable, __file__, "worker", "--url", url, "--limit",
                             str(limit)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, BENCH_STAMP_FILE=stamp_file), text=True)


def stop(workers) -> list[dict]:
    for w in workers:
        w.send_signal(signal.SIGTERM)
    return [json.loads(w.communicate(timeout=60)[0].strip().splitlines()[-1]) for w in workers]


def drain(url, n, procs, limit):
    enqueue(url, n, bulk=True)
    analyze(url)
    with CpuSampler() as cpu:
        workers = [spawn(url, limit) for _ in range(procs)]
        try:
            if not wait_until(lambda: sql(url, UNFINISHED)[0] == 0, max(300, n / 20), 0.01):
                raise RuntimeError(f"oban drain left {sql(url, UNFINISHED)[0]} jobs")
            last = time.time()
        finally:
            outs = stop(workers)
    done = sql(url, "SELECT count(*) FROM oban_jobs WHERE state = 'completed'")[0]
    if done != n:
        raise RuntimeError(f"oban drain completed {done} of {n} jobs")
    first = min(o["first"] for o in outs if o["first"])
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(url, n, gap):
    reset(url)
    stamp_file = tempfile.mktemp(prefix="bench-oban-stamps-")
    open(stamp_file, "w").close()
    w = spawn(url, DEFAULT_LIMIT, stamp_file)
    time.sleep(2.0)

    async def produce(client, noop, _pool):
        enq = {}
        for i in range(n):
            enq[i] = time.time()
            await client.enqueue(noop.new({"i": i}))
            await asyncio.sleep(gap)
        return enq

    enq = asyncio.run(_with_client(url, produce))
    samples = stamped_pickups(enq, stamp_file)
    stop([w])
    os.unlink(stamp_file)
    return samples


def main():
    ap = peer_arguments(
        "all", "worker", configs="1x20,1x50,1x100,2x50",
        configs_help="processes x queue limit, comma-separated",
        defaults_help=f"worker processes for the drain at defaults (queue limit {DEFAULT_LIMIT})")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    args = ap.parse_args()
    if args.cmd == "worker":
        _worker(args.url, args.limit)
        return
    import importlib.util

    if importlib.util.find_spec("oban") is None:
        why = f"oban not installed (Python 3.12+ needed; this is {sys.version.split()[0]})"
        log(f"oban skipped: {why}")
        emit({"system": "oban", "skipped": why})
        return
    import importlib.metadata as md

    install(args.url)
    result = {"system": "oban", "version": md.version("oban"), "n": args.n}
    result["enqueue_single"], result["enqueue_bulk"] = enqueue_runs(
        "oban", args.runs, lambda: enqueue(args.url, args.n, bulk=False),
        lambda: enqueue(args.url, args.n, bulk=True))
    result["drain_defaults"] = defaults_drain(
        lambda: drain(args.url, args.n, args.defaults_procs, DEFAULT_LIMIT), args.runs, "oban",
        f"{args.defaults_procs} processes x queue `default` at limit {DEFAULT_LIMIT}, pool 1-10")
    result["drain"] = best_drain(args.configs, lambda p, q: drain(args.url, args.n, p, q),
                                 args.runs, "oban", "{} processes x queue limit {}")
    result["pickup"] = pickup_result("oban", args.runs,
                                     lambda: pickup(args.url, args.pickup_n, args.pickup_gap))
    emit(result)


if __name__ == "__main__":
    main()
