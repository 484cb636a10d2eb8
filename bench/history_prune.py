"""Pruning a day of history both ways: whole job_events partitions against batched deletes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/anything python bench/history_prune.py \
        [--events 10000000] [--only partitioned|rows]

For each way, in a scratch database of its own beside DATABASE_URL's (dropped afterwards):
fill `jobs` with events/3 succeeded jobs and `job_events` with three events per job
(created, claimed, succeeded, shaped like the engine's), all of one UTC day eleven days ago,
with INSERT ... SELECT generate_series; ANALYZE; CHECKPOINT; then prune them by retention:
- partitioned (migration 0007): drop_expired_partitions() (the day's partition goes whole),
  then the batched prune of the jobs (it finds no events left to delete);
- rows (the plain table of migration 0006): the batched prune as before 0007, 1,000 jobs and
  their events per transaction.
Prints the wall time and the WAL bytes of each step. WAL is read back with pg_walinspect
after each transaction (only the records of the scratch database and its transactions), so
other databases writing meanwhile do not count; wall times do depend on the machine's load.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.common import create_db, drop_db, with_dbname  # noqa: E402

OUR_WAL = """
WITH r AS (SELECT * FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(end)s::pg_lsn)),
ours AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE %(db)s AND xid <> '0')
SELECT coalesce(sum(record_length), 0), coalesce(sum(fpi_length), 0) FROM r
WHERE block_ref LIKE %(db)s OR xid IN (SELECT xid FROM ours)
"""

FILL_JOBS = """
INSERT INTO jobs (type, queue, payload, status, priority, attempts, max_attempts,
                  available_at, created_at, updated_at, started_at, finished_at,
                  progress_percent, progress_message)
SELECT 'noop', 'default', '{}', 'succeeded', 0, 1, 3, t, t, t + interval '2 ms',
       t + interval '1 ms', t + interval '2 ms', 100, ''
FROM (SELECT %(day)s::timestamptz + (g * (86000.0 / %(n)s)) * interval '1 s' AS t
      FROM generate_series(%(lo)s, %(hi)s) g) s
"""
FILL_EVENTS = """
INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
SELECT j.id, k.kind, k.attempt, CASE WHEN k.attempt > 0 THEN 'host-1234-w' || (j.id %% 16) END,
       '',
       CASE k.kind
         WHEN 'created' THEN '{"queue": "default", "priority": 0}'::jsonb
         WHEN 'claimed' THEN jsonb_build_object('lease_token', gen_random_uuid(),
                                                'wait_seconds', 0.0123)
         ELSE jsonb_build_object('lease_token', gen_random_uuid(), 'run_seconds', 0.0011) END,
       j.created_at + k.offs
FROM jobs j
CROSS JOIN (VALUES ('created', 0, interval '0'), ('claimed', 1, interval '1 ms'),
                   ('succeeded', 1, interval '2 ms')) AS k(kind, attempt, offs)
WHERE j.id BETWEEN %(lo)s AND %(hi)s
"""


def setup(url: str, name: str, partitioned: bool):
    os.environ["DATABASE_URL"] = with_dbname(url, name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    connections["default"].settings_dict["NAME"] = name
    if partitioned:
        call_command("migrate", verbosity=0)
    else:
        call_command("migrate", "django_pg_jobqueue", "0006", verbosity=0)
    return connections["default"]


class Wal:
    def __init__(self, cur):
        self.cur = cur
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        cur.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        self.db = f"%/{cur.fetchone()[0]}/%"
        self.fallbacks = 0

    def lsn(self):
        self.cur.execute("SELECT pg_current_wal_flush_lsn()")
        return self.cur.fetchone()[0]

    def since(self, start) -> tuple[int, int]:
        end = self.lsn()
        self.cur.execute("SELECT %s::pg_lsn >= %s::pg_lsn", [start, end])
        if self.cur.fetchone()[0]:
            return 0, 0  # nothing flushed since (pg_walinspect refuses an empty range)
        try:
            self.cur.execute(OUR_WAL, {"start": start, "end": end, "db": self.db})
            out = tuple(int(v) for v in self.cur.fetchone())
            return out
        except Exception as exc:  # the segments were recycled before they could be read
            self.cur.execute("SELECT %s::pg_lsn - %s::pg_lsn", [end, start])
            self.fallbacks += 1
            print(f"  (WAL already recycled, counting the server's whole WAL: {exc})",
                  flush=True)
            return int(self.cur.fetchone()[0]), 0


def fill(connection, n_events: int):
    from datetime import UTC, datetime, timedelta

    from django_pg_jobqueue.services import partitions

    jobs = n_events // 3
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=11)
    cur = connection.cursor()
    if partitions.is_partitioned(cur):
        partitions.ensure_partitions(since=day, cursor=cur)
    t0 = time.monotonic()
    # In transactions of a second or two: a long write transaction would hold back the event
    # feed of every database on the server (it waits for the oldest running transaction).
    step = 50_000
    for start in range(0, jobs, step):
        cur.execute(FILL_JOBS, {"day": day, "n": jobs, "lo": start + 1,
                                "hi": min(jobs, start + step)})
    cur.execute("SELECT min(id), max(id) FROM jobs")
    lo, hi = cur.fetchone()
    for start in range(lo, hi + 1, step):
        cur.execute(FILL_EVENTS, {"lo": start, "hi": min(hi, start + step - 1)})
    cur.execute("ANALYZE jobs")
    cur.execute("ANALYZE job_events")
    cur.execute("SELECT count(*) FROM job_events")
    events = cur.fetchone()[0]
    cur.execute("SELECT pg_size_pretty(pg_total_relation_size('jobs')),"
                " (SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c"
                "  WHERE c.relname LIKE 'job_events%%' AND c.relkind = 'r')")
    sizes = cur.fetchone()
    print(f"  filled {jobs:,} jobs and {events:,} events in {time.monotonic() - t0:.0f} s"
          f" (jobs {sizes[0]}, job_events {sizes[1]})", flush=True)
    cur.execute("CHECKPOINT")
    return cur


def batched_prune(cur, wal: Wal, *, with_events: bool) -> tuple[float, int, int, int, int]:
    """The prune's own batches (services/pruning.py PRUNE_BATCH), one transaction each, WAL
    read back after each. with_events=False: the jobs alone (their events already gone)."""
    from django_pg_jobqueue.sql import PRUNE_BATCH

    statement = PRUNE_BATCH
    params = {"status": "succeeded", "age": 7 * 86400, "limit": 1000}
    elapsed, wal_bytes, fpi, jobs, events = 0.0, 0, 0, 0, 0
    while True:
        start = wal.lsn()
        t0 = time.monotonic()
        cur.execute("BEGIN")
        cur.execute(statement, params)
        n_jobs, n_events = cur.fetchone()
        cur.execute("COMMIT")
        elapsed += time.monotonic() - t0
        w, f = wal.since(start)
        wal_bytes, fpi, jobs, events = wal_bytes + w, fpi + f, jobs + n_jobs, events + n_events
        if n_jobs < params["limit"]:
            break
    assert with_events or events == 0, events
    return elapsed, wal_bytes, fpi, jobs, events


def run_partitioned(url: str, n_events: int, without_fk: bool = False) -> list[tuple]:
    name = url.rsplit("/", 1)[1].split("?")[0] + "_hprune_p"
    create_db(with_dbname(url, "postgres"), name)
    try:
        connection = setup(url, name, partitioned=True)
        cur = fill(connection, n_events)
        if without_fk:  # what-if: no foreign key for each job's delete to check in every partition
            cur.execute("ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_e9646c53_fk_jobs_id")
        wal = Wal(cur)
        from django_pg_jobqueue.services.partitions import drop_expired_partitions

        start = wal.lsn()
        t0 = time.monotonic()
        dropped = drop_expired_partitions()
        t_drop = time.monotonic() - t0
        w_drop, f_drop = wal.since(start)
        t_jobs, w_jobs, f_jobs, jobs, events = batched_prune(cur, wal, with_events=False)
        return [("partitioned: drop the partition", t_drop, w_drop, f_drop, 0, dropped["events"]),
                ("partitioned: then delete the jobs", t_jobs, w_jobs, f_jobs, jobs, events)]
    finally:
        from django.db import connections

        connections.close_all()
        drop_db(with_dbname(url, "postgres"), name)


def run_rows(url: str, n_events: int) -> list[tuple]:
    name = url.rsplit("/", 1)[1].split("?")[0] + "_hprune_r"
    create_db(with_dbname(url, "postgres"), name)
    try:
        connection = setup(url, name, partitioned=False)
        cur = fill(connection, n_events)
        wal = Wal(cur)
        t, w, f, jobs, events = batched_prune(cur, wal, with_events=True)
        return [("rows: batched deletes (0006)", t, w, f, jobs, events)]
    finally:
        from django.db import connections

        connections.close_all()
        drop_db(with_dbname(url, "postgres"), name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000,
                    help="events to fill and prune (default 10,000,000; jobs: a third)")
    ap.add_argument("--only", choices=("partitioned", "rows"), help="run one way only")
    ap.add_argument("--without-fk", action="store_true",
                    help="what-if: drop job_events' foreign key before the partitioned prune")
    args = ap.parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        sys.exit("set DATABASE_URL (a server where scratch databases may be created)")
    rows = []
    if args.only in (None, "partitioned"):
        print("partitioned:", flush=True)
        rows += run_partitioned(url, args.events, args.without_fk)
    if args.only in (None, "rows"):
        print("rows:", flush=True)
        rows += run_rows(url, args.events)
    print(f"{'step':<36}{'seconds':>9}{'WAL MB':>9}{'FPI MB':>9}{'jobs':>11}{'events':>12}")
    for label, t, w, f, jobs, events in rows:
        print(f"{label:<36}{t:>9.1f}{w / 1e6:>9.1f}{f / 1e6:>9.1f}{jobs:>11,}{events:>12,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
