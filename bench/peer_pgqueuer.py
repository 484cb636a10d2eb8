"""PgQueuer's measurements. Runs in bench/.venv-peers (asyncpg driver, durable tables: the
default, logged like ours). `all` measures; `worker` is one worker process it spawns."""
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import asyncpg  # noqa: E402
from pgqueuer import AsyncpgDriver, Queries, QueueManager  # noqa: E402
from pgqueuer.types import QueueExecutionMode  # noqa: E402

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
    stamped_pickups,
)

BULK_CHUNK = 1000


async def _connect(url):
    return await asyncpg.connect(conninfo(url))


async def _reset(url, install=False):
    conn = await _connect(url)
    q = Queries(AsyncpgDriver(conn))
    if install and not await q.schema_is_installed():
        await q.install()
    else:
        await conn.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")
    await conn.close()


async def _enqueue_single(url, n):
    conn = await _connect(url)
    q = Queries(AsyncpgDriver(conn))
    t0 = time.perf_counter()
    for _ in range(n):
        await q.enqueue("noop", None)
    rate = n / (time.perf_counter() - t0)
    await conn.close()
    return rate


async def _enqueue_bulk(url, n):
    conn = await _connect(url)
    q = Queries(AsyncpgDriver(conn))
    t0 = time.perf_counter()
    for start in range(0, n, BULK_CHUNK):
        k = min(BULK_CHUNK, n - start)
        await q.enqueue(["noop"] * k, [None] * k, [0] * k)
    rate = n / (time.perf_counter() - t0)
    await conn.close()
    return rate


async def _count(url):
    conn = await _connect(url)
    n = await conn.fetchval("SELECT count(*) FROM pgqueuer")
    await conn.close()
    return n


async def _worker(url, batch, drain, stamp_file):
    from bench.common import stamp

    conn = await _connect(url)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    first = []

    @qm.entrypoint("noop")
    async def noop(job):
        if not first:
            first.append(time.time())
        if job.payload:
            stamp(json.loads(job.payload))

    await qm.run(batch_size=batch,
                 mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous)
    done = time.time()
    await conn.close()
    print(json.dumps({"first": first[0] if first else None, "done": done}), flush=True)


def spawn(url, batch, drain, stamp_file=""):
    env = dict(os.environ, BENCH_STAMP_FILE=stamp_file)
    return subprocess.Popen([sys.executable, __file__, "worker", "--url", url, "--batch",
                             str(batch)] + (["--drain"] if drain else []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)


def drain(url, n, procs, batch):
    asyncio.run(_reset(url))
    asyncio.run(_enqueue_bulk(url, n))
    analyze(url)
    with CpuSampler() as cpu:
        workers = [spawn(url, batch, True) for _ in range(procs)]
        outs = [json.loads(w.communicate(timeout=600)[0].strip().splitlines()[-1])
                for w in workers]
    left = asyncio.run(_count(url))
    if left:
        raise RuntimeError(f"pgqueuer drain left {left} jobs")
    first, last = min(o["first"] for o in outs if o["first"]), max(o["done"] for o in outs)
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(url, n, gap):
    asyncio.run(_reset(url))
    stamp_file = tempfile.mktemp(prefix="bench-pgq-stamps-")
    open(stamp_file, "w").close()
    w = spawn(url, 10, False, stamp_file)
    time.sleep(2.0)

    async def produce():
        conn = await _connect(url)
        q = Queries(AsyncpgDriver(conn))
        enq = {}
        for i in range(n):
            enq[i] = time.time()
            await q.enqueue("noop", json.dumps({"i": i}).encode())
            await asyncio.sleep(gap)
        await conn.close()
        return enq

    enq = asyncio.run(produce())
    samples = stamped_pickups(enq, stamp_file)
    w.terminate()
    w.wait(timeout=30)
    return samples


def main():
    ap = peer_arguments(
        "all", "worker", configs="1x10,1x100,2x100",
        defaults_help="worker processes for the drain at defaults (QueueManager.run())")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--drain", action="store_true")
    args = ap.parse_args()
    if args.cmd == "worker":
        asyncio.run(_worker(args.url, args.batch, args.drain, os.environ.get("BENCH_STAMP_FILE")))
        return
    import importlib.metadata as md

    asyncio.run(_reset(args.url, install=True))
    result = {"system": "pgqueuer", "version": md.version("pgqueuer"), "n": args.n}
    result["enqueue_single"], result["enqueue_bulk"] = enqueue_runs(
        "pgqueuer", args.runs, lambda: asyncio.run(_enqueue_single(args.url, args.n)),
        lambda: asyncio.run(_enqueue_bulk(args.url, args.n)),
        reset=lambda: asyncio.run(_reset(args.url)))
    # Its defaults: QueueManager.run() with no argument (the batch size read from its signature).
    import inspect

    default_batch = inspect.signature(QueueManager.run).parameters["batch_size"].default
    result["drain_defaults"] = defaults_drain(
        lambda: drain(args.url, args.n, args.defaults_procs, default_batch), args.runs,
        "pgqueuer", f"{args.defaults_procs} processes x QueueManager.run() defaults "
        f"(batch {default_batch})")
    result["drain"] = best_drain(args.configs, lambda p, b: drain(args.url, args.n, p, b),
                                 args.runs, "pgqueuer", "{} processes x batch {}")
    result["pickup"] = pickup_result("pgqueuer", args.runs,
                                     lambda: pickup(args.url, args.pickup_n, args.pickup_gap))
    emit(result)


if __name__ == "__main__":
    main()
