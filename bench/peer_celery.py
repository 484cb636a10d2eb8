"""Celery's measurements: the incumbent, Celery 5 with its Redis broker, the queue a Django team
would otherwise pick. Runs in bench/.venv-peers against the Redis server at BENCH_REDIS_URL
(default redis://127.0.0.1:6379, one database number of its own, BENCH_REDIS_DB, default 13,
flushed before and after). No result backend (Celery's default), early acknowledgement (its
default). `all` measures; `ping` says whether Redis answers. The module is also the Celery
app the workers load (`python -m celery -A bench.peer_celery worker`).

What is timed: enqueue one `delay()` at a time, and in bulk (a `group` of 1,000 signatures
per `apply_async`, Celery's way to send many; it still publishes one message each, in one
connection); the drain from the first task's start (each worker process writes its first
start to Redis once, SETNX) to the moment the queue and the broker's unacknowledged set are
both empty (polled every 10 ms: with early acknowledgement the last tasks are then at most
the pool's own in-flight no-ops). The pool types tried: prefork, threads, solo; and the
defaults: `celery worker` with no flag at all (prefork, concurrency = CPU count, prefetch
multiplier 4, heartbeat, gossip and mingle on), as many worker commands as ours runs
processes."""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
# Celery's Django fix-up wakes up whenever DJANGO_SETTINGS_MODULE is set (the test suite and
# `make` set it) and would load the project's settings, which this virtualenv cannot import:
# this app is plain Celery, in this process and in the workers it starts (they inherit it).
os.environ.pop("DJANGO_SETTINGS_MODULE", None)
from celery import Celery, group  # noqa: E402

from bench.common import (  # noqa: E402
    CpuSampler,
    best_drain,
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
QUEUE = "celery"  # Celery's default queue: the defaults run uses no flag, -Q included
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
REDIS_DB = int(os.environ.get("BENCH_REDIS_DB", "13"))
BROKER = f"{REDIS_URL}/{REDIS_DB}"
FIRST_KEY = "bench:first_start"

app = Celery("bench_celery", broker=BROKER)
app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False,
                broker_connection_retry_on_startup=True)
_started = []


@app.task(name="noop")
def noop(i=None):
    if not _started:  # once per worker process: its first start, for the drain's window
        _started.append(time.time())
        _redis().setnx(FIRST_KEY, repr(_started[0]))
    if i is not None:
        stamp({"i": i})


def _redis():
    import redis

    return redis.Redis.from_url(BROKER)


def ping() -> str | None:
    """None when Redis answers, else why not."""
    try:
        _redis().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "skip", with the reason
        return f"Redis at {REDIS_URL} does not answer ({type(exc).__name__}: {exc})"
    return None


def reset() -> None:
    _redis().flushdb()  # this database number only: BENCH_REDIS_DB


def pending() -> int:
    r = _redis()
    return r.llen(QUEUE) + r.hlen("unacked")


def enqueue_single(n: int) -> float:
    reset()
    t0 = time.perf_counter()
    for _ in range(n):
        noop.delay()
    return n / (time.perf_counter() - t0)


def enqueue_bulk(n: int) -> float:
    reset()
    t0 = time.perf_counter()
    for start in range(0, n, BULK_CHUNK):
        group(noop.s() for _ in range(min(BULK_CHUNK, n - start))).apply_async()
    return n / (time.perf_counter() - t0)


def worker_cmd(pool: str | None, concurrency: int | None, multiplier: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "celery", "-A", "bench.peer_celery", "worker",
           "--loglevel", "WARNING", "-n", f"bench{{}}@{os.uname().nodename}"]
    if pool is None:  # the defaults: nothing else
        return cmd
    cmd += ["--pool", pool, "--without-heartbeat", "--without-gossip", "--without-mingle"]
    if concurrency:
        cmd += ["--concurrency", str(concurrency)]
    if multiplier:
        cmd += ["--prefetch-multiplier", str(multiplier)]
    return cmd


def start(cmd: list[str], procs: int, logdir: str, stamp_file: str = "") -> list:
    env = dict(os.environ, PYTHONPATH=REPO, BENCH_STAMP_FILE=stamp_file)
    out = []
    for p in range(procs):
        logf = open(os.path.join(logdir, f"celery-{p}.log"), "ab")
        out.append(subprocess.Popen([c.replace("{}", str(p)) for c in cmd], env=env, cwd=REPO,
                                    stdout=logf, stderr=subprocess.STDOUT))
    return out


def stop(workers: list) -> None:
    for w in workers:
        if w.poll() is None:
            w.terminate()  # warm shutdown
    for w in workers:
        try:
            w.wait(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


def drain(n: int, procs: int, cmd: list[str], logdir: str) -> tuple[float, float | None]:
    enqueue_bulk(n)
    with CpuSampler() as cpu:
        workers = start(cmd, procs, logdir)
        try:
            if not wait_until(lambda: pending() == 0, max(300, n / 20), 0.01):
                raise RuntimeError(f"celery drain left {pending()} messages")
            last = time.time()
        finally:
            stop(workers)
    first = float(_redis().get(FIRST_KEY))
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(n: int, gap: float, logdir: str) -> list[float]:
    reset()
    stamp_file = tempfile.mktemp(prefix="bench-celery-stamps-")
    open(stamp_file, "w").close()
    workers = start(worker_cmd(None, None, None), 1, logdir, stamp_file)
    try:
        noop.delay()  # warm: wait until a worker runs a task at all
        wait_until(lambda: _redis().exists(FIRST_KEY), 60)
        time.sleep(1.0)
        enq = {}
        for i in range(n):
            enq[i] = time.time()
            noop.delay(i=i)
            time.sleep(gap)
        return stamped_pickups(enq, stamp_file)
    finally:
        stop(workers)


def main():
    ap = peer_arguments(
        "all", "ping", url_help="unused: Celery keeps nothing in PostgreSQL",
        configs="1xpreforkx2x4,1xthreadsx16x4,2xsolox1x4",
        configs_help="worker commands x pool x concurrency x prefetch multiplier",
        defaults_help="worker commands run with no flag for the drain at defaults")
    args = ap.parse_args()
    why = ping()
    if args.cmd == "ping":
        print(why or "ok")
        sys.exit(1 if why else 0)
    if why:
        log(f"celery skipped: {why}")
        emit({"system": "celery", "skipped": why})
        return
    import importlib.metadata as md

    logdir = tempfile.mkdtemp(prefix="bench-celery-")
    result = {"system": "celery", "version": md.version("celery"), "n": args.n,
              "broker": f"redis {_redis().info('server')['redis_version']} at {BROKER}"}
    try:
        result["enqueue_single"], result["enqueue_bulk"] = enqueue_runs(
            "celery", args.runs, lambda: enqueue_single(args.n), lambda: enqueue_bulk(args.n))
        result["bulk_chunk"] = BULK_CHUNK
        cpus = os.cpu_count()
        result["drain_defaults"] = defaults_drain(
            lambda: drain(args.n, args.defaults_procs, worker_cmd(None, None, None), logdir),
            args.runs, "celery",
            f"{args.defaults_procs} x `celery worker` with no flag (prefork, concurrency = "
            f"{cpus} CPUs, prefetch multiplier {app.conf.worker_prefetch_multiplier})")
        result["drain"] = best_drain(
            args.configs,
            lambda p, pool, c, m: drain(args.n, p, worker_cmd(pool, c, m), logdir),
            args.runs, "celery", "{} worker commands x {} pool x concurrency {} x prefetch "
            "multiplier {} (no heartbeat, gossip, mingle)")
        result["pickup"] = pickup_result(
            "celery", args.runs, lambda: pickup(args.pickup_n, args.pickup_gap, logdir),
            " (defaults, 1 worker command)")
    finally:
        reset()
    emit(result)


if __name__ == "__main__":
    main()
