"""This project's measurements. Runs in the project's virtualenv, against an empty database
the harness created (URL in --url): migrates it, then measures enqueue (single and bulk),
drain at several worker configurations, pickup latency, claim latency at scale and worker RSS.

Workers are real `manage.py run_job_workers` processes, as in production."""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.common import (  # noqa: E402
    CpuSampler,
    analyze,
    best_drain,
    defaults_drain,
    emit,
    latency_summary,
    log,
    pickup_from_stamps,
    summary,
    wait_until,
)

BULK_CHUNK = 1000


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()


def worker_env(url: str) -> dict:
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
               PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "backend")]))
    return env


def start_workers(url: str, procs: int, threads: int, batch: int | None, logdir: str,
                  extra_env: dict | None = None, prefetch: int = 0,
                  wrap_first: list[str] | None = None) -> list[subprocess.Popen]:
    """`procs` run_job_workers processes; batch None: the defaults, `--threads` only.
    wrap_first: a command the first process runs under (a profiler: drain_profile.py)."""
    flags = ["--threads", str(threads)]
    if batch is not None:
        flags += ["--batch-size", str(batch), "--poll-interval", "1", "--prefetch", str(prefetch)]
    out = []
    for p in range(procs):
        logf = open(os.path.join(logdir, f"worker-{p}.log"), "ab")
        wrap = wrap_first if (wrap_first and p == 0) else []
        out.append(subprocess.Popen(
            [*wrap, sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers", *flags],
            env={**worker_env(url), **(extra_env or {})}, stdout=logf, stderr=subprocess.STDOUT,
            cwd=REPO))
    return out


def stop_workers(procs: list[subprocess.Popen], sig: int = signal.SIGTERM) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def reset() -> None:
    from django.db import connection

    with connection.cursor() as cur:
        # TRUNCATE only, as the peers' adapters do. Not ANALYZE: statistics that say "empty"
        # make the foreign-key check of every event row plan a sequential scan of jobs, cached
        # for the connection's life (this server runs without autovacuum, which would
        # re-analyze as the table grows): each insert then scans the whole table.
        cur.execute("TRUNCATE jobs, job_events, job_search_text, job_workers RESTART IDENTITY CASCADE")


def scalar(query: str, params=None):
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(query, params or [])
        return cur.fetchone()[0]


def enqueue_single(n: int) -> float:
    from django_pg_jobqueue.services import enqueue

    reset()
    t0 = time.perf_counter()
    for _ in range(n):
        enqueue("noop", {})
    return n / (time.perf_counter() - t0)


def enqueue_bulk(n: int, job_type: str = "noop") -> float:
    from django_pg_jobqueue.services import enqueue_many

    t0 = time.perf_counter()
    for start in range(0, n, BULK_CHUNK):
        enqueue_many([{"type": job_type, "payload": {}}] * min(BULK_CHUNK, n - start))
    return n / (time.perf_counter() - t0)


def wait_drained(n: int, timeout: float) -> bool:
    return wait_until(lambda: scalar(
        "SELECT count(*) FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')") >= n,
        timeout, interval=0.2)


def drain(url: str, n: int, procs: int, threads: int, batch: int | None, logdir: str,
          prefetch: int = 0, fresh_stats: bool = True) -> tuple[float, float | None]:
    """Jobs/s from the first claim to the last completion (database clock), and the machine's
    CPU per job over that window. batch None: the workers' defaults (`--threads` only);
    fresh_stats False: no ANALYZE after the fill (the statistics are the empty table's)."""
    reset()
    enqueue_bulk(n)
    if fresh_stats:
        analyze(url)
    with CpuSampler() as cpu:
        workers = start_workers(url, procs, threads, batch, logdir, prefetch=prefetch)
        try:
            if not wait_drained(n, timeout=max(120, n / 100)):
                left = scalar("SELECT count(*) FROM jobs WHERE status = 'queued'")
                raise RuntimeError(f"drain did not finish: {left} still queued")
        finally:
            stop_workers(workers)
    first, last = drain_window()
    return n / (last - first), cpu.us_per_job(first, last, n)


def drain_window() -> tuple[float, float]:
    """The first claim and the last completion of the drained jobs (database clock, epoch s)."""
    return tuple(float(scalar(f"SELECT extract(epoch FROM {f}) FROM jobs"))
                 for f in ("min(started_at)", "max(finished_at)"))


# Worker settings that do not bear on throughput, left out of the description (not of the run).
NOT_THROUGHPUT = {"WORKER_THREADS", "LEASE_SECONDS", "POLL_JITTER_SECONDS",
                  "SHUTDOWN_GRACE_SECONDS", "REAPER_INTERVAL_SECONDS", "STATEMENT_TIMEOUT_MS"}


def defaults_description(procs: int, threads: int) -> str:
    """What `run_job_workers --threads N` does with nothing else chosen: the workers group of
    settings as this process resolves them (the command reads the same), not a copy here, so
    a change of the defaults shows up in the report by itself."""
    from dataclasses import fields

    from django_pg_jobqueue import conf

    c = conf.get()
    knobs = {f.name: getattr(c, f.name) for f in fields(c)
             if f.metadata.get("group") == "workers" and f.name not in NOT_THROUGHPUT
             and isinstance(getattr(c, f.name), (int, float, bool))}
    return (f"{procs} processes x --threads {threads}, nothing else: "
            + ", ".join(f"{k}={v}" for k, v in knobs.items()))


def pickup(url: str, n: int, gap: float, logdir: str) -> list[float]:
    from django_pg_jobqueue.services import enqueue

    reset()
    stamp_file = os.path.join(logdir, "stamps.txt")
    open(stamp_file, "w").close()
    workers = start_workers(url, 1, 4, 50, logdir, {"BENCH_STAMP_FILE": stamp_file})
    try:
        # Idle workers: wait until the pool has registered and its listener is up.
        wait_until(lambda: scalar("SELECT count(*) FROM job_workers") > 0, 30)
        time.sleep(1.0)
        enqueued = {}
        for i in range(n):
            enqueued[i] = time.time()
            enqueue("bench_stamp", {"i": i})
            time.sleep(gap)
        wait_drained(n, timeout=60)
    finally:
        stop_workers(workers)
    return pickup_from_stamps(enqueued, stamp_file)


def build_claim_scale(terminal: int, queued: int) -> None:
    """`terminal` finished rows and `queued` runnable ones, cloned from real rows in SQL."""
    from django.db import connection

    from django_pg_jobqueue.services import claim, complete_many, enqueue
    from django_pg_jobqueue.services.lifecycle import Completion

    reset()
    enqueue("noop", {})
    (job,) = claim(worker_ids=["bench-template"])
    complete_many([Completion(job.id, job.lease_token, "bench-template", {"ok": True})])
    with connection.cursor() as cur:
        cur.execute("SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = 'jobs' AND column_name NOT IN ('id', 'idempotency_key')")
        cols = ", ".join(r[0] for r in cur.fetchall())
        cur.execute(f"INSERT INTO jobs ({cols}) SELECT {cols} FROM jobs t, "
                    f"generate_series(2, %s) WHERE t.id = %s", [terminal, job.id])
    enqueue_bulk(queued)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE jobs")
        # Write out the pages the build and the vacuum dirtied before timing: the figure is
        # the claim at this table size, not the claim's commit queued behind that write-back.
        cur.execute("CHECKPOINT")


def claim_latencies(count: int) -> list[float]:
    from django_pg_jobqueue.services import claim

    out = []
    for i in range(count):
        t0 = time.perf_counter()
        got = claim(worker_ids=[f"bench-{i}"])
        out.append((time.perf_counter() - t0) * 1000)
        assert len(got) == 1, "ran out of queued rows"
    return out


def rss_after(url: str, n: int, threads: int, logdir: str) -> dict:
    reset()
    workers = start_workers(url, 1, threads, 50, logdir)
    try:  # an idle pool first, then a fresh one that drains the n jobs
        wait_until(lambda: scalar("SELECT count(*) FROM job_workers") > 0, 30)
        idle = _rss_mb(workers[0].pid)
    finally:
        stop_workers(workers)
    enqueue_bulk(n)
    analyze(url)
    workers = start_workers(url, 1, threads, 50, logdir)
    try:
        if not wait_drained(n, timeout=max(120, n / 50)):
            raise RuntimeError("RSS drain did not finish")
        after = _rss_mb(workers[0].pid)
    finally:
        stop_workers(workers)
    return {"idle_mb": idle, "after_mb": after}


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


# --- the API under gunicorn, loaded by `hey` (Debian package) ----------------------------------
def _hey(args: list[str]) -> dict:
    """Run hey; return requests/s, p50/p95/p99 (ms) and the status codes it saw."""
    import re
    import shutil

    out = subprocess.run([shutil.which("hey"), *args], capture_output=True, text=True,
                         check=True).stdout
    pct = {int(m[0]): float(m[1]) * 1000
           for m in re.findall(r"(\d+)%+ in ([\d.]+) secs", out)}
    codes = {m[0]: int(m[1]) for m in re.findall(r"\[(\d{3})\]\s+(\d+) responses", out)}
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": pct.get(50), "p95": pct.get(95), "p99": pct.get(99), "codes": codes}


def redis_answers(url: str) -> str | None:
    """None when Redis at `url` answers PING, else why not (redis-py comes with the demo)."""
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: measure without it
        return f"Redis at {url} does not answer ({type(exc).__name__}: {exc})"
    return None


def api(url: str, seconds: int, runs: int, concurrency: int, logdir: str,
        extra_env: dict | None = None, label: str = "api") -> dict:
    """The API under gunicorn, loaded by hey. extra_env: settings of this pass (the throttle
    cache in Redis, for the tuned figure)."""
    import shutil
    import socket
    import urllib.request

    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    if not shutil.which("hey"):
        return {"skipped": "the load generator `hey` is not installed (apt-get install hey)"}
    reset()
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True})
    token, _ = Token.objects.get_or_create(user=user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**worker_env(url), "JOB_CREATE_RATE": "100000000/min", "DEBUG": "false",
           **(extra_env or {})}
    logf = open(os.path.join(logdir, "gunicorn.log"), "ab")
    server = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "gunicorn"), "config.wsgi", "--chdir",
         os.path.join(REPO, "backend"), "-c", os.path.join(REPO, "backend/config/gunicorn.py"),
         "--bind", f"127.0.0.1:{port}"], env=env, stdout=logf, stderr=subprocess.STDOUT, cwd=REPO)
    base = f"http://127.0.0.1:{port}"

    def up():
        try:
            return urllib.request.urlopen(base + "/api/health/", timeout=1).status == 200
        except OSError:
            return False

    try:
        if not wait_until(up, 30, 0.2):
            raise RuntimeError("gunicorn did not come up (see gunicorn.log)")
        auth = ["-H", f"Authorization: Token {token.key}"]
        post, get = [], []
        for _ in range(runs):
            post.append(_hey(["-z", f"{seconds}s", "-c", str(concurrency), "-m", "POST", *auth,
                              "-T", "application/json", "-d", '{"type": "noop", "payload": {}}',
                              base + "/api/v1/jobs/"]))
            get.append(_hey(["-z", f"{seconds}s", "-c", str(concurrency), *auth,
                             base + "/api/v1/jobs/"]))
            log(f"ours {label}: POST {post[-1]}, GET {get[-1]}")
        gunicorn_workers = sum(1 for line in open(os.path.join(logdir, "gunicorn.log"))
                               if "Booting worker" in line)
    finally:
        server.terminate()
        server.wait(timeout=30)
    out = {"concurrency": concurrency, "seconds": seconds, "load_generator": "hey (Debian)",
           "gunicorn_workers_booted": gunicorn_workers, "settings": extra_env or {}}
    for name, runs_ in (("post", post), ("get", get)):
        out[name] = {k: summary([r[k] for r in runs_]) for k in ("rps", "p50", "p95", "p99")}
        out[name]["codes"] = runs_[-1]["codes"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--configs", default="1x8x50x0,1x32x50x0,2x32x50x0,2x32x100x64",
                    help="drain configurations to try: processes x threads x batch x prefetch")
    ap.add_argument("--defaults", default="2x16",
                    help="the drain at defaults: processes x --threads, no other flag")
    ap.add_argument("--pickup-n", type=int, default=200)
    ap.add_argument("--pickup-gap", type=float, default=0.02)
    ap.add_argument("--claim-terminal", type=int, default=1_000_000)
    ap.add_argument("--claim-queued", type=int, default=10_000)
    ap.add_argument("--claim-samples", type=int, default=1000)
    ap.add_argument("--rss-n", type=int, default=100_000)
    ap.add_argument("--rss-threads", type=int, default=16)
    ap.add_argument("--api-seconds", type=int, default=10)
    ap.add_argument("--api-concurrency", type=int, default=32)
    ap.add_argument("--api-redis", default="redis://127.0.0.1:6379/14",
                    help="the API again with its throttle counting in this Redis (if it answers)")
    ap.add_argument("--only", default="enqueue,drain,pickup,claim,rss,api")
    args = ap.parse_args()
    only = set(args.only.split(","))
    setup_django(args.url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    logdir = tempfile.mkdtemp(prefix="bench-ours-")
    result: dict = {"system": "ours", "n": args.n, "logdir": logdir}

    if "enqueue" in only:
        single, bulk = [], []
        for r in range(args.runs):
            single.append(enqueue_single(args.n))
            reset()
            bulk.append(enqueue_bulk(args.n))
            log(f"ours enqueue run {r + 1}: single {single[-1]:.0f}/s, bulk {bulk[-1]:.0f}/s")
        result["enqueue_single"] = summary(single)
        result["enqueue_bulk"] = summary(bulk)
        result["bulk_chunk"] = BULK_CHUNK

    if "drain" in only:
        dp, dt = (int(x) for x in args.defaults.split("x"))
        config = defaults_description(dp, dt)
        # First, while no ANALYZE has run in this database: right after the fill, what a busy
        # queue whose statistics lag behind gets (the target: within 10% of the drain after it).
        result["drain_defaults_stale_stats"] = defaults_drain(
            lambda: drain(args.url, args.n, dp, dt, None, logdir, fresh_stats=False), args.runs,
            "ours (no ANALYZE)", config + ", no ANALYZE after the fill")
        result["drain_defaults"] = defaults_drain(
            lambda: drain(args.url, args.n, dp, dt, None, logdir), args.runs, "ours", config)
        result["drain"] = best_drain(
            args.configs, lambda p, t, b, f: drain(args.url, args.n, p, t, b, logdir, f),
            args.runs, "ours", "{} processes x {} threads x batch {} x prefetch {}")

    if "pickup" in only:
        runs = []
        for r in range(args.runs):
            runs.append(latency_summary(pickup(args.url, args.pickup_n, args.pickup_gap, logdir)))
            log(f"ours pickup run {r + 1}: {runs[-1]}")
        result["pickup"] = {k: summary([x[k] for x in runs]) for k in ("p50", "p95", "p99")}

    if "claim" in only:
        t0 = time.perf_counter()
        build_claim_scale(args.claim_terminal, args.claim_queued)
        log(f"ours claim-scale table built in {time.perf_counter() - t0:.1f}s")
        from django.db import connection

        with connection.cursor() as cur:
            from django_pg_jobqueue import sql
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql.CLAIM.format(queue_filter=""),
                        {"limit": 1, "worker_ids": '["explain"]', "lease_seconds": 30.0,
                         "queues": []})
            plan = "\n".join(r[0] for r in cur.fetchall())
        runs = [latency_summary(claim_latencies(args.claim_samples)) for _ in range(args.runs)]
        result["claim_at_scale"] = {
            **{k: summary([x[k] for x in runs]) for k in ("p50", "p95", "p99")},
            "terminal_rows": args.claim_terminal, "queued_rows": args.claim_queued,
            "batch": 1, "plan": plan}
        log(f"ours claim latency: {runs}")

    if "rss" in only:
        runs = []
        for _ in range(args.runs):
            runs.append(rss_after(args.url, args.rss_n, args.rss_threads, logdir))
            log(f"ours rss: {runs[-1]}")
        result["rss"] = {"after_mb": summary([r["after_mb"] for r in runs]),
                         "idle_mb": summary([r["idle_mb"] for r in runs]),
                         "jobs": args.rss_n, "threads": args.rss_threads}
    if "api" in only:
        # At the defaults (the creation throttle counts in the queue's database), then with the
        # login throttle's cache in Redis (JOB_THROTTLE_CACHE_URL), when a Redis server answers:
        # job creation counts in the database either way, so the two should agree.
        result["api"] = api(args.url, args.api_seconds, args.runs, args.api_concurrency, logdir)
        why_not = redis_answers(args.api_redis)
        result["api_redis"] = {"skipped": why_not} if why_not else api(
            args.url, args.api_seconds, args.runs, args.api_concurrency, logdir,
            {"JOB_THROTTLE_CACHE_URL": args.api_redis}, "api (throttle in Redis)")
    emit(result)


if __name__ == "__main__":
    main()
