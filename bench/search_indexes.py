"""What the job search's two trigram indexes (migration 0012: jobs_payload_trgm_idx over the
payload's JSON text, jobs_last_error_trgm_idx over the last error, partial) cost enqueue:
single and bulk enqueue with them and without them, interleaved (with, without, without,
with, ...) over several rounds, medians; for an empty payload (what `make bench` enqueues)
and for a payload of a realistic size (about 300 bytes of JSON text). And what they cost the
job row's later updates: a claim and a completion each change indexed columns, so each writes
a new row version with entries in every index, the payload's trigrams included. Priced here by
two plain UPDATEs of the same shape (to running, then to succeeded, 50 rows a statement), not
by a worker's drain.

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

INDEXES = {
    "jobs_payload_trgm_idx": "CREATE INDEX jobs_payload_trgm_idx ON jobs "
                             "USING gin ((payload::text) gin_trgm_ops)",
    "jobs_last_error_trgm_idx": "CREATE INDEX jobs_last_error_trgm_idx ON jobs "
                                "USING gin (last_error gin_trgm_ops) WHERE last_error IS NOT NULL",
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


def _sizes() -> dict:
    if os.environ.get("BENCH_QUICK"):
        return {"single": 500, "bulk": 5_000, "rounds": 2}
    return {"single": 2_000, "bulk": 20_000, "rounds": 3}


def _set_indexes(url: str, present: bool) -> None:
    with connect(url) as c:
        for name, create in INDEXES.items():
            c.execute(f"DROP INDEX IF EXISTS {name}")
            if present:
                c.execute(create)


def _measure(url: str, sizes: dict, payload: dict) -> dict:
    from django_pg_jobqueue import enqueue, enqueue_many

    with connect(url) as c:
        c.execute("TRUNCATE jobs, job_events RESTART IDENTITY CASCADE")
    t0 = time.perf_counter()
    for _ in range(sizes["single"]):
        enqueue("noop", payload)
    single = sizes["single"] / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for start in range(0, sizes["bulk"], BULK_CHUNK):
        enqueue_many([{"type": "noop", "payload": payload}] * min(BULK_CHUNK, sizes["bulk"] - start))
    bulk = sizes["bulk"] / (time.perf_counter() - t0)
    with connect(url) as c:
        ids = [row[0] for row in c.execute("SELECT id FROM jobs ORDER BY id LIMIT %s",
                                           [sizes["bulk"]])]
        t0 = time.perf_counter()
        for start in range(0, len(ids), 50):
            batch = ids[start:start + 50]
            c.execute("UPDATE jobs SET status = 'running', started_at = now(), attempts = 1,"
                      " locked_by = 'w', lease_token = gen_random_uuid(),"
                      " lease_expires_at = now() + interval '1 minute' WHERE id = ANY(%s)",
                      [batch])
            c.execute("UPDATE jobs SET status = 'succeeded', finished_at = now(),"
                      " locked_by = NULL, lease_token = NULL, lease_expires_at = NULL"
                      " WHERE id = ANY(%s)", [batch])
        updates = len(ids) / (time.perf_counter() - t0)
    return {"single": single, "bulk": bulk, "updates": updates,
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
        for r in range(sizes["rounds"]):
            order = [True, False] if r % 2 == 0 else [False, True]
            for present in order:
                _set_indexes(url, present)
                for label, payload in PAYLOADS.items():
                    got = _measure(url, sizes, payload)
                    results.setdefault((label, present), []).append(got)
                    log(f"search indexes round {r + 1}, {'with' if present else 'without'}, "
                        f"{label}: single {got['single']:.0f}/s, bulk {got['bulk']:.0f}/s, "
                        f"claim+complete updates {got['updates']:.0f} jobs/s "
                        f"(load average {got['load_average']:.1f})")
    finally:
        drop_db(base, name)
    loads = [g["load_average"] for runs in results.values() for g in runs]
    print(f"\nEnqueue with and without the search's trigram indexes, {sizes['rounds']} rounds "
          f"interleaved, medians; {sizes['single']:,} single, {sizes['bulk']:,} bulk (chunks of "
          f"{BULK_CHUNK}); {os.cpu_count()} cores, load average {min(loads):.1f} to "
          f"{max(loads):.1f}")
    for label in PAYLOADS:
        for kind in ("single", "bulk", "updates"):
            with_ = statistics.median(g[kind] for g in results[(label, True)])
            without = statistics.median(g[kind] for g in results[(label, False)])
            print(f"  {label:17} {kind:7}: with {with_:8,.0f}/s, without {without:8,.0f}/s: "
                  f"the indexes cost {100 * (1 - with_ / without):5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
