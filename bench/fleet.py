"""What many idle or trickle-fed worker processes cost one PostgreSQL: `make fleet`.

    python bench/fleet.py [--url postgres://...] [--processes 1,4,12,24] [--supervised 24]
                          [--quick]

For each count N of --processes: N separate `manage.py run_job_workers --threads 1` commands
(each as a host of its own would run it: its own LISTEN connection, its own leader
candidacy); for each count N of --supervised: ONE `run_job_workers --processes N --threads 1`
(one host: a supervisor holding the LISTEN connection, N children). Against a scratch
database; then, from `pg_stat_database` (transactions) and `pg_stat_activity` (connections)
of that database only:
- idle transactions/s (per process too), over an idle window after the start-up settles;
- server connections held while idle;
- a trickle of 20 jobs/s (no-op): claims per job (each worker logs every claim at DEBUG:
  "polled, claimed k of n"), worker transactions per job (the window's transactions less
  the producer's one per job and the idle rate over the window), and pickup (claim time
  less the time the job became available, both on the database clock) p50 and p95;
- the maintenance leader (the `job_leader` row) and how many processes ran a reaper pass.
Prints one table, the load average beside each row, and the targets met or missed (one host
of 24 supervised processes; 12 separate commands standing for 12 hosts); the JSON of every
row goes to bench/results/fleet.json. Transactions and connections are counts, so they hold
on a loaded machine; pickup times do not. All processes run on this one machine: "12 hosts"
are 12 commands here, each with what a host of its own would hold.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.common import connect, create_db, percentile  # noqa: E402

DB = "jobqueue_fleet"
TRICKLE_RATE = 20.0  # jobs per second


def stats(url: str) -> tuple[int, int]:
    """(transactions so far, connections now) of the scratch database, not counting this one."""
    with connect(url) as c:
        xacts = c.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                          "WHERE datname = current_database()").fetchone()[0]
        conns = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                          "current_database() AND pid <> pg_backend_pid() AND backend_type = "
                          "'client backend'").fetchone()[0]
    return xacts, conns


def settle_stats() -> None:
    # Backends report their transaction counts at most once a second, and an idle one only
    # after PGSTAT_IDLE_INTERVAL (10 s): windows start and end after a pause long enough.
    time.sleep(1.5)


def worker_env(url: str, extra: dict) -> dict:
    return dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
                PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "backend")]),
                JOB_WORKER_LOG_LEVEL="DEBUG", **extra)


def run(url: str, n: int, idle_seconds: float, trickle_jobs: int, logdir: str,
        extra_env: dict, supervised: bool = False) -> dict:
    with connect(url) as c:
        c.execute("TRUNCATE jobs, job_events, job_search_text, job_workers, job_leader RESTART IDENTITY CASCADE")
    command = [sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers",
               "--threads", "1"]
    kind = "supervised" if supervised else "separate"
    logs = [os.path.join(logdir, f"fleet-{kind}-{n}-{i}.log") for i in range(1 if supervised else n)]
    if supervised:
        command += ["--processes", str(n)]
    procs = [subprocess.Popen(
        command, env=worker_env(url, extra_env), stdout=open(path, "wb"),
        stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True) for path in logs]
    try:
        deadline = time.monotonic() + 60 + 3 * n
        while time.monotonic() < deadline:
            with connect(url) as c:
                if c.execute("SELECT count(*) FROM job_workers").fetchone()[0] >= n:
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"{n} workers did not all register")
        time.sleep(12)  # start-up over, idle back-off reached, stats flushed
        x0, conns = stats(url)
        t0 = time.monotonic()
        time.sleep(idle_seconds)
        x1, conns_end = stats(url)
        idle_window = time.monotonic() - t0
        idle_rate = (x1 - x0 - 1) / idle_window  # less this script's own first read
        claims_before = sum(_claims(p) for p in logs)

        # The trickle: one enqueue per 1/20 s, each its own transaction.
        from bench.ours import setup_django  # noqa: PLC0415
        setup_django(url)
        from django.db import connection  # noqa: PLC0415

        from django_pg_jobqueue.services import enqueue  # noqa: PLC0415

        settle_stats()
        x2, _ = stats(url)
        t2 = time.monotonic()
        for i in range(trickle_jobs):
            enqueue("noop", {"i": i})
            time.sleep(max(0.0, t2 + (i + 1) / TRICKLE_RATE - time.monotonic()))
        connection.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with connect(url) as c:
                if c.execute("SELECT count(*) FROM jobs WHERE status = 'succeeded'"
                             ).fetchone()[0] >= trickle_jobs:
                    break
            time.sleep(0.1)
        settle_stats()
        x3, _ = stats(url)
        window = time.monotonic() - t2
        claims = sum(_claims(p) for p in logs) - claims_before
        worker_xacts = (x3 - x2 - 2) - trickle_jobs - idle_rate * window
        with connect(url) as c:
            pickups = [float(r[0]) for r in c.execute(
                "SELECT extract(epoch FROM started_at - available_at) * 1000 FROM jobs "
                "WHERE status = 'succeeded'").fetchall()]
            leader = c.execute("SELECT holder FROM job_leader").fetchone()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    leaders = set()
    for path in logs:
        with open(path, errors="replace") as f:
            leaders.update(LEADER_LINE.findall(f.read()))
    reapers = len(leaders)
    return {"processes": n, "supervised": supervised, "load_average": _loadavg(), "idle_transactions_per_s": round(idle_rate, 2),
            "idle_transactions_per_s_per_process": round(idle_rate / n, 2),
            "connections_idle": conns, "connections_idle_end": conns_end,
            "connections_per_process": round(conns / n, 2),
            "connections_per_process_end": round(conns_end / n, 2),
            "trickled_jobs": trickle_jobs, "claims_per_job": round(claims / trickle_jobs, 2),
            "worker_transactions_per_job": round(worker_xacts / trickle_jobs, 2),
            "pickup_p50_ms": round(percentile(pickups, 50), 1),
            "pickup_p95_ms": round(percentile(pickups, 95), 1),
            "leader": leader[0] if leader else None, "processes_that_led": reapers}


def _loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


# The targets, per case: (label, row key, at most).
TARGETS = {
    "one host, 24 supervised processes": ("supervised", 24, [
        ("claims per trickled job", "claims_per_job", 2),
        ("worker transactions per trickled job", "worker_transactions_per_job", 5),
        ("pickup p95 at 20 jobs/s (ms)", "pickup_p95_ms", 10),
        ("server connections (end of the idle window)", "connections_idle_end", 30),
        ("idle transactions/s per process", "idle_transactions_per_s_per_process", 1),
    ]),
    "12 hosts (12 separate commands)": ("separate", 12, [
        ("worker transactions per trickled job", "worker_transactions_per_job", 6),
        ("connections per idle process (end of the idle window)",
         "connections_per_process_end", 2),
        ("processes that led maintenance", "processes_that_led", 1),
    ]),
}


def print_targets(rows: list[dict]) -> None:
    for case, (kind, n, targets) in TARGETS.items():
        row = next((r for r in rows if r["processes"] == n
                    and r["supervised"] == (kind == "supervised")), None)
        if row is None:
            print(f"\n{case}: not run")
            continue
        print(f"\n{case} (load average {row['load_average']}):")
        for label, key, limit in targets:
            value = row[key]
            print(f"  {'met   ' if value <= limit else 'MISSED'} {label}: {value} (at most {limit})")


CLAIM_LINE = re.compile(r"polled, claimed \d+ of \d+")
LEADER_LINE = re.compile(r"(\S+) leads maintenance now")


def _claims(path: str) -> int:
    with open(path, errors="replace") as f:
        return len(CLAIM_LINE.findall(f.read()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=os.environ.get("DATABASE_URL"),
                    help="a server URL (default: DATABASE_URL, else the embedded PostgreSQL)")
    ap.add_argument("--processes", default="1,4,12,24", help="counts to run (default 1,4,12,24)")
    ap.add_argument("--supervised", default="24",
                    help="counts to run as one supervisor of that many processes (default 24; "
                         "'' for none)")
    ap.add_argument("--quick", action="store_true",
                    help="1 and 4 separate processes and 4 supervised ones, short windows")
    ap.add_argument("--env", action="append", default=[],
                    help="NAME=VALUE for the workers (e.g. JOB_MAINTENANCE_LEADER=false)")
    args = ap.parse_args()
    url = args.url
    if not url:
        sys.path.insert(0, os.path.join(REPO, "backend"))
        from config import embedded_pg  # noqa: PLC0415

        url = embedded_pg.ensure_running()
    url = create_db(url, DB)
    env = dict(os.environ, DATABASE_URL=url)
    subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "migrate", "-v", "0"],
                   env=env, cwd=REPO, check=True)
    counts = [1, 4] if args.quick else [int(x) for x in args.processes.split(",") if x]
    supervised = [4] if args.quick else [int(x) for x in args.supervised.split(",") if x]
    cases = [(n, False) for n in counts] + [(n, True) for n in supervised]
    idle_seconds, trickle = (10, 60) if args.quick else (30, 300)
    extra = dict(kv.split("=", 1) for kv in args.env)
    rows = []
    with tempfile.TemporaryDirectory() as logdir:
        for n, sup in cases:
            row = run(url, n, idle_seconds, trickle, logdir, extra, supervised=sup)
            rows.append(row)
            print(json.dumps(row), flush=True)
    with connect(url) as c:
        server = c.execute("SHOW server_version").fetchone()[0]
    head = ("| processes | idle tx/s | idle tx/s per process | connections idle, start to end "
            "(per process) | "
            "claims per trickled job | worker tx per trickled job | pickup p95 | load average |")
    print(f"\nPostgreSQL {server}, {os.cpu_count()} cores, trickle {TRICKLE_RATE:g} jobs/s"
          + (f", env {extra}" if extra else ""))
    print(head)
    print("|" + "---|" * 8)
    for r in rows:
        label = f"{r['processes']} under one supervisor" if r["supervised"] else \
            f"{r['processes']} separate"
        print(f"| {label} | {r['idle_transactions_per_s']} | "
              f"{r['idle_transactions_per_s_per_process']} | {r['connections_idle']} to "
              f"{r['connections_idle_end']} ({r['connections_per_process_end']}) | {r['claims_per_job']} | "
              f"{r['worker_transactions_per_job']} | {r['pickup_p95_ms']} ms | "
              f"{r['load_average']} |")
    print_targets(rows)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fleet.json"), "w") as f:
        json.dump({"server": server, "cores": os.cpu_count(), "env": extra, "rows": rows}, f,
                  indent=2)


if __name__ == "__main__":
    main()
