"""Server connections per worker process, and the drain rate, with no-op and ORM handlers.

    DATABASE_URL=postgres://... python bench/connections.py --threads 16,64 --jobs 3000 \
        [--tree /path/to/other/checkout]   # A/B: the worker from another tree, interleaved

Starts one real `manage.py run_job_workers` process per run, bulk-enqueues the jobs, samples
the process's TCP connections to PostgreSQL every 20 ms while it drains (`ss -tnp`: one
client socket is one server backend; pg_stat_activity is read too, for the rows whose
client_port is one of them), and reports the peak and the jobs/s from the first claim to the
last completion (database clock). The `bench_orm` handler runs one ORM query, on the
`default` alias; `noop` none. Figures on a loaded machine: compare A and B interleaved."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.ours import enqueue_bulk, reset, scalar, setup_django  # noqa: E402


def worker_sockets(pid: int, port: int) -> set[int]:
    """The local ports of `pid`'s established TCP connections to `port`."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True,
                         text=True, check=True).stdout
    ports = set()
    for line in out.splitlines():
        if f"pid={pid}," not in line:
            continue
        fields = line.split()
        local, peer = fields[2], fields[3]
        if peer.rsplit(":", 1)[1] == str(port):
            ports.add(int(local.rsplit(":", 1)[1]))
    return ports


def backends(ports: set[int]) -> int:
    if not ports:
        return 0
    return scalar("SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)",
                  [list(ports)])


def run_one(url: str, tree: str, threads: int, job_type: str, n: int, logdir: str,
            extra_args: tuple[str, ...] = (), enqueue: bool = True,
            expect: int | None = None) -> dict:
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
               PYTHONPATH=os.pathsep.join([REPO, os.path.join(tree, "backend")]))
    if enqueue:
        reset()
    n = n if expect is None else expect
    log = open(os.path.join(logdir, f"worker-{threads}-{job_type}.log"), "ab")
    proc = subprocess.Popen(
        [sys.executable, os.path.join(tree, "manage.py"), "run_job_workers", "--threads",
         str(threads), "--poll-interval", "1", *extra_args], env=env, stdout=log, stderr=subprocess.STDOUT,
        cwd=tree)
    port = int(re.search(r":(\d+)/", url + "/").group(1)) if re.search(r":(\d+)/", url) else 5432
    try:
        deadline = time.monotonic() + 60
        while not scalar("SELECT count(*) FROM job_workers") and time.monotonic() < deadline:
            time.sleep(0.1)
        idle = len(worker_sockets(proc.pid, port))
        if enqueue:
            enqueue_bulk(n, job_type)
        peak, peak_backends = idle, 0
        deadline = time.monotonic() + max(120, n / 50)
        while time.monotonic() < deadline:
            ports = worker_sockets(proc.pid, port)
            if len(ports) >= peak:
                peak, peak_backends = len(ports), max(peak_backends, backends(ports))
            if scalar("SELECT count(*) FROM jobs WHERE status IN ('succeeded', 'failed')") >= n:
                break
            time.sleep(0.02)
        else:
            raise RuntimeError("drain did not finish")
        after = len(worker_sockets(proc.pid, port))
        time.sleep(2.5)  # idle executors close what they kept (Executor.IDLE_CLOSE_SECONDS)
        idle_after = len(worker_sockets(proc.pid, port))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    failed = scalar("SELECT count(*) FROM jobs WHERE status = 'failed'")
    first, last = (float(scalar(f"SELECT extract(epoch FROM {f}) FROM jobs"))
                   for f in ("min(started_at)", "max(finished_at)"))
    return {"tree": tree, "threads": threads, "handler": job_type, "jobs": n,
            "idle_connections": idle, "peak_connections": peak,
            "peak_backends_seen": peak_backends, "connections_after_drain": after, "idle_2s_after_drain": idle_after,
            "failed": failed, "jobs_per_second": round(n / (last - first), 1)}


WAL_OF_THIS_DATABASE = """
WITH r AS (SELECT * FROM pg_get_wal_records_info(%(start)s, %(end)s)),
     ours AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE %(rel)s AND xid <> '0')
SELECT count(*), coalesce(sum(record_length), 0), coalesce(sum(fpi_length), 0)
FROM r WHERE block_ref LIKE %(rel)s
          OR (resource_manager = 'Transaction' AND xid IN (SELECT xid FROM ours))
"""


def wal_per_job(url: str, threads: int, n: int, logdir: str) -> dict:
    """WAL written for `n` no-op jobs: by the bulk enqueue, and by the drain (claim, complete,
    events). The server is shared, so the records are read back with pg_walinspect and only
    this database's are counted (its relations' records, and the commits of the transactions
    that wrote them); the cluster's whole LSN advance is reported beside them."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    dboid = scalar("SELECT oid FROM pg_database WHERE datname = current_database()")
    rel = f"%/{dboid}/%"
    reset()
    scalar("SELECT 1 FROM (SELECT pg_switch_wal()) s")  # FPIs fall as they would, not from 0
    lsn = [scalar("SELECT pg_current_wal_flush_lsn()::text")]
    enqueue_bulk(n)
    lsn.append(scalar("SELECT pg_current_wal_flush_lsn()::text"))
    drained = run_one(url, REPO, threads, "noop", 0, logdir, enqueue=False, expect=n)
    lsn.append(scalar("SELECT pg_current_wal_flush_lsn()::text"))
    out = {"jobs": n, "threads": threads, "jobs_per_second": drained["jobs_per_second"]}
    for phase, (a, b) in {"enqueue": lsn[0:2], "drain": lsn[1:3]}.items():
        records, size, fpi = (int(v) for v in _row(WAL_OF_THIS_DATABASE,
                                                   {"start": a, "end": b, "rel": rel}))
        cluster = scalar("SELECT pg_wal_lsn_diff(%s, %s)", [b, a])
        out[phase] = {"records_per_job": round(records / n, 2),
                      "bytes_per_job": round(size / n), "fpi_bytes_per_job": round(fpi / n),
                      "cluster_bytes_per_job": round(float(cluster) / n)}
    return out


def _row(query: str, params: dict) -> tuple:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(query, params)
        return cur.fetchone()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="16,64")
    parser.add_argument("--handlers", default="noop,bench_orm,sleep:128",
                        help="handlers to run, each with its own job count after a colon")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", action="append", default=[],
                        help="a checkout whose worker to run as well (A/B), interleaved")
    parser.add_argument("--logdir", default="/tmp")
    parser.add_argument("--worker-args", default="",
                        help="more run_job_workers flags, e.g. '--batch-size 200 --prefetch 128'")
    parser.add_argument("--wal", action="store_true",
                        help="measure WAL bytes per job instead (pg_walinspect)")
    args = parser.parse_args()
    url = os.environ["DATABASE_URL"]
    setup_django(url)
    if args.wal:
        for threads in (int(t) for t in args.threads.split(",")):
            print(json.dumps(wal_per_job(url, threads, args.jobs, args.logdir)), flush=True)
        return
    trees = [REPO, *args.tree]
    for _ in range(args.rounds):
        for threads in (int(t) for t in args.threads.split(",")):
            for spec in args.handlers.split(","):  # "sleep:256": that handler, 256 jobs
                job_type, _, jobs = spec.partition(":")
                for tree in trees:
                    print(json.dumps(run_one(url, tree, threads, job_type, int(jobs or args.jobs),
                                             args.logdir, tuple(args.worker_args.split()))),
                          flush=True)


if __name__ == "__main__":
    main()
