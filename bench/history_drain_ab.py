"""Drain rate with job_events partitioned (migration 0007) against the plain table (0006).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/anything python bench/history_drain_ab.py \
        [--jobs 10000] [--rounds 3] [--threads 16]

Two scratch databases beside DATABASE_URL's (dropped afterwards), one at each schema. Each
round, for each database in turn (the order alternates between rounds): empty the tables,
enqueue N no-op jobs with enqueue_many, ANALYZE, start one `run_job_workers --threads T`
process on it, wait until every job has succeeded, stop the process. The rate is N over the
database's own span from the first claim (min started_at) to the last success (max
finished_at). Interleaved rounds, because the machine's load moves: compare the medians.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

import psycopg  # noqa: E402

from bench.common import conninfo, create_db, drop_db, with_dbname  # noqa: E402


def migrate(url: str, target: str | None) -> None:
    args = ["migrate", "-v0"] + (["django_pg_jobqueue", target] if target else [])
    subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), *args], check=True,
                   env=dict(os.environ, DATABASE_URL=url))


ENQUEUE = """
import json, sys
from django_pg_jobqueue import services
n = int(sys.argv[-1])
for start in range(0, n, 1000):
    services.enqueue_many([{"type": "noop", "payload": {}} for _ in range(min(1000, n - start))])
"""


def one_round(url: str, n: int, threads: int) -> float:
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        c.execute("TRUNCATE jobs, job_events, job_search_text")
    code = (f"import os, sys, django; sys.path[:0] = [{REPO!r}, {os.path.join(REPO, 'backend')!r}];"
            " os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
            f" django.setup(); exec({ENQUEUE!r})")
    subprocess.run([sys.executable, "-c", code, str(n)], check=True,
                   env=dict(os.environ, DATABASE_URL=url))
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        c.execute("ANALYZE jobs")
        c.execute("ANALYZE job_events")
        worker = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers",
             "--threads", str(threads)],
            env=dict(os.environ, DATABASE_URL=url, JOB_WORKER_LOG_LEVEL="WARNING"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                done = c.execute("SELECT count(*) FROM jobs WHERE status = 'succeeded'").fetchone()[0]
                if done >= n:
                    break
                time.sleep(0.5)
            else:
                raise RuntimeError("the drain did not finish in 10 minutes")
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        span = c.execute("SELECT extract(epoch FROM max(finished_at) - min(started_at))"
                         " FROM jobs").fetchone()[0]
        events = c.execute("SELECT count(*) FROM job_events").fetchone()[0]
        assert events == 3 * n, events
    return n / float(span)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10000, help="jobs per drain (default 10000)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--threads", type=int, default=16, help="worker threads (default 16)")
    args = ap.parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        sys.exit("set DATABASE_URL (a server where scratch databases may be created)")
    base = url.rsplit("/", 1)[1].split("?")[0]
    server = with_dbname(url, "postgres")
    dbs = {"plain (0006)": (base + "_hd_plain", "0006_workerprocess_verbose_name_plural"),
           "partitioned (0007)": (base + "_hd_parted", None)}
    urls = {}
    try:
        for label, (name, target) in dbs.items():
            urls[label] = create_db(server, name)
            migrate(urls[label], target)
        rates: dict[str, list[float]] = {label: [] for label in dbs}
        order = list(dbs)
        for r in range(args.rounds):
            for label in (order if r % 2 == 0 else order[::-1]):
                rate = one_round(urls[label], args.jobs, args.threads)
                rates[label].append(rate)
                print(f"round {r + 1} {label:<20} {rate:8.0f} jobs/s", flush=True)
        for label, values in rates.items():
            print(f"median {label:<20} {statistics.median(values):8.0f} jobs/s"
                  f"  ({', '.join(f'{v:.0f}' for v in values)})")
    finally:
        for name, _ in dbs.values():
            drop_db(server, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
