"""What the drain writes per job, measured where the machine's load cannot move it: history
rows, WAL bytes, and the database server's CPU, for the claim and the completion alone.

    .venv/bin/python bench/history_rows_ab.py --url postgres://postgres@127.0.0.1:5432/db \
        [--n 5000] [--batch 50] [--rounds 3]

Runs this checkout's code (run it from each checkout to compare: a worktree of main, and the
branch). Each round: empty the tables, enqueue N no-op jobs, ANALYZE, then one connection
claims `batch` jobs and completes them with complete_many until none is left, as a worker's
lane and completer do, without threads or handlers. Per job: the history rows the drain
wrote (job_events rows / jobs, `created` excluded), the WAL it generated, and the CPU time
of the connection's server process (/proc/<pid>/stat: the server runs on this machine), which
other processes' load slows but does not add to. Prints one JSON line per round.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]


def server_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ["DATABASE_URL"] = args.url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from django_pg_jobqueue import services
    from django_pg_jobqueue.services.lifecycle import Completion

    call_command("migrate", verbosity=0)
    workers = [f"bench-1-{i}" for i in range(args.batch)]
    for _ in range(args.rounds):
        with connection.cursor() as cur:
            cur.execute("TRUNCATE jobs, job_events, job_search_text, job_workers"
                        " RESTART IDENTITY CASCADE")
        for start in range(0, args.n, 1000):
            services.enqueue_many([{"type": "noop", "payload": {}}] * min(1000, args.n - start))
        with connection.cursor() as cur:
            cur.execute("ANALYZE jobs")
            cur.execute("ANALYZE job_events")
            cur.execute("SELECT pg_backend_pid(), pg_current_wal_lsn(), count(*) FROM job_events")
            pid, lsn0, events0 = cur.fetchone()
        cpu0, wall0 = server_cpu_seconds(pid), time.perf_counter()
        done = 0
        while claimed := services.claim(worker_ids=workers, lease_seconds=30):
            ok, refused = services.complete_many(
                [Completion(c.id, c.lease_token, c.worker_id) for c in claimed])
            assert not refused
            done += len(ok)
        wall, cpu = time.perf_counter() - wall0, server_cpu_seconds(pid) - cpu0
        with connection.cursor() as cur:
            cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s), count(*)"
                        " FROM job_events", [lsn0])
            wal, events1 = cur.fetchone()
            cur.execute("SELECT count(*) FROM jobs")
            jobs = cur.fetchone()[0]
            cur.execute("SELECT kind, count(*) FROM job_events GROUP BY kind ORDER BY kind")
            kinds = dict(cur.fetchall())
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print(json.dumps({
            "jobs": done, "history_rows_per_job": round(events1 / jobs, 3),
            "drain_rows_per_job": round((events1 - events0) / done, 3), "kinds": kinds,
            "wal_bytes_per_job": round(float(wal) / done), "server_cpu_us_per_job":
            round(cpu / done * 1e6, 1), "wall_jobs_per_s": round(done / wall), "load": load,
        }), flush=True)


if __name__ == "__main__":
    main()
