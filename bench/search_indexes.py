"""What the job search's payload index costs the queue, in its old place and its new one:

- `on_jobs`: the design of migrations 0012 to 0014, a GIN trigram index over `jobs`'
  `payload::text` (jobs_payload_trgm_idx), the enqueue writing the job row alone;
- `side_table`: migration 0016's, the payload's text written once by the enqueue's own
  statement into job_search_text, the trigram index on that table (job_search_text_trgm_idx);
- `side_table_fk`: the same with a foreign key job_search_text -> jobs ON DELETE CASCADE,
  which the design leaves out (models.JobSearchText says why): its price;
- `none`: no payload index at all (the floor; the search would read the whole table).

Every variant keeps jobs_last_error_trgm_idx (partial: a job without an error has no entry).
For each: single and bulk enqueue, and what the job row's later updates cost: a claim and a
completion each change indexed columns, so each writes a new row version with entries in
every index of `jobs` (the payload's trigrams too, when they are there), priced by two plain
UPDATEs of the same shape (to running, then to succeeded, 50 rows a statement), not by a
worker's drain. Interleaved over several rounds (the order of the variants turns each round),
medians; for an empty payload (what `make bench` enqueues; it has no row in the side table)
and for a payload of a realistic size (about 300 bytes of JSON text).

    python bench/search_indexes.py                 3 rounds: 2,000 single, 20,000 bulk
    BENCH_QUICK=1 python bench/search_indexes.py   2 rounds, a quarter of that

Runs in a database of its own (dropped at the end), on DATABASE_URL's server or the embedded
one; the load average is printed beside each figure."""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.common import connect, create_db, drop_db, log  # noqa: E402
from bench.processes import server_url  # noqa: E402

PAYLOAD_ON_JOBS = ("CREATE INDEX jobs_payload_trgm_idx ON jobs "
                   "USING gin ((payload::text) gin_trgm_ops)")
SIDE_TABLE_INDEX = ("CREATE INDEX job_search_text_trgm_idx ON job_search_text "
                    "USING gin (payload_text gin_trgm_ops)")
SIDE_TABLE_FK = ("ALTER TABLE job_search_text ADD CONSTRAINT job_search_text_job_fk "
                 "FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE")
# variant -> (the enqueue writes the side table, the statements that set up its schema)
VARIANTS = {
    "on_jobs": (False, [PAYLOAD_ON_JOBS]),
    "side_table": (True, [SIDE_TABLE_INDEX]),
    "side_table_fk": (True, [SIDE_TABLE_INDEX, SIDE_TABLE_FK]),
    "none": (False, []),
}
PAYLOADS = {
    "empty payload": {},
    "300-byte payload": {"customer_id": 4812734, "email": "someone.with.a.name@example.com",
                         "order": "ORD-2026-12-000481", "items": [
                             {"sku": "SKU-889123", "qty": 2, "note": "gift wrap, blue ribbon"},
                             {"sku": "SKU-112008", "qty": 1, "note": "leave at the door"}],
                         "locale": "fr-FR", "callback": "https://shop.example.com/hooks/order"},
}
BULK_CHUNK = 1000
KINDS = ("single", "bulk", "updates")


def _sizes() -> dict:
    if os.environ.get("BENCH_QUICK"):
        return {"single": 500, "bulk": 5_000, "rounds": 2}
    return {"single": 2_000, "bulk": 20_000, "rounds": 3}


def _set_variant(url: str, variant: str) -> None:
    """The schema of `variant`, and the enqueue statements it runs: with or without the CTE
    that writes the side table (sql.enqueue._SEARCH_TEXT), as released before migration 0016."""
    from django_pg_jobqueue import sql

    writes_side_table, statements = VARIANTS[variant]
    with connect(url) as c:
        c.execute("DROP INDEX IF EXISTS jobs_payload_trgm_idx")
        c.execute("DROP INDEX IF EXISTS job_search_text_trgm_idx")
        c.execute("ALTER TABLE job_search_text DROP CONSTRAINT IF EXISTS job_search_text_job_fk")
        c.execute("TRUNCATE jobs, job_events, job_search_text RESTART IDENTITY CASCADE")
        for statement in statements:
            c.execute(statement)
    search_text = sql.enqueue._SEARCH_TEXT.format() + ",\n"
    for name in ("ENQUEUE_ONE", "ENQUEUE_MANY"):
        current = _STATEMENTS.setdefault(name, getattr(sql, name))
        if writes_side_table:
            setattr(sql, name, current)
            continue
        old = {}
        for key, statement in current.items():
            assert search_text in statement, "sql.enqueue._SEARCH_TEXT is not in the enqueue"
            old[key] = statement.replace(search_text, "").replace(
                "RETURNING id, queue, priority, payload, ", "RETURNING id, queue, priority, ")
        setattr(sql, name, old)


_STATEMENTS: dict = {}


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) that the server process `pid` has spent."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Phase:
    """One phase's rate (jobs a second, wall clock: what the loaded machine let through), and
    what the job's own server process spent on it (CPU us a job: the work, much less sensitive
    to the other processes on the machine) and the WAL it wrote (bytes a job: the writes,
    independent of the load)."""

    def __init__(self, cursor, jobs: int):
        self.cursor, self.jobs = cursor, jobs

    def _lsn(self) -> str:
        self.cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        return self.cursor.fetchone()[0]

    def __enter__(self):
        self.cursor.execute("SELECT pg_backend_pid()")
        self.pid = self.cursor.fetchone()[0]
        self.lsn, self.cpu, self.t0 = self._lsn(), _cpu_seconds(self.pid), time.perf_counter()
        return self

    def __exit__(self, *exc):
        elapsed = time.perf_counter() - self.t0
        cpu = _cpu_seconds(self.pid) - self.cpu
        self.cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                            [self.lsn])
        wal = float(self.cursor.fetchone()[0])
        self.result = {"rate": self.jobs / elapsed, "cpu_us": 1e6 * cpu / self.jobs,
                       "wal_bytes": wal / self.jobs}


def _measure(url: str, sizes: dict, payload: dict) -> dict:
    from django_pg_jobqueue import enqueue, enqueue_many
    from django_pg_jobqueue.db import queue_connection

    connection = queue_connection()

    with connect(url) as c:
        c.execute("TRUNCATE jobs, job_events, job_search_text RESTART IDENTITY CASCADE")
    with connection.cursor() as cur, _Phase(cur, sizes["single"]) as single:
        for _ in range(sizes["single"]):
            enqueue("noop", payload)
    with connection.cursor() as cur, _Phase(cur, sizes["bulk"]) as bulk:
        for start in range(0, sizes["bulk"], BULK_CHUNK):
            enqueue_many([{"type": "noop", "payload": payload}]
                         * min(BULK_CHUNK, sizes["bulk"] - start))
    with connect(url) as c:
        ids = [row[0] for row in c.execute("SELECT id FROM jobs ORDER BY id LIMIT %s",
                                           [sizes["bulk"]])]
        with c.cursor() as cur, _Phase(cur, len(ids)) as updates:
            for start in range(0, len(ids), 50):
                batch = ids[start:start + 50]
                cur.execute("UPDATE jobs SET status = 'running', started_at = now(),"
                            " attempts = 1, locked_by = 'w', lease_token = gen_random_uuid(),"
                            " lease_expires_at = now() + interval '1 minute'"
                            " WHERE id = ANY(%s)", [batch])
                cur.execute("UPDATE jobs SET status = 'succeeded', finished_at = now(),"
                            " locked_by = NULL, lease_token = NULL, lease_expires_at = NULL"
                            " WHERE id = ANY(%s)", [batch])
    return {"single": single.result, "bulk": bulk.result, "updates": updates.result,
            "load_average": os.getloadavg()[0]}


def main() -> int:
    sizes = _sizes()
    base = server_url()
    name = f"{os.environ.get('BENCH_DB_PREFIX', 'bench')}_search_indexes"
    url = create_db(base, name)
    results: dict = {}
    try:
        env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings",
                   PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "backend")]))
        subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "migrate", "-v", "0"],
                       env=env, cwd=REPO, check=True)
        os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings")
        import django

        django.setup()
        names = list(VARIANTS)
        for r in range(sizes["rounds"]):
            order = names[r % len(names):] + names[:r % len(names)]
            for variant in order:
                _set_variant(url, variant)
                for label, payload in PAYLOADS.items():
                    got = _measure(url, sizes, payload)
                    results.setdefault((label, variant), []).append(got)
                    log(f"search index round {r + 1}, {variant}, {label}: " + ", ".join(
                        f"{kind} {got[kind]['rate']:.0f}/s {got[kind]['cpu_us']:.0f} us "
                        f"{got[kind]['wal_bytes']:.0f} B" for kind in KINDS)
                        + f" (load average {got['load_average']:.1f})")
    finally:
        drop_db(base, name)
    loads = [g["load_average"] for runs in results.values() for g in runs]
    print(f"\nThe payload's trigram index on jobs, in a side table, none; {sizes['rounds']} "
          f"rounds interleaved, medians; {sizes['single']:,} single, {sizes['bulk']:,} bulk "
          f"(chunks of {BULK_CHUNK}); {os.cpu_count()} cores, load average {min(loads):.1f} to "
          f"{max(loads):.1f}")
    for metric, unit in (("rate", "jobs/s, wall clock"), ("cpu_us", "server CPU us a job"),
                         ("wal_bytes", "WAL bytes a job")):
        print(f"\n{unit}: median, and against `none`")
        print(f"  {'':17} {'':7} " + " ".join(f"{v:>20}" for v in VARIANTS))
        for label in PAYLOADS:
            for kind in KINDS:
                def median(variant, kind=kind, label=label, metric=metric):
                    return statistics.median(g[kind][metric] for g in results[(label, variant)])
                floor = median("none")
                cells = [f"{median(v):8,.0f} ({100 * (median(v) / floor - 1):+6.1f} %)"
                         for v in VARIANTS]
                print(f"  {label:17} {kind:7} " + " ".join(f"{c:>20}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
