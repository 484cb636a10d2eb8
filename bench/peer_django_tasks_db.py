"""django-tasks-db's measurements. Runs in bench/.venv-peers with bench.peer_dtdb_settings;
workers are its own `db_worker` command (one task at a time per process), `--batch` to exit
when the queue is empty. It has no bulk enqueue path."""
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.common import (  # noqa: E402
    CpuSampler,
    analyze,
    best_drain,
    defaults_drain,
    emit,
    log,
    peer_arguments,
    pickup_result,
    stamped_pickups,
    summary,
)


def env(url, stamp_file=""):
    return dict(os.environ, BENCH_DTDB_URL=url, DJANGO_SETTINGS_MODULE="bench.peer_dtdb_settings",
                PYTHONPATH=REPO, BENCH_STAMP_FILE=stamp_file)


def worker_cmd(batch, interval=None):
    cmd = [sys.executable, "-m", "django", "db_worker", "--no-startup-delay"]
    if batch:
        cmd.append("--batch")
    if interval is not None:
        cmd += ["--interval", str(interval)]
    return cmd


def reset():
    from django_tasks_db.models import DBTaskResult
    DBTaskResult.objects.all().delete()


def enqueue_single(n):
    from bench.peer_dtdb_tasks import noop
    reset()
    t0 = time.perf_counter()
    for _ in range(n):
        noop.enqueue()
    return n / (time.perf_counter() - t0)


def drain(url, n, procs, fill=True, defaults=False):
    from django.db.models import Max, Min
    from django_tasks_db.models import DBTaskResult

    if fill:
        enqueue_single(n)
    analyze(url)
    with CpuSampler() as cpu:
        # --batch only makes it exit once the queue is empty (for the timing), not a tuning
        cmd = worker_cmd(True) if defaults else worker_cmd(True, 0.1)
        ws = [subprocess.Popen(cmd, env=env(url), cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for _ in range(procs)]
        for w in ws:
            w.wait(timeout=1800)
    left = DBTaskResult.objects.exclude(status="SUCCESSFUL").count()
    if left:
        raise RuntimeError(f"django-tasks-db drain left {left} tasks")
    agg = DBTaskResult.objects.aggregate(a=Min("started_at"), b=Max("finished_at"))
    first, last = agg["a"].timestamp(), agg["b"].timestamp()
    return n / (last - first), cpu.us_per_job(first, last, n)


def pickup(url, n, gap):
    from bench.peer_dtdb_tasks import noop
    reset()
    stamp_file = tempfile.mktemp(prefix="bench-dtdb-stamps-")
    open(stamp_file, "w").close()
    w = subprocess.Popen(worker_cmd(False), env=env(url, stamp_file), cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.0)
    enq = {}
    for i in range(n):
        enq[i] = time.time()
        noop.enqueue(i=i)
        time.sleep(gap)
    samples = stamped_pickups(enq, stamp_file, timeout=60)
    w.terminate()
    w.wait(timeout=30)
    return samples


def main():
    ap = peer_arguments("all", configs="2",
                        defaults_help="db_worker processes for the drain at defaults (no flag)")
    args = ap.parse_args()
    os.environ.update(env(args.url))
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    import importlib.metadata as md

    result = {"system": "django-tasks-db", "version": md.version("django-tasks-db"), "n": args.n}
    # It has no bulk path, and its drain needs the queue filled one call at a time anyway:
    # each drain run's fill is also an enqueue run (keeps the slowest peer's share short).
    single = []

    def fill_and_drain(procs):
        single.append(enqueue_single(args.n))
        return drain(args.url, args.n, procs, fill=False)

    def fill_and_drain_defaults():
        single.append(enqueue_single(args.n))
        return drain(args.url, args.n, args.defaults_procs, fill=False, defaults=True)

    result["drain_defaults"] = defaults_drain(
        fill_and_drain_defaults, args.runs, "django-tasks-db",
        f"{args.defaults_procs} processes (db_worker --batch, its default --interval)")
    result["drain"] = best_drain(args.configs, fill_and_drain, args.runs, "django-tasks-db",
                                 "{} processes (db_worker, --interval 0.1)")
    log(f"django-tasks-db enqueue single {single}")
    result["enqueue_single"] = summary(single)
    result["enqueue_bulk"] = None
    result["pickup"] = pickup_result("django-tasks-db", args.runs,
                                     lambda: pickup(args.url, args.pickup_n, args.pickup_gap),
                                     " (default --interval)")
    emit(result)


if __name__ == "__main__":
    main()
