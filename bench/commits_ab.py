"""Two checkouts of this repository, A and B, side by side: the bulk enqueue and the drain at
defaults, interleaved rounds on one throwaway PostgreSQL cluster of their own, and the CPU the
queue itself spends per drained job, so that a change's cost can be told on a machine that is
not quiet.

    python bench/commits_ab.py /path/to/checkout-a /path/to/checkout-b [--n 20000] [--rounds 5]

Each checkout gets its own database on the cluster (migrated by its own code); each round
runs A then B (B then A on even rounds): empty the tables, enqueue N no-op jobs with
enqueue_many (timed), ANALYZE, start 2 x `run_job_workers --threads 16` from that checkout,
wait until every job has succeeded, stop them. Per drain:

- jobs/s from the first claim to the last completion (the database clock), which moves
  with whatever else the machine runs;
- CPU per job: the worker processes' own CPU (getrusage of the reaped children) plus the
  cluster's (its postmaster's and every backend's, from /proc), over N. Other load inflates
  it far less than it slows the wall clock, which is why it is the figure to compare. It
  is counted from the moment both workers are up and idle (the fill pauses the queue, the
  drain resumes it then) to the last job's end.

Medians of the rounds, and B against A. Run from any checkout: the cluster comes from
tests/clusters.py (the embedded PostgreSQL binaries), started and removed here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO]

from tests.clusters import throwaway_primary  # noqa: E402

# Runs inside a checkout (its bench.ours and its package), one phase per call; prints JSON.
# The drain's CPU is counted from the moment both worker processes are up and idle (their
# start-up, a second or more of CPU each, is not the queue's cost per job) to the last job's
# end: the fill pauses the queue, the drain resumes it once the workers are running.
PHASE = r"""
import json, os, sys, tempfile, time
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "backend")]
from bench import ours
from bench.common import analyze
url, phase, n, data_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # state=0, ppid=1, utime=11, stime=12, ...


def tree_cpu(root, reaped=False):
    # CPU seconds of `root` and its live descendants (with reaped: and the children it reaped,
    # as a postmaster reaps the backends that ended).
    children, total = {}, 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(stat(int(entry))[1]), []).append(int(entry))
            except (OSError, IndexError):
                pass
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            f = stat(pid)
        except (OSError, IndexError):
            continue
        total += int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if reaped or pid != root else 0)
        todo += children.get(pid, [])
    return total / TICK


ours.setup_django(url)
from django_pg_jobqueue import services
if phase == "migrate":
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    print(json.dumps({}))
elif phase == "fill":
    ours.reset()
    rate = ours.enqueue_bulk(n)
    services.pause_queue("default")
    analyze(url)
    print(json.dumps({"enqueue_bulk": rate}))
else:
    postmaster = int(open(os.path.join(data_dir, "postmaster.pid")).readline())
    logdir = tempfile.mkdtemp(prefix="commits-ab-")
    workers = ours.start_workers(url, 2, 16, None, logdir)
    try:
        logs = [os.path.join(logdir, f"worker-{p}.log") for p in range(2)]
        deadline = time.monotonic() + 120
        while not all(" running (" in open(path).read() for path in logs):
            if time.monotonic() > deadline:
                raise SystemExit("workers did not start")
            time.sleep(0.1)
        time.sleep(1)  # settled: idle, listening
        w0 = sum(tree_cpu(w.pid) for w in workers)
        s0 = tree_cpu(postmaster, reaped=True)
        services.resume_queue("default")
        if not ours.wait_drained(n, timeout=max(120, n / 100)):
            raise SystemExit("drain did not finish")
        w1 = sum(tree_cpu(w.pid) for w in workers)
        s1 = tree_cpu(postmaster, reaped=True)
    finally:
        ours.stop_workers(workers)
    first, last = ours.drain_window()
    print(json.dumps({"rate": n / (last - first), "workers_cpu": w1 - w0, "server_cpu": s1 - s0}))
"""


def phase(tree: str, url: str, name: str, n: int, data_dir) -> dict:
    out = subprocess.run([sys.executable, "-c", PHASE, url, name, str(n), str(data_dir)],
                         cwd=tree, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "DATABASE_URL"})
    if out.returncode:
        raise RuntimeError(f"{tree} {name}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    trees = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    results: dict = {k: [] for k in trees}
    with throwaway_primary() as cluster:
        for key, tree in trees.items():
            cluster.execute(f"CREATE DATABASE ab_{key.lower()}")
            phase(tree, cluster.url(f"ab_{key.lower()}"), "migrate", 0, cluster.data)
        for r in range(args.rounds):
            for key in (("A", "B") if r % 2 == 0 else ("B", "A")):
                url = cluster.url(f"ab_{key.lower()}")
                fill = phase(trees[key], url, "fill", args.n, cluster.data)
                drained = phase(trees[key], url, "drain", args.n, cluster.data)
                server = drained["server_cpu"]
                cpu_us = (drained["workers_cpu"] + server) / args.n * 1e6
                row = {**fill, **drained, "cpu_us_per_job": cpu_us,
                       "load": open("/proc/loadavg").read().split()[0]}
                results[key].append(row)
                print(f"round {r + 1} {key}: drain {drained['rate']:,.0f} jobs/s, "
                      f"{cpu_us:.1f} us CPU/job (workers {drained['workers_cpu']:.2f} s, "
                      f"server {server:.2f} s), bulk enqueue {fill['enqueue_bulk']:,.0f} jobs/s, "
                      f"load {row['load']}", flush=True)
    print()
    med = {k: {m: statistics.median(r[m] for r in rows)
               for m in ("rate", "cpu_us_per_job", "enqueue_bulk")} for k, rows in results.items()}
    for m, label in (("cpu_us_per_job", "CPU per drained job (us)"), ("rate", "drain (jobs/s)"),
                     ("enqueue_bulk", "bulk enqueue (jobs/s)")):
        print(f"{label:26} A {med['A'][m]:>10,.1f}  B {med['B'][m]:>10,.1f}  "
              f"B/A {med['B'][m] / med['A'][m]:.3f}")
    print(f"A = {trees['A']}\nB = {trees['B']}\n{time.strftime('%Y-%m-%d %H:%M:%S')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
