"""graphile-worker's measurements (Node.js; npm `graphile-worker`, installed by bench/run.py
into bench/peers/graphile/ from its own lock file). Runs in bench/.venv-peers; the enqueues and
the workers are bench/peers/graphile/bench.mjs processes, so graphile-worker runs as its users
run it: its own client (`addJob`, `addJobs`), its own worker (`runOnce`: drain, then exit).

Its defaults are WorkerPreset's (one job at a time per process, no local queue, each
completion its own statement); its documented best (website/docs/performance.md) is 24
concurrent jobs per process, `localQueue: {size: 500}`, `completeJobBatchDelay` and
`failJobBatchDelay` 0 (completions batched) and a pool of 25. A completed job is deleted, so
the drain is over when the table is empty. The pickup's producer calls its SQL API,
`graphile_worker.add_job()`, from psycopg, the same clock as every other system's producer."""
import json
import os
import shutil
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
    stamped_pickups,
)

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHILE_DIR = os.path.join(HERE, "peers", "graphile")
SCRIPT = os.path.join(GRAPHILE_DIR, "bench.mjs")
JOBS = "graphile_worker._private_jobs"


def node_missing() -> str | None:
    """Why graphile-worker cannot run here, or None."""
    if not shutil.which("node"):
        return "node (Node.js) not on PATH"
    if not os.path.isdir(os.path.join(GRAPHILE_DIR, "node_modules", "graphile-worker")):
        return "graphile-worker not installed (npm ci in bench/peers/graphile)"
    return None


def node(cmd: str, url: str, *args: str, timeout: float = 900) -> dict:
    out = subprocess.run(["node", SCRIPT, cmd, "--url", url, *args], cwd=GRAPHILE_DIR,
                         stdout=subprocess.PIPE, text=True, timeout=timeout, check=True).stdout
    lines = out.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def worker_args(concurrency=None, local_queue=None, batch_delay=None, pool=None) -> list[str]:
    """Only the options given; the rest stay at graphile-worker's defaults."""
    args = []
    for flag, value in (("--concurrency", concurrency), ("--local-queue", local_queue),
                        ("--batch-delay", batch_delay), ("--pool", pool)):
        if value is not None:
            args += [flag, str(value)]
    return args


def spawn(url, args, continuous=False, stamp_file=""):
    return subprocess.Popen(
        ["node", SCRIPT, "worker", "--url", url, *args, *(["--continuous"] if continuous else [])],
        cwd=GRAPHILE_DIR, stdout=subprocess.PIPE, stderr=None, text=True,
        env=dict(os.environ, BENCH_STAMP_FILE=stamp_file))


def count(url) -> int:
    with connect(url) as c:
        return c.execute(f"SELECT count(*) FROM {JOBS}").fetchone()[0]


def reset(url) -> None:
    with connect(url) as c:
        c.execute(f"TRUNCATE {JOBS}, graphile_worker._private_job_queues CASCADE")


def enqueue(url, n, bulk) -> float:
    reset(url)
    return node("enqueue", url, "--n", str(n), *(["--bulk"] if bulk else []))["rate"]


def drain(url, n, procs, args):
    enqueue(url, n, bulk=True)
    analyze(url)
    with CpuSampler() as cpu:
        workers = [spawn(url, args) for _ in range(procs)]
        outs = [json.loads(w.communicate(timeout=900)[0].strip().splitlines()[-1])
                for w in workers]
    left = count(url)
    if left:
        raise RuntimeError(f"graphile-worker drain left {left} jobs")
    first, last = min(o["first"] for o in outs if o["first"]), max(o["done"] for o in outs)
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(url, n, gap):
    reset(url)
    stamp_file = tempfile.mktemp(prefix="bench-graphile-stamps-")
    open(stamp_file, "w").close()
    w = spawn(url, worker_args(), continuous=True, stamp_file=stamp_file)
    time.sleep(2.0)
    enq = {}
    with connect(url) as c:
        for i in range(n):
            enq[i] = time.time()
            c.execute("SELECT graphile_worker.add_job('noop', %s::json)", [json.dumps({"i": i})])
            time.sleep(gap)
    samples = stamped_pickups(enq, stamp_file)
    w.terminate()
    w.communicate(timeout=30)
    os.unlink(stamp_file)
    return samples


def best_args(concurrency, local_queue, batch_delay):
    # The pool its performance page pairs with 24 concurrent jobs: one more than the jobs.
    return worker_args(concurrency, local_queue, batch_delay, pool=concurrency + 1)


def main():
    ap = peer_arguments(
        "all", configs="1x24x500x0,2x24x500x0",
        configs_help="processes x concurrent jobs x localQueue size x completion batch delay "
                     "(ms), comma-separated (default: its documented best, 1 and 2 processes)",
        defaults_help="worker processes for the drain at defaults (WorkerPreset)")
    args = ap.parse_args()
    why = node_missing()
    if why:
        log(f"graphile-worker skipped: {why}")
        emit({"system": "graphile-worker", "skipped": why})
        return
    version = json.load(open(os.path.join(GRAPHILE_DIR, "node_modules", "graphile-worker",
                                          "package.json")))["version"]
    node_version = subprocess.run(["node", "--version"], capture_output=True,
                                  text=True).stdout.strip()
    node("migrate", args.url)
    result = {"system": "graphile-worker", "version": version, "node": node_version,
              "n": args.n}
    result["enqueue_single"], result["enqueue_bulk"] = enqueue_runs(
        "graphile-worker", args.runs, lambda: enqueue(args.url, args.n, bulk=False),
        lambda: enqueue(args.url, args.n, bulk=True))
    result["drain_defaults"] = defaults_drain(
        lambda: drain(args.url, args.n, args.defaults_procs, worker_args()), args.runs,
        "graphile-worker", f"{args.defaults_procs} processes x WorkerPreset defaults "
        "(1 concurrent job, no local queue, unbatched completions)")
    result["drain"] = best_drain(
        args.configs, lambda p, c, q, d: drain(args.url, args.n, p, best_args(c, q, d)),
        args.runs, "graphile-worker",
        "{} processes x {} concurrent jobs, localQueue {}, completion batch delay {} ms")
    result["pickup"] = pickup_result("graphile-worker", args.runs,
                                     lambda: pickup(args.url, args.pickup_n, args.pickup_gap))
    emit(result)


if __name__ == "__main__":
    main()
