"""Processes vs threads for CPU-bound handlers: `run_job_workers --processes 2 --threads 1`
against `--processes 1 --threads 2` (the same total threads), each draining the same backlog of
`bench_cpu` jobs (a pure-Python loop of fixed cost, holding the GIL), beside the machine's own
ceiling: the same loops, as many of them, in 1 and then 2 plain Python processes (no queue).

A VM's two cores are not always two cores' worth: a neighbour's load, or a hypervisor sharing
the host, makes the plain-process speed-up itself vary from about 1.4x to 1.9x a minute apart.
So each round measures all four side by side (the order alternating from round to round), and
the report gives each one's median over the rounds, the queue's speed-up with processes, the
machine's ceiling, and the speed-up as a fraction of that ceiling: the part the queue loses,
whatever the machine gives. The target (1.8x on 2 idle cores) is printed met or missed.

The workers are started, and their children up, before the jobs are enqueued: a drain is timed
on the database clock from the first claim to the last finish, and the children's start-up
(a spawned interpreter and `django.setup()` each, once per start) is printed on its own.

    python bench/processes.py                 300 jobs of 1,000,000 loops, 3 rounds
    BENCH_QUICK=1 python bench/processes.py   150 jobs of 500,000 loops, 2 rounds
    BENCH_SMOKE=1                             20 tiny jobs, 1 round: what the test suite runs
    BENCH_ROUNDS=n                            n rounds instead

A figure taken on a busy machine says so: the load average is printed beside each round. Run
by `make bench` after the main benchmark, and alone by `make bench-processes`."""
import json
import multiprocessing
import os
import re
import signal
import statistics
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
        sizes = {"jobs": 20, "loops": 20_000, "rounds": 1}
    elif os.environ.get("BENCH_QUICK"):
        sizes = {"jobs": 150, "loops": 500_000, "rounds": 2}
    else:
        sizes = {"jobs": 300, "loops": 1_000_000, "rounds": 3}
    if os.environ.get("BENCH_ROUNDS"):
        sizes["rounds"] = max(1, int(os.environ["BENCH_ROUNDS"]))
    return sizes


def _env(url: str) -> dict:
    return dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
                PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "backend")]),
                JOB_WORKER_LOG_LEVEL="WARNING")


# -- the machine's ceiling: the same loops in plain processes -------------------------------------

def spin(loops: int) -> int:
    """The loop of the `bench_cpu` handler (bench/benchapp/handlers.py), as it is there."""
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def _spinner(jobs: int, loops: int, ready, finished) -> None:
    ready.wait()  # every process started: the clock runs from here
    for _ in range(jobs):
        spin(loops)
    finished.put(time.monotonic())


def ceiling_seconds(processes: int, jobs: int, loops: int) -> float:
    """Seconds for `processes` plain spawned processes to run `jobs` loops between them, from
    the moment all are up to the last one's end (start-up is not counted: nor is the queue's)."""
    ctx = multiprocessing.get_context("spawn")
    ready, finished = ctx.Barrier(processes + 1), ctx.Queue()
    shares = [jobs // processes + (1 if i < jobs % processes else 0) for i in range(processes)]
    children = [ctx.Process(target=_spinner, args=(share, loops, ready, finished))
                for share in shares]
    for child in children:
        child.start()
    ready.wait()
    started = time.monotonic()
    ends = [finished.get(timeout=600) for _ in children]
    for child in children:
        child.join(30)
    return max(ends) - started


# -- the queue -------------------------------------------------------------------------------------

def _count(url: str, sql: str) -> int:
    with connect(url) as c:
        return c.execute(sql).fetchone()[0]


def _enqueue(jobs: int, loops: int) -> None:
    from django_pg_jobqueue import enqueue_many

    enqueue_many([{"type": "bench_cpu", "payload": {"loops": loops}}] * jobs)


def _start_workers(url: str, processes: int, threads: int) -> tuple[subprocess.Popen, float]:
    """The supervisor and its children, each child's pool up (its worker row written);
    return the process and the seconds that took."""
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers",
         "--processes", str(processes), "--threads", str(threads)],
        env=_env(url), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = began + 180
    while _count(url, "SELECT count(*) FROM job_workers") < processes:
        if time.monotonic() > deadline or proc.poll() is not None:
            _stop(proc)
            raise RuntimeError(f"workers did not start (exit {proc.poll()})")
        time.sleep(0.05)
    return proc, time.monotonic() - began


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def drain(url: str, processes: int, threads: int, jobs: int, loops: int) -> dict:
    """Start the workers, then enqueue `jobs` and time their drain on the database clock, from
    the first claim to the last finish. Also: the children's start-up, and how far apart the
    processes finished their last job (the tail one process ran alone)."""
    with connect(url) as c:
        c.execute("TRUNCATE jobs, job_events, job_search_text CASCADE")
        c.execute("DELETE FROM job_workers")
    proc, startup = _start_workers(url, processes, threads)
    try:
        _enqueue(jobs, loops)
        deadline = time.monotonic() + 600
        while _count(url, "SELECT count(*) FROM jobs WHERE status = 'succeeded'") < jobs:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"drain did not finish (worker exit {proc.poll()})")
            time.sleep(0.05)
        with connect(url) as c:
            seconds = float(c.execute(
                "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM jobs"
            ).fetchone()[0])
            last = {}
            for worker, finished in c.execute(
                    "SELECT e.worker_id, extract(epoch FROM j.finished_at) FROM jobs j"
                    " JOIN job_events e ON e.job_id = j.id AND e.kind = 'succeeded'"):
                owner = re.sub(r"-[^-]+$", "", worker or "")  # <host>-<pid>-<thread>
                last[owner] = max(last.get(owner, 0.0), float(finished))
    finally:
        _stop(proc)
    return {"seconds": seconds, "startup_seconds": startup,
            "tail_seconds": max(last.values()) - min(last.values()) if len(last) > 1 else 0.0}


def server_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    out = subprocess.run([sys.executable, os.path.join(REPO, "backend/config/embedded_pg.py"),
                          "url"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def _round(url: str, index: int, sizes: dict) -> dict:
    """One of each, in an order that alternates from round to round (ABCD, DCBA, ...)."""
    jobs, loops = sizes["jobs"], sizes["loops"]
    steps = [("plain_1", lambda: {"seconds": ceiling_seconds(1, jobs, loops)}),
             ("plain_2", lambda: {"seconds": ceiling_seconds(2, jobs, loops)})]
    steps += [(label, lambda p=p, t=t: drain(url, p, t, jobs, loops)) for label, p, t in CONFIGS]
    if index % 2:
        steps.reverse()
    out = {}
    for label, run in steps:
        out[label] = run()
        out[label]["load_average"] = os.getloadavg()[0]
        log(f"processes bench round {index + 1}: {label} {out[label]['seconds']:.2f}s "
            f"(load average {out[label]['load_average']:.1f})")
    return out


def _median(rounds: list[dict], label: str, field: str = "seconds") -> float:
    return statistics.median(r[label][field] for r in rounds)


def main() -> int:
    sizes = _sizes()
    base = server_url()
    name = f"{os.environ.get('BENCH_DB_PREFIX', 'bench')}_processes"
    url = create_db(base, name)
    try:
        subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "migrate", "-v", "0"],
                       env=_env(url), cwd=REPO, check=True)
        os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings")
        import django

        django.setup()
        rounds = [_round(url, i, sizes) for i in range(sizes["rounds"])]
    finally:
        drop_db(base, name)
    # Each round's figures were taken side by side: its ratios are paired, their median taken.
    ratios = [r["threads"]["seconds"] / r["processes"]["seconds"] for r in rounds]
    ceilings = [r["plain_1"]["seconds"] / r["plain_2"]["seconds"] for r in rounds]
    ratio, ceiling = statistics.median(ratios), statistics.median(ceilings)
    of_ceiling = statistics.median(a / b for a, b in zip(ratios, ceilings, strict=True))
    cores = os.cpu_count()
    loads = [r[label]["load_average"] for r in rounds for label in r]
    print(f"\nCPU-bound drain, {sizes['jobs']} jobs of {sizes['loops']} loops, {cores} cores, "
          f"{len(rounds)} round(s) interleaved, medians; load average {min(loads):.1f} to "
          f"{max(loads):.1f} during the run")
    for label, processes, threads in CONFIGS:
        seconds = _median(rounds, label)
        print(f"  --processes {processes} --threads {threads}: {seconds:.2f}s "
              f"({sizes['jobs'] / seconds:.1f} jobs/s; children up in "
              f"{_median(rounds, label, 'startup_seconds'):.1f}s, not counted; last jobs "
              f"{_median(rounds, label, 'tail_seconds'):.2f}s apart)")
    for processes in (1, 2):
        print(f"  the same loops in {processes} plain process(es), no queue: "
              f"{_median(rounds, f'plain_{processes}'):.2f}s")
    verdict = "met" if ratio >= TARGET else "missed"
    busy = "; the machine was busy" if max(loads) > (cores or 1) else ""
    print(f"  speed-up with processes: {ratio:.2f}x (target {TARGET}x on 2 idle cores: "
          f"{verdict}{busy}); the machine's own ceiling {ceiling:.2f}x; the queue reaches "
          f"{of_ceiling:.2f} of it")
    print("  per round (queue speed-up / ceiling): "
          + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(ratios, ceilings, strict=True)))
    out_dir = os.environ.get("BENCH_RESULTS_DIR", os.path.join(HERE, "results"))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "processes.json"), "w") as f:
        json.dump({"cores": cores, "load_average": loads, "rounds": rounds,
                   "seconds": {label: _median(rounds, label) for label in rounds[0]},
                   "speedup": ratio, "ceiling": ceiling, "of_ceiling": of_ceiling,
                   "target": TARGET, "met": ratio >= TARGET, **sizes}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
