"""The capacity of shards (JOB_SHARDS) on this machine: `make capacity`.

    python bench/shards.py [--jobs 20000] [--shards 3] [--processes 2] [--threads 8] [--quick]

Starts one throwaway cluster (tests/clusters.py: the embedded PostgreSQL's binaries, a port
and a temporary data directory of its own, under .pgdata/test-clusters), then a second, then
a third: step N
runs N databases, `JOB_DATABASE` and N - 1 shards of JOB_SHARDS, each on a cluster of its
own and holding one queue (`cap0` in JOB_DATABASE, `cap1` in shard_1, `cap2` in shard_2). A
new shard is added as docs/how-to/scaling.md says: its database created, `migrate
--database shard_n` (its tables and its range of ids), then its workers. At each step:

- enqueue: `--jobs` no-op jobs a database through the router, `enqueue_many()` calls of
  1,000 items per queue (one call holds every queue's items and is split by database), from
  one process; jobs/s in all;
- drain: the same workers on every database, `--processes` separate `run_job_workers
  --threads T` commands (`--shard shard_n` for a shard); jobs/s in all from the first job's
  start to the last one's finish (each database's own timestamps; the clusters share this
  machine's clock), and each database's rate over its own window;
- CPU per drained job: of this run's processes only (the workers, and every cluster's
  postmaster with its children, from /proc), and of the whole machine (other sessions'
  work included);
- connections: the client connections each cluster held, pg_stat_activity sampled every
  100 ms (this script's own left out), at their peak during the enqueue and the drain, and
  at the end of the drain by holder (each process's application_name: the producer, the
  workers of a database, a worker's pool).

The workers of the databases start one after the other, a second or so apart on a loaded
machine, and that counts in the total's window: little against the 20 to 25 s of a full
run's drain, much against the second or two of --quick's (whose figures only show that it
works). The load average is printed before and after each step. Prints a table, and the
extrapolation to N primaries (on paper, marked as such); writes bench/results/capacity.json
and capacity.txt. The clusters and workers are stopped at the end, on an error or Ctrl-C
too. --quick (CAPACITY_QUICK=1 for make): 2,000 jobs a database.

On one machine every cluster and worker shares the same cores: the total cannot grow with
the shards here (what it gains comes from more processes taking a larger share of a loaded
machine). What this measures is what a database and its workers cost per job, and the
connections each primary holds; a primary on a machine of its own serves what one did alone
here (the extrapolation).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "backend")]

import psycopg  # noqa: E402

from bench.common import CpuSampler, log, wait_until  # noqa: E402
from tests.clusters import Cluster, throwaway_primary  # noqa: E402

CHUNK = 1000  # enqueue_many items per queue in one call
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def alias(n: int) -> str:
    return "default" if n == 0 else f"shard_{n}"


def queue(n: int) -> str:
    return f"cap{n}"


def settings_module(ports: list[int]) -> str:
    """The demo's bench settings with one database a cluster: JOB_DATABASE on the first, a
    shard on each other, one queue each."""
    shards = {alias(n): {"number": n, "queues": [queue(n)]} for n in range(1, len(ports))}
    databases = ",\n".join(f'    "{alias(n)}": {{**DATABASES["default"], "HOST": "127.0.0.1", '
                           f'"PORT": {port}, "NAME": "jobs"}}' for n, port in enumerate(ports))
    return f"""import os

from bench.settings import *  # noqa: F403
from bench.settings import DATABASES

DATABASES = {{
{databases},
}}
# Who holds a connection: the process's role (CAPACITY_ROLE), on every database it opens.
for _entry in DATABASES.values():
    _entry["OPTIONS"] = {{**_entry.get("OPTIONS", {{}}),
                         "application_name": os.environ.get("CAPACITY_ROLE", "capacity")}}
DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
JOB_SHARDS = {shards!r}
"""


# --- one step's processes ---------------------------------------------------------------------
def env_for(step_dir: Path, ports: list[int]) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEST_DATABASE_NAME", "JOB_DATABASE_URL", "JOB_READ_DATABASE_URL",
                        "JOB_TRANSACTION_POOLER", "JOB_LISTEN_DATABASE_URL")}
    env.update(DATABASE_URL=f"postgres://postgres@127.0.0.1:{ports[0]}/jobs",
               DJANGO_SETTINGS_MODULE=f"capacity_settings_{len(ports)}",
               PYTHONPATH=os.pathsep.join([str(step_dir), str(REPO), str(REPO / "backend")]),
               PYTHONUNBUFFERED="1")
    return env


def manage(env: dict, *args: str, timeout: float = 600) -> str:
    result = subprocess.run([sys.executable, str(REPO / "manage.py"), *args], env=env,
                            cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def fill(env: dict, databases: int, jobs: int) -> dict:
    """Enqueue `jobs` no-op jobs a database through the router, in a process of its own (the
    step's settings); its JSON answer."""
    out = subprocess.run([sys.executable, str(HERE / "shards.py"), "_fill", "--databases",
                          str(databases), "--jobs", str(jobs)],
                         env={**env, "CAPACITY_ROLE": "producer"}, cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"the fill failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fill_here(databases: int, jobs: int) -> None:
    """In the fill's process: Django under the step's settings, then the enqueue, timed."""
    import django

    django.setup()
    from django_pg_jobqueue import enqueue_many, shards

    queues = [queue(n) for n in range(databases)]
    # A first call opens every database's connection, outside the timing.
    enqueue_many([{"type": "noop", "queue": q} for q in queues])
    done = 0
    t0 = time.perf_counter()
    while done < jobs - 1:
        size = min(CHUNK, jobs - 1 - done)
        enqueue_many([{"type": "noop", "queue": q} for q in queues for _ in range(size)])
        done += size
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "jobs": done * databases,
                      "aliases": [shards.alias_for_queue(q) for q in queues]}))


def start_workers(env: dict, n: int, processes: int, threads: int,
                  logdir: Path) -> list[subprocess.Popen]:
    shard = [] if n == 0 else ["--shard", alias(n)]
    procs = []
    for p in range(processes):
        with open(logdir / f"worker-{alias(n)}-{p}.log", "ab") as logf:
            procs.append(subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "run_job_workers", "--threads",
                 str(threads), *shard], env={**env, "CAPACITY_ROLE": f"workers of {alias(n)}"},
                cwd=REPO, stdout=logf,
                stderr=subprocess.STDOUT, start_new_session=True))
    return procs


def stop_workers(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


# --- what the step's processes use ----------------------------------------------------------
def _cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of `pid` (all its threads), with its reaped children's when asked; 0
    for a process gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLOCK_TICKS


def _postmaster(cluster: Cluster) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


class Sampler(threading.Thread):
    """Every 100 ms: each cluster's client connections (pg_stat_activity, this sampler's own
    left out), and the CPU seconds so far of the step's own processes: the workers, and each
    postmaster with its live children (the backends; a backend's CPU moves to the
    postmaster's cutime when it exits and is reaped)."""

    def __init__(self, clusters: list[Cluster]):
        super().__init__(daemon=True)
        self.clusters = clusters
        self.conns = [connect(c) for c in clusters]
        self.postmasters = [_postmaster(c) for c in clusters]
        self.workers: list[int] = []
        # (time, connections, CPU seconds of the clusters, CPU seconds of the workers)
        self.samples: list[tuple[float, list[int], float, float]] = []
        self.stopping = threading.Event()

    def sample(self) -> tuple[float, list[int], float, float]:
        counts, cpu = [], 0.0
        for conn, postmaster in zip(self.conns, self.postmasters):
            rows = conn.execute(
                "SELECT pid, backend_type = 'client backend' AND datname = 'jobs' "
                "AND application_name IS DISTINCT FROM %s FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid()", [BENCH_APP]).fetchall()
            counts.append(sum(1 for _, client in rows if client))
            cpu += _cpu_seconds(postmaster, children=True)
            cpu += sum(_cpu_seconds(pid) for pid, _ in rows)
        return time.time(), counts, cpu, sum(_cpu_seconds(pid) for pid in self.workers)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.samples.append(self.sample())
            self.stopping.wait(0.1)

    def close(self) -> None:
        self.stopping.set()
        self.join()
        for conn in self.conns:
            conn.close()

    def peak(self, since: float, until: float) -> list[int]:
        window = [s[1] for s in self.samples if since <= s[0] <= until] or [self.samples[-1][1]]
        return [max(column) for column in zip(*window)]

    def cpu_between(self, first: float, last: float, column: int) -> float:
        """CPU seconds between two times (interpolated): column 2 the clusters', 3 the
        workers'."""
        def at(t: float) -> float:
            s = [(sample[0], sample[column]) for sample in self.samples]
            for (t0, c0), (t1, c1) in zip(s, s[1:]):
                if t0 <= t <= t1:
                    return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
            return s[0][1] if t < s[0][0] else s[-1][1]

        return at(last) - at(first)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


BENCH_APP = "capacity-bench"  # this script's own connections, left out of the counts


def connect(cluster: Cluster) -> psycopg.Connection:
    return psycopg.connect(cluster.url("jobs"), autocommit=True, application_name=BENCH_APP)


def scalar(conn: psycopg.Connection, statement: str):
    return conn.execute(statement).fetchone()[0]


def reset(conn: psycopg.Connection) -> None:
    """The previous step's jobs gone (the ids go on: a shard's stay in its range)."""
    conn.execute("TRUNCATE jobs, job_events, job_search_text, job_workers, job_leader CASCADE")


# --- a step ----------------------------------------------------------------------------------
def holders(polls: list[psycopg.Connection]) -> dict:
    """Each database's client connections by holder (application_name)."""
    return {alias(i): dict(c.execute(
        "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = 'jobs' "
        "AND backend_type = 'client backend' AND application_name <> %s GROUP BY 1 ORDER BY 1",
        [BENCH_APP]).fetchall()) for i, c in enumerate(polls)}


def step(clusters: list[Cluster], root: Path, args, idle_seconds: float = 0) -> dict:
    """Step N: the Nth cluster's database added (migrated), every database filled and drained.
    `idle_seconds`: then the workers left idle that long, and their connections counted."""
    n = len(clusters)
    ports = [c.port for c in clusters]
    step_dir = root / f"step-{n}"
    step_dir.mkdir()
    (step_dir / f"capacity_settings_{n}.py").write_text(settings_module(ports))
    env = env_for(step_dir, ports)
    before = loadavg()
    log(f"{n} database(s): load average before {before}")
    # The new database: created, then migrated (all apps on JOB_DATABASE; the queue's tables
    # and the shard's range of ids on a shard).
    clusters[-1].execute("CREATE DATABASE jobs")
    t0 = time.monotonic()
    manage(env, "migrate", "--no-input", "-v", "0",
           *([] if n == 1 else ["--database", alias(n - 1)]))
    migrate_seconds = time.monotonic() - t0
    polls = [connect(c) for c in clusters]
    for conn in polls:
        reset(conn)

    sampler = Sampler(clusters)
    sampler.start()
    try:
        t_fill = time.time()
        filled = fill(env, n, args.jobs)
        t_filled = time.time()
        assert filled["aliases"] == [alias(i) for i in range(n)], filled["aliases"]
        counts = [scalar(c, "SELECT count(*) FROM jobs WHERE status = 'queued'") for c in polls]
        for conn in polls:
            conn.execute("ANALYZE")  # as autovacuum would after a bulk insert
        total = sum(counts)
        load_drain = loadavg()
        with CpuSampler() as machine, ExitStack() as stack:
            workers = []
            for i in range(n):
                procs = start_workers(env, i, args.processes, args.threads, step_dir)
                stack.callback(stop_workers, procs)
                workers += procs
            sampler.workers = [p.pid for p in workers]
            drained = wait_until(lambda: all(
                scalar(c, "SELECT count(*) FROM jobs WHERE status = 'succeeded'") >= k
                for c, k in zip(polls, counts)), timeout=max(120, total / 50), interval=0.25)
            if not drained:
                raise RuntimeError("the drain did not finish: " + ", ".join(
                    str(scalar(c, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'"))
                    for c in polls) + " left")
            t_drained = time.time()
            time.sleep(0.3)
            end_connections = sampler.sample()[1]
            busy_holders = holders(polls)
            idle_holders = None
            if idle_seconds:
                time.sleep(idle_seconds)  # by design: the pools give back what idles 10 s
                idle_holders = holders(polls)
        windows = [tuple(float(x) for x in c.execute(
            "SELECT extract(epoch FROM min(started_at)), extract(epoch FROM max(finished_at)) "
            "FROM jobs").fetchone()) for c in polls]
        first, last = min(w[0] for w in windows), max(w[1] for w in windows)
        postgres_cpu = sampler.cpu_between(first, last, 2)
        workers_cpu = sampler.cpu_between(first, last, 3)
        machine_us = machine.us_per_job(first, last, total)
    finally:
        sampler.close()
        for conn in polls:
            conn.close()
    after = loadavg()
    log(f"{n} database(s): load average after {after}")
    row = {
        "databases": n, "jobs_per_database": counts, "jobs": total,
        "load_average_before": before, "load_average_at_drain": load_drain,
        "load_average_after": after, "migrate_seconds": round(migrate_seconds, 1),
        "enqueue_jobs_per_s": round(filled["jobs"] / filled["seconds"]),
        "drain_jobs_per_s": round(total / (last - first)),
        "drain_jobs_per_s_by_database": [round(k / (w[1] - w[0])) for k, w in zip(counts, windows)],
        "drain_seconds": round(last - first, 2),
        "own_cpu_us_per_job": round((postgres_cpu + workers_cpu) / total * 1e6),
        "postgres_cpu_us_per_job": round(postgres_cpu / total * 1e6),
        "workers_cpu_us_per_job": round(workers_cpu / total * 1e6),
        "own_cores_busy": round((postgres_cpu + workers_cpu) / (last - first), 2),
        "machine_cpu_us_per_job": round(machine_us) if machine_us else None,
        "connections_peak_enqueue": sampler.peak(t_fill, t_filled),
        "connections_peak_drain": [max(a, b) for a, b in zip(
            sampler.peak(t_filled, t_drained), end_connections)],
        "connections_end_of_drain": end_connections,
        "connections_end_of_drain_by_holder": busy_holders,
        "idle_seconds": idle_seconds, "connections_idle_by_holder": idle_holders,
        "workers_per_database": f"{args.processes} x run_job_workers --threads {args.threads}",
    }
    log(json.dumps(row))
    return row


# --- the report ------------------------------------------------------------------------------
def report(rows: list[dict], server: str, args) -> str:
    lines = [f"Shards' capacity, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
             f"{os.cpu_count()} cores shared by every cluster and worker, {server} "
             f"(throwaway clusters, fsync off), {args.jobs:,} no-op jobs a database, "
             f"{args.processes} x run_job_workers --threads {args.threads} a database.", "",
             "| databases | enqueue jobs/s (router) | drain jobs/s, all | drain jobs/s, each "
             "database | CPU us/job of this run's processes: PostgreSQL + workers (cores they "
             "kept busy) | machine CPU us/job | connections a cluster, peak enqueue / peak "
             "drain / end | load average before, at drain, after |",
             "|" + "---|" * 8]
    for r in rows:
        conns = ", ".join(f"{a}/{b}/{c}" for a, b, c in zip(
            r["connections_peak_enqueue"], r["connections_peak_drain"],
            r["connections_end_of_drain"]))
        lines.append(
            f"| {r['databases']} | {r['enqueue_jobs_per_s']:,} | {r['drain_jobs_per_s']:,} | "
            f"{', '.join(f'{x:,}' for x in r['drain_jobs_per_s_by_database'])} | "
            f"{r['postgres_cpu_us_per_job']} + {r['workers_cpu_us_per_job']} = "
            f"{r['own_cpu_us_per_job']} ({r['own_cores_busy']}) | "
            f"{r['machine_cpu_us_per_job']} | {conns} | "
            f"{r['load_average_before']}; {r['load_average_at_drain']}; "
            f"{r['load_average_after']} |")
    one = rows[0]
    peak = one["connections_peak_drain"][0]
    lines += ["", "Connections at the end of each drain, by holder (application_name; "
              "`jobqueue-worker <host>-<pid>` is a worker's pool, `workers of X` the rest of "
              "the processes working X: their LISTEN and what their start-up left open):"]
    for r in rows:
        lines.append(f"  {r['databases']} database(s): "
                     f"{json.dumps(r['connections_end_of_drain_by_holder'])}")
        if r["connections_idle_by_holder"]:
            lines.append(f"  {r['databases']} database(s), the workers then idle "
                         f"{r['idle_seconds']:g} s: {json.dumps(r['connections_idle_by_holder'])}")
    lines += ["", "EXTRAPOLATION, on paper, not measured: each primary on a machine of its own "
              "(and its workers on theirs) serves what the one database did alone here, "
              f"{one['drain_jobs_per_s']:,} jobs/s drained and {one['enqueue_jobs_per_s']:,} "
              "enqueued by one producer, at the load of that step; its connections are those "
              f"of the processes working it ({peak} for {args.processes} here), plus, on "
              "JOB_DATABASE, those the shards' workers open there (see the holders above).", "",
              "| primaries | drain jobs/s (extrapolated) | enqueue jobs/s, a producer a "
              "primary (extrapolated) |", "|---|---|---|"]
    for k in (1, 2, 4, 8):
        lines.append(f"| {k} | {k * one['drain_jobs_per_s']:,} | "
                     f"{k * one['enqueue_jobs_per_s']:,} |")
    return "\n".join(lines)


def _interrupted(*_) -> None:
    """SIGTERM stops the run as Ctrl-C does: every `finally` stops what it started."""
    raise KeyboardInterrupt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=None,
                    help="no-op jobs a database (default 20,000; 2,000 with --quick)")
    ap.add_argument("--shards", type=int, default=3, help="up to this many databases (default 3)")
    ap.add_argument("--processes", type=int, default=2,
                    help="run_job_workers commands a database (default 2)")
    ap.add_argument("--threads", type=int, default=8, help="--threads of each (default 8)")
    ap.add_argument("--idle-seconds", type=float, default=None,
                    help="after the last step's drain, leave its workers idle this long and "
                         "count their connections (default 40; 0 with --quick: none)")
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get("CAPACITY_QUICK")),
                    help="2,000 jobs a database (also CAPACITY_QUICK=1)")
    ap.add_argument("--output", default=str(HERE / "results" / "capacity"),
                    help="results' path without its suffix (default bench/results/capacity)")
    args = ap.parse_args()
    if args.jobs is None:
        args.jobs = 2000 if args.quick else 20000
    if args.idle_seconds is None:
        args.idle_seconds = 0 if args.quick else 40
    signal.signal(signal.SIGTERM, _interrupted)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="capacity-") as tmp, ExitStack() as stack:
        clusters: list[Cluster] = []
        for _ in range(args.shards):
            clusters.append(stack.enter_context(throwaway_primary()))
            log(f"cluster {len(clusters)} up on port {clusters[-1].port}")
            last = len(clusters) == args.shards
            rows.append(step(clusters, Path(tmp), args,
                             idle_seconds=args.idle_seconds if last else 0))
        server = clusters[0].execute("SHOW server_version")[0][0]
    text = report(rows, f"PostgreSQL {server}", args)
    print("\n" + text)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".txt").write_text(text + "\n")
    output.with_suffix(".json").write_text(json.dumps(
        {"server": server, "cores": os.cpu_count(), "jobs_per_database": args.jobs,
         "processes": args.processes, "threads": args.threads, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["_fill"]:
        fill_args = argparse.ArgumentParser()
        fill_args.add_argument("_fill")
        fill_args.add_argument("--databases", type=int, required=True)
        fill_args.add_argument("--jobs", type=int, required=True)
        parsed = fill_args.parse_args()
        _fill_here(parsed.databases, parsed.jobs)
    else:
        main()
