"""Processes vs threads for CPU-bound handlers: `run_job_workers --processes 2 --threads 1`
against `--processes 1 --threads 2` (the same total threads), each draining the same backlog of
`bench_cpu` jobs (a pure-Python loop of fixed cost, holding the GIL). Prints the machine's core
count, each drain's time and rate, and the ratio; the target is 1.8x or better on 2 idle cores.

    python bench/processes.py                 300 jobs of ~0.1 s of CPU each, best of 2 runs
    BENCH_QUICK=1 python bench/processes.py   150 jobs of half that, 1 run
    BENCH_SMOKE=1                             20 tiny jobs: what the test suite runs

A figure taken on a busy machine says so: the load average is printed beside it. Run by
`make bench` after the main benchmark, and alone by `make bench-processes`."""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.common import connect, create_db, drop_db, log  # noqa: E402

CONFIGS = [("processes", 2, 1), ("threads", 1, 2)]  # (name, --processes, --threads)
TARGET = 1.8


def _sizes() -> dict:
    if os.environ.get("BENCH_SMOKE"):
        return {"jobs": 20, "loops": 20_000, "runs": 1}
    if os.environ.get("BENCH_QUICK"):
        return {"jobs": 150, "loops": 500_000, "runs": 1}
    return {"jobs": 300, "loops": 1_000_000, "runs": 2}


def _env(url: str) -> dict:
    return dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
                PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "backend")]),
                JOB_WORKER_LOG_LEVEL="WARNING")


def _count(url: str, where: str) -> int:
    with connect(url) as c:
        return c.execute(f"SELECT count(*) FROM jobs WHERE {where}").fetchone()[0]


def _enqueue(url: str, jobs: int, loops: int) -> None:
    with connect(url) as c:
        c.execute("TRUNCATE jobs CASCADE")
    code = ("from django_pg_jobqueue import enqueue_many; "
            f"enqueue_many([{{'type': 'bench_cpu', 'payload': {{'loops': {loops}}}}}] * {jobs})")
    subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "shell", "-c", code],
                   env=_env(url), cwd=REPO, check=True, capture_output=True)


def _drain(url: str, processes: int, threads: int, jobs: int) -> float:
    """Seconds from the workers' first claim to the last job's success."""
    proc = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers",
         "--processes", str(processes), "--threads", str(threads)],
        env=_env(url), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while _count(url, "status = 'succeeded'") < jobs:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"drain did not finish (worker exit {proc.poll()})")
            time.sleep(0.1)
        with connect(url) as c:
            # On the database clock: from the first claim to the last finish.
            return float(c.execute(
                "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM jobs"
            ).fetchone()[0])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def server_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    out = subprocess.run([sys.executable, os.path.join(REPO, "backend/config/embedded_pg.py"),
                          "url"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def main() -> int:
    sizes = _sizes()
    base = server_url()
    name = f"{os.environ.get('BENCH_DB_PREFIX', 'bench')}_processes"
    url = create_db(base, name)
    try:
        subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "migrate", "-v", "0"],
                       env=_env(url), cwd=REPO, check=True)
        results = {}
        for label, processes, threads in CONFIGS:
            times = []
            for _ in range(sizes["runs"]):
                _enqueue(url, sizes["jobs"], sizes["loops"])
                times.append(_drain(url, processes, threads, sizes["jobs"]))
                log(f"processes bench: {label} ({processes}x{threads}) drained "
                    f"{sizes['jobs']} in {times[-1]:.2f}s")
            results[label] = min(times)
        ratio = results["threads"] / results["processes"]
        cores, load = os.cpu_count(), os.getloadavg()[0]
        print(f"\nCPU-bound drain, {sizes['jobs']} jobs of {sizes['loops']} loops, "
              f"{cores} cores, load average {load:.1f} at the end")
        for label, processes, threads in CONFIGS:
            print(f"  --processes {processes} --threads {threads}: {results[label]:.2f}s "
                  f"({sizes['jobs'] / results[label]:.1f} jobs/s)")
        verdict = "met" if ratio >= TARGET else "missed"
        print(f"  speed-up with processes: {ratio:.2f}x (target {TARGET}x on 2 idle cores: "
              f"{verdict}{'; the machine was busy' if load > (cores or 1) else ''})")
        out_dir = os.environ.get("BENCH_RESULTS_DIR", os.path.join(HERE, "results"))
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "processes.json"), "w") as f:
            json.dump({"cores": cores, "load_average": load, "seconds": results,
                       "speedup": ratio, **sizes}, f, indent=2)
    finally:
        drop_db(base, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
