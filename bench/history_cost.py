"""What the history costs on the happy path: rows, index entries and WAL bytes per job.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/anything python bench/history_cost.py [-n 5000]

Creates a scratch database beside the one DATABASE_URL names (`<name>_hcost`), migrates it,
enqueues N no-op jobs with `enqueue_many` (batches of 500), claims them in batches of 16
(`services.claim`, the worker's statement) and completes them in batches of 16
(`complete_many`, the completer's statement), then drops the scratch database. For each phase
it prints, per job: WAL bytes (read back with pg_walinspect between pg_current_wal_lsn()
before and after: only the records of the scratch database and of its transactions, so other
databases writing meanwhile do not count; FPI B is the part made of full-page images, which
depends on where checkpoints fall), rows inserted / updated / HOT-updated per table
(pg_stat_user_tables), index entries written (rows inserted into each index: every insert and
every non-HOT update adds one entry to each index whose predicate the new row version
satisfies), and bytes the tables and indexes grew. Counts, not timings: load does not change
them (except WAL, see above, and the page-split share of index growth).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.common import create_db, drop_db, with_dbname  # noqa: E402

TABLES = ("jobs", "job_events")

STATS = """
SELECT CASE WHEN c.relname LIKE 'job_events%%' THEN 'job_events' ELSE c.relname END,
       sum(s.n_tup_ins), sum(s.n_tup_upd), sum(s.n_tup_hot_upd),
       sum(pg_table_size(c.oid))
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE c.relname = 'jobs' OR c.relname LIKE 'job_events%%'
GROUP BY 1
"""
INDEX_SIZES = """
SELECT CASE WHEN t.relname LIKE 'job_events%%' THEN 'job_events' ELSE t.relname END, count(*),
       sum(pg_relation_size(i.indexrelid))
FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
WHERE (t.relname = 'jobs' OR t.relname LIKE 'job_events%%') AND t.relkind = 'r'
GROUP BY 1
"""
# An index entry per index whose predicate holds, for each row version a phase wrote without
# HOT: count them exactly by evaluating each index's predicate on the rows as they are now
# (every row of the run is in the same state after each phase).
INDEX_LIST = """
SELECT t.relname, ic.relname, am.amname, pg_get_expr(i.indpred, i.indrelid)
FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
WHERE t.relname IN ('jobs', 'job_events') ORDER BY 1, 2
"""


# The WAL this database wrote between two LSNs: the records whose blocks are in it, and the
# records (commits) of the transactions that wrote those; other databases on the server write
# WAL meanwhile, and this leaves theirs out. fpi: the full-page images among them (the first
# change to a page after a checkpoint: depends on when checkpoints fall).
OUR_WAL = """
WITH r AS (SELECT * FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(end)s::pg_lsn)),
ours AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE %(db)s AND xid <> '0')
SELECT coalesce(sum(record_length), 0), coalesce(sum(fpi_length), 0) FROM r
WHERE block_ref LIKE %(db)s OR xid IN (SELECT xid FROM ours)
"""


OUR_WAL_BY_KIND = """
WITH r AS (SELECT * FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(end)s::pg_lsn)),
ours AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE %(db)s AND xid <> '0')
SELECT resource_manager || '/' || split_part(record_type, ' ', 1)
       || CASE WHEN block_ref LIKE %(events)s THEN ' (job_events)'
               WHEN block_ref LIKE %(jobs)s THEN ' (jobs)' ELSE '' END,
       count(*), sum(record_length) FROM r
WHERE block_ref LIKE %(db)s OR xid IN (SELECT xid FROM ours)
GROUP BY 1 ORDER BY 3 DESC
"""


def snapshot(cur):
    cur.execute("SELECT pg_stat_force_next_flush()")
    cur.execute("SELECT pg_stat_clear_snapshot()")
    cur.execute(STATS)
    stats = {r[0]: [int(v) for v in r[1:]] for r in cur.fetchall()}
    cur.execute(INDEX_SIZES)
    sizes = {r[0]: (int(r[1]), int(r[2])) for r in cur.fetchall()}
    cur.execute("SELECT pg_current_wal_flush_lsn()")
    return stats, sizes, cur.fetchone()[0]


def index_entries(cur, phase_rows: dict[str, str]) -> dict[str, int]:
    """Entries the phase added to the indexes of each table: for each index, the rows the phase
    wrote without HOT (given as a WHERE clause per table) that satisfy its predicate."""
    cur.execute(INDEX_LIST)
    out = {t: 0 for t in TABLES}
    for table, _index, am, pred in cur.fetchall():
        if am == "brin" or table not in phase_rows:
            continue  # BRIN: one summary per 32 pages, not an entry per row
        cur.execute(f"SELECT count(*) FROM {table} WHERE ({phase_rows[table]})"
                    + (f" AND ({pred})" if pred else ""))
        out[table] += cur.fetchone()[0]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--jobs", type=int, default=5000, help="jobs to run (default 5000)")
    ap.add_argument("--records", action="store_true",
                    help="also print each phase's WAL by record type, per job")
    ap.add_argument("--without-fk", action="store_true",
                    help="what-if: drop job_events' foreign key first, to show its share")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        sys.exit("set DATABASE_URL (a server where a scratch database may be created)")
    name = url.rsplit("/", 1)[1].split("?")[0] + "_hcost"
    scratch = create_db(with_dbname(url, "postgres"), name)
    try:
        os.environ["DATABASE_URL"] = scratch
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        if args.without_fk:
            with connection.cursor() as cur:
                cur.execute("ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_e9646c53_fk_jobs_id")
        rows = run(connection, args.jobs, args.records)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_db(with_dbname(url, "postgres"), name)
    print_table(rows, args.jobs)
    return 0


def run(connection, n: int, records: bool = False):
    from django_pg_jobqueue import services
    from django_pg_jobqueue.services.lifecycle import Completion

    cur = connection.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    cur.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
    dboid = cur.fetchone()[0]

    def our_wal(l0, l1):
        # Read at once: on a busy server the segments are recycled within minutes.
        cur.execute("SELECT %s::pg_lsn >= %s::pg_lsn", [l0, l1])
        if cur.fetchone()[0]:
            return 0, 0
        try:
            cur.execute(OUR_WAL, {"start": l0, "end": l1, "db": f"%/{dboid}/%"})
        except Exception as exc:  # recycled already: a busy server; run it again when quieter
            sys.exit(f"the WAL of a phase was recycled before it could be read ({exc});"
                     " run again with fewer jobs (-n) or on a quieter server")
        out = tuple(int(v) for v in cur.fetchone())
        if records:
            cur.execute("SELECT string_agg(oid::text, '|') FROM pg_class WHERE relname LIKE"
                        " 'job_events%%' AND relkind IN ('r', 'i')")
            ev = cur.fetchone()[0]
            cur.execute("SELECT string_agg(relfilenode::text, '|') FROM pg_class"
                        " WHERE relname LIKE 'job_events%%' AND relkind IN ('r', 'i')")
            ev_nodes = cur.fetchone()[0]
            cur.execute(OUR_WAL_BY_KIND.replace("LIKE %(events)s", "~ %(events)s")
                        .replace("LIKE %(jobs)s", "~ %(jobs)s"),
                        {"start": l0, "end": l1, "db": f"%/{dboid}/%",
                         "events": f"/{dboid}/({ev}|{ev_nodes}) ", "jobs": f"/{dboid}/"})
            for kind, count, size in cur.fetchall():
                print(f"    {kind:<40}{count / n:>7.2f} rec{size / n:>8.0f} B")
        return out
    cur.execute("SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid IN "
                "('jobs'::regclass, 'job_events'::regclass) ORDER BY 1")
    print("indexes:\n  " + "\n  ".join(r[0] for r in cur.fetchall()))
    phases = []
    before = snapshot(cur)
    for start in range(0, n, 500):
        services.enqueue_many([{"type": "noop", "payload": {}} for _ in range(min(500, n - start))])
    after = snapshot(cur)
    wals = [our_wal(before[2], after[2])]
    phases.append(("enqueue", before, after,
                   index_entries(cur, {"jobs": "true", "job_events": "kind = 'created'"})))
    claimed = []
    before = after
    while len(claimed) < n:
        got = services.claim(worker_ids=[f"w-{i}" for i in range(16)])
        if not got:
            break
        claimed += got
    after = snapshot(cur)
    wals.append(our_wal(before[2], after[2]))
    phases.append(("claim", before, after,
                   index_entries(cur, {"jobs": "true", "job_events": "kind = 'claimed'"})))
    before = after
    for start in range(0, len(claimed), 16):
        services.complete_many([Completion(c.id, c.lease_token, c.worker_id, None)
                                for c in claimed[start:start + 16]])
    after = snapshot(cur)
    wals.append(our_wal(before[2], after[2]))
    phases.append(("complete", before, after,
                   index_entries(cur, {"jobs": "true", "job_events": "kind = 'succeeded'"})))
    out = []
    cur.execute("SELECT count(*) FROM jobs WHERE status = 'succeeded'")
    assert cur.fetchone()[0] == n, "every job must have succeeded"
    for (phase, (s0, z0, _l0), (s1, z1, _l1), entries), (wal, fpi) in zip(phases, wals,
                                                                          strict=True):
        row = {"phase": phase, "wal": wal, "fpi": fpi}
        for t in TABLES:
            ins, upd, hot, size = (a - b for a, b in zip(s1.get(t, [0] * 4), s0.get(t, [0] * 4),
                                                         strict=True))
            nidx = z1.get(t, (0, 0))[0]
            row[t] = dict(ins=ins, upd=upd, hot=hot, size=size,
                          idx_bytes=z1.get(t, (0, 0))[1] - z0.get(t, (0, 0))[1],
                          idx_entries=entries[t] if upd != hot or ins else 0, nidx=nidx)
            if upd and hot == upd:
                row[t]["idx_entries"] = 0
        out.append(row)
    return out


def print_table(rows, n: int) -> None:
    head = (f"{'per job (N=' + str(n) + ')':<16}{'WAL B':>8}{'FPI B':>7}"
            f"{'jobs ins':>9}{'upd':>5}{'HOT':>5}{'idx+':>6}{'heap B':>8}{'idx B':>7}"
            f"{'ev ins':>8}{'idx+':>6}{'heap B':>8}{'idx B':>7}")
    print(head)
    total = {"wal": 0, "fpi": 0}
    keys = ("ins", "upd", "hot", "idx_entries", "size", "idx_bytes")
    for t in TABLES:
        total[t] = dict.fromkeys(keys, 0)
    for r in rows + [None]:
        if r is None:
            r, label = total, "total"
        else:
            label = r["phase"]
            total["wal"] += r["wal"]
            total["fpi"] += r["fpi"]
            for t in TABLES:
                for k in keys:
                    total[t][k] += r[t][k]
        j, e = r["jobs"], r["job_events"]
        print(f"{label:<16}{r['wal'] / n:>8.0f}{r['fpi'] / n:>7.0f}"
              f"{j['ins'] / n:>9.2f}{j['upd'] / n:>5.2f}{j['hot'] / n:>5.2f}"
              f"{j['idx_entries'] / n:>6.2f}{j['size'] / n:>8.0f}{j['idx_bytes'] / n:>7.0f}"
              f"{e['ins'] / n:>8.2f}{e['idx_entries'] / n:>6.2f}{e['size'] / n:>8.0f}"
              f"{e['idx_bytes'] / n:>7.0f}")


if __name__ == "__main__":
    sys.exit(main())
