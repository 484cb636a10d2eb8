"""`make pressure`: a steady stream of jobs while another session holds a snapshot open, this
queue and PgQueuer side by side, each in its own database on the same server, one after the
other.

For each system: its workers at their defaults (this queue: 2 processes x `run_job_workers
--threads 16`, nothing else; PgQueuer: 2 processes x `QueueManager.run()`, batch 10) run while
a producer enqueues PRESSURE_RATE jobs/s (default 1,000: every 10 ms the jobs due, in one
bulk call) for PRESSURE_MINUTES (default 10). From minute PRESSURE_HOLD_FROM to minute
PRESSURE_HOLD_UNTIL (default 2 to 7) another session of that database holds a snapshot open
and idles:

    BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1;

then ends it. No row version deleted or updated after that snapshot was taken can be removed
while it is held, by vacuum or by pruning, so every finished job's dead versions stay in the
table and its indexes: the bloat that breaks queues on PostgreSQL in production. Every
PRESSURE_SAMPLE_SECONDS (default 60) the report gives, for each system:

- throughput: the jobs that started in the interval, per second;
- pickup p95: a job's start (its handler's first line) minus its creation (the moment the
  producer's call that created it began), over the jobs that started in the interval;
- the queue table (`jobs`; PgQueuer's `pgqueuer`) at the interval's end:
  pg_relation_size, pg_indexes_size and n_dead_tup, and the backlog (jobs not yet started);
- all the system's tables with their indexes and TOAST at the interval's end (ours: `jobs`
  and `job_events`, where the history lands; PgQueuer: `pgqueuer`, `pgqueuer_log`,
  `pgqueuer_statistics`).

Then, for each system, the intervals while the snapshot was held against those before it (the
first, the warm-up, left out): the medians of throughput and of pickup p95 and their ratios,
judged against the cell's targets (throughput at least 0.9x, pickup p95 at most 2x), and the
tables' sizes at the first, the largest and the last interval.

When the server runs with autovacuum off (the machine's PostgreSQL 15 here), the harness
vacuums each system's tables every PRESSURE_VACUUM_SECONDS (10) itself, as such an operator
must, and says so. Results: bench/results/pressure-<server>.txt and .json (PRESSURE_RESULTS_DIR
elsewhere), <server> being pg<major version>.

    make pressure                                   10 minutes, 1,000 jobs/s, held 2 to 7
    PRESSURE_MINUTES=2 PRESSURE_HOLD_FROM=0.5 PRESSURE_HOLD_UNTIL=1.5 PRESSURE_RATE=200 \\
        PRESSURE_SAMPLE_SECONDS=20 make pressure    a smoke run (~6 min for both systems)
    PRESSURE_SYSTEMS=ours make pressure             one system only (ours, pgqueuer)

The server is DATABASE_URL's, else the embedded PostgreSQL (as `make bench`). PgQueuer runs
from bench/.venv-peers. The subcommand `produce` is the producer, run by the harness in the
system's own virtualenv.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.common import connect, create_db, drop_db, log, percentile  # noqa: E402
from bench.installs import PEERS_PY, ensure_peers_venv  # noqa: E402

SYSTEMS = ["ours", "pgqueuer"]
# Each system's queue table, and every table vacuumed when the harness must vacuum.
QUEUE_TABLE = {"ours": "jobs", "pgqueuer": "pgqueuer"}
VACUUMED = {"ours": ("jobs", "job_events"),
            "pgqueuer": ("pgqueuer", "pgqueuer_log", "pgqueuer_statistics")}
# Not yet started: ours' queued jobs; PgQueuer's rows still waiting (picked ones are deleted
# when they finish, so `queued` is its backlog).
BACKLOG = {"ours": "SELECT count(*) FROM jobs WHERE status = 'queued'",
           "pgqueuer": "SELECT count(*) FROM pgqueuer WHERE status = 'queued'"}
TICK_SECONDS = 0.01


def settings() -> dict:
    env = os.environ.get
    s = {"minutes": float(env("PRESSURE_MINUTES", 10)), "rate": float(env("PRESSURE_RATE", 1000)),
         "hold_from": float(env("PRESSURE_HOLD_FROM", 2)),
         "hold_until": float(env("PRESSURE_HOLD_UNTIL", 7)),
         "sample_seconds": float(env("PRESSURE_SAMPLE_SECONDS", 60)),
         "vacuum_seconds": float(env("PRESSURE_VACUUM_SECONDS", 10)),
         "systems": [x.strip() for x in env("PRESSURE_SYSTEMS", ",".join(SYSTEMS)).split(",")]}
    unknown = set(s["systems"]) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"unknown PRESSURE_SYSTEMS {sorted(unknown)}; choose from {SYSTEMS}")
    if not 0 <= s["hold_from"] <= s["hold_until"] <= s["minutes"]:
        raise SystemExit("want 0 <= PRESSURE_HOLD_FROM <= PRESSURE_HOLD_UNTIL <= PRESSURE_MINUTES")
    return s


# --- the producer (a subprocess, in the system's own virtualenv) -------------------------------
def produce(system: str, url: str, rate: float, seconds: float, out: str) -> None:
    """Enqueue `rate` jobs/s for `seconds`: every tick, the jobs due so far in one bulk call,
    each with its number `i` in its payload; writes `<i> <creation time>` per job to `out`."""
    if system == "ours":
        os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.settings")
        sys.path.insert(0, os.path.join(REPO, "backend"))
        import django

        django.setup()
        from django_pg_jobqueue import enqueue_many

        def send(first, k):
            enqueue_many([{"type": "bench_stamp", "payload": {"i": i}}
                          for i in range(first, first + k)])
        finish = None
    else:
        import asyncio

        import asyncpg
        from pgqueuer import AsyncpgDriver, Queries

        loop = asyncio.new_event_loop()
        conn = loop.run_until_complete(asyncpg.connect(url))
        queries = Queries(AsyncpgDriver(conn))

        def send(first, k):
            loop.run_until_complete(queries.enqueue(
                ["noop"] * k, [json.dumps({"i": i}).encode() for i in range(first, first + k)],
                [0] * k))

        def finish():
            loop.run_until_complete(conn.close())
    sent = 0
    t0 = time.time()
    with open(out, "w") as f:
        while True:
            now = time.time()
            if now - t0 >= seconds:
                break
            due = int(rate * (now - t0)) - sent
            if due > 0:
                send(sent, due)
                f.write("".join(f"{i} {now}\n" for i in range(sent, sent + due)))
                sent += due
            time.sleep(max(0.0, TICK_SECONDS - (time.time() - now)))
    if finish:
        finish()
    log(f"{system} producer: {sent} jobs in {time.time() - t0:.0f}s")


# --- the harness -----------------------------------------------------------------------------
def server_tag(base: str) -> str:
    with connect(base) as c:
        return f"pg{int(c.execute('SHOW server_version_num').fetchone()[0]) // 10000}"


def autovacuum_on(base: str) -> bool:
    with connect(base) as c:
        return c.execute("SHOW autovacuum").fetchone()[0] == "on"


class Holder(threading.Thread):
    """Takes the snapshot at `start` (epoch s), idles in it, ends it at `end`."""

    def __init__(self, url: str, start: float, end: float, stopping: threading.Event):
        super().__init__(daemon=True)
        self.url, self.start_at, self.end_at, self.stopping = url, start, end, stopping
        self.held: list[float] = []

    def run(self):
        if self.stopping.wait(max(0.0, self.start_at - time.time())):
            return
        with connect(self.url, autocommit=False) as c:
            c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            c.execute("SELECT 1")
            self.held.append(time.time())
            log("snapshot held")
            self.stopping.wait(max(0.0, self.end_at - time.time()))
            c.rollback()
            self.held.append(time.time())
            log("snapshot released")


class Vacuumer(threading.Thread):
    """VACUUM of the system's tables every `every` seconds (a server without autovacuum)."""

    def __init__(self, url: str, tables: tuple[str, ...], every: float,
                 stopping: threading.Event):
        super().__init__(daemon=True)
        self.url, self.tables, self.every, self.stopping = url, tables, every, stopping
        self.runs = 0

    def run(self):
        with connect(self.url) as c:
            while not self.stopping.wait(self.every):
                c.execute(f"VACUUM {', '.join(self.tables)}")
                self.runs += 1


def sizes(url: str, system: str) -> dict:
    table = QUEUE_TABLE[system]
    with connect(url) as c:
        heap, index, dead = c.execute(
            "SELECT pg_relation_size(%(t)s::regclass), pg_indexes_size(%(t)s::regclass), "
            "(SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = %(t)s::regclass)",
            {"t": table}).fetchone()
        backlog = c.execute(BACKLOG[system]).fetchone()[0]
        # Every table of the system, heap, indexes and TOAST (a partitioned one: its leaves).
        total = sum(c.execute(
            "WITH leaves AS (SELECT relid FROM pg_partition_tree(%(t)s::regclass) WHERE isleaf"
            " UNION SELECT %(t)s::regclass WHERE (SELECT relkind FROM pg_class"
            " WHERE oid = %(t)s::regclass) = 'r')"
            " SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM leaves",
            {"t": t}).fetchone()[0] for t in VACUUMED[system])
    return {"t": time.time(), "heap": heap, "index": index, "dead": dead or 0,
            "backlog": backlog, "all_tables": int(total)}


def start_workers(system: str, url: str, stamp_file: str, logdir: str) -> list:
    if system == "ours":
        from bench.ours import start_workers as ours_workers
        from bench.run import OURS_DEFAULTS

        procs, threads = (int(x) for x in OURS_DEFAULTS.split("x"))
        return ours_workers(url, procs, threads, None, logdir, {"BENCH_STAMP_FILE": stamp_file})
    # peer_pgqueuer's worker without --drain: QueueManager.run() in continuous mode, its batch
    # the default (10); the noop entrypoint stamps each job's start.
    return [subprocess.Popen([PEERS_PY, os.path.join(HERE, "peer_pgqueuer.py"), "worker",
                              "--url", url, "--batch", "10"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, BENCH_STAMP_FILE=stamp_file))
            for _ in range(2)]


def stop_workers(workers: list) -> None:
    from bench.ours import stop_workers as stop

    stop(workers)


def install(system: str, url: str) -> None:
    if system == "ours":
        subprocess.run([sys.executable, os.path.join(REPO, "manage.py"), "migrate", "-v", "0"],
                       check=True, cwd=REPO,
                       env=dict(os.environ, DATABASE_URL=url,
                                DJANGO_SETTINGS_MODULE="bench.settings"))
        return
    subprocess.run([PEERS_PY, "-c", "import asyncio, asyncpg, sys\n"
                    "from pgqueuer import AsyncpgDriver, Queries\n"
                    "async def go():\n"
                    "    c = await asyncpg.connect(sys.argv[1])\n"
                    "    await Queries(AsyncpgDriver(c)).install()\n"
                    "    await c.close()\n"
                    "asyncio.run(go())", url], check=True)


def wait_ready(system: str, url: str) -> None:
    """The workers are up: ours registered in job_workers; PgQueuer's connected."""
    deadline = time.time() + 60
    while time.time() < deadline:
        with connect(url) as c:
            if system == "ours":
                ready = c.execute("SELECT count(*) FROM job_workers").fetchone()[0] > 0
            else:  # each worker process holds its one connection
                ready = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                  "current_database() AND pid <> pg_backend_pid()"
                                  ).fetchone()[0] >= 2
        if ready:
            time.sleep(1.0)
            return
        time.sleep(0.2)
    log(f"{system}: workers not seen ready after 60 s; going on")


def read_pairs(path: str) -> dict[int, float]:
    out: dict[int, float] = {}
    with open(path) as f:
        for line in f:
            i, t = line.split()
            out.setdefault(int(i), float(t))
    return out


def measure(system: str, base: str, s: dict, prefix: str, vacuum: bool) -> dict:
    db = f"{prefix}_pressure_{system}"
    url = create_db(base, db)
    logdir = tempfile.mkdtemp(prefix=f"bench-pressure-{system}-")
    stamp_file, created_file = (os.path.join(logdir, n) for n in ("started.txt", "created.txt"))
    open(stamp_file, "w").close()
    try:
        install(system, url)
        workers = start_workers(system, url, stamp_file, logdir)
        stopping = threading.Event()
        try:
            wait_ready(system, url)
            seconds = s["minutes"] * 60
            python = sys.executable if system == "ours" else PEERS_PY
            producer = subprocess.Popen(
                [python, os.path.abspath(__file__), "produce", "--system", system, "--url", url,
                 "--rate", str(s["rate"]), "--seconds", str(seconds), "--out", created_file],
                cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
            t0 = time.time()
            holder = Holder(url, t0 + s["hold_from"] * 60, t0 + s["hold_until"] * 60, stopping)
            threads = [holder]
            vacuumer = None
            if vacuum:
                vacuumer = Vacuumer(url, VACUUMED[system], s["vacuum_seconds"], stopping)
                threads.append(vacuumer)
            for t in threads:
                t.start()
            samples = [sizes(url, system)]
            for k in range(1, math.ceil(seconds / s["sample_seconds"] - 1e-9) + 1):
                time.sleep(max(0.0, t0 + k * s["sample_seconds"] - time.time()))
                samples.append(sizes(url, system))
                log(f"{system} t+{k * s['sample_seconds']:.0f}s: {samples[-1]}")
            producer.wait(timeout=120)
            # The tail: what the workers still had to do when the producer stopped.
            deadline = time.time() + 60
            while time.time() < deadline and sizes(url, system)["backlog"]:
                time.sleep(0.5)
        finally:
            stopping.set()
            log(f"{system}: stopping the workers")
            stop_workers(workers)
            log(f"{system}: workers stopped")
        created, started = read_pairs(created_file), read_pairs(stamp_file)
        rows = table_rows(t0, created, started, samples, s)
        return {"system": system, "t0": t0, "samples": samples, "minutes": rows,
                "summary": summarize(rows, s),
                "held": holder.held, "produced": len(created), "started": len(started),
                "vacuums_by_harness": vacuumer.runs if vacuumer else None}
    finally:
        drop_db(base, db)
        shutil.rmtree(logdir, ignore_errors=True)


def table_rows(t0, created, started, samples, s) -> list[dict]:
    """One row per sample interval: jobs started in it per second, their pickup p95, and the
    sizes at its end."""
    step = s["sample_seconds"]
    rows = []
    for k, sample in enumerate(samples[1:], start=1):
        lo, hi = t0 + (k - 1) * step, t0 + k * step
        pickups = [(t - created[i]) * 1000 for i, t in started.items()
                   if lo <= t < hi and i in created]
        rows.append({"end_seconds": k * step,
                     "held": lo < t0 + s["hold_until"] * 60 and hi > t0 + s["hold_from"] * 60,
                     "throughput": len(pickups) / step,
                     "pickup_p50_ms": percentile(pickups, 50) if pickups else None,
                     "pickup_p95_ms": percentile(pickups, 95) if pickups else None,
                     "pickup_p99_ms": percentile(pickups, 99) if pickups else None,
                     "heap_mb": sample["heap"] / 1e6, "index_mb": sample["index"] / 1e6,
                     "dead": sample["dead"], "backlog": sample["backlog"],
                     "all_tables_mb": sample["all_tables"] / 1e6})
    return rows


# The cell's targets: throughput while the snapshot is held at least this share of before it,
# pickup p95 at most this multiple of before it.
HELD_THROUGHPUT_AT_LEAST, HELD_PICKUP_AT_MOST = 0.9, 2.0


def summarize(rows: list[dict], s: dict) -> dict:
    """Before the hold (intervals wholly before it, but the first) against during it (the
    held intervals):
    medians of throughput and pickup p95, their ratios, and the growth of the tables."""
    before = [r for r in rows if r["end_seconds"] <= s["hold_from"] * 60]
    before = before[1:] if len(before) > 1 else before  # the first interval is the warm-up
    during = [r for r in rows if r["held"]]

    def med(part, key):
        values = [r[key] for r in part if r[key] is not None]
        return statistics.median(values) if values else None

    out = {k: {"before": med(before, k), "during": med(during, k)}
           for k in ("throughput", "pickup_p95_ms")}
    for k, v in out.items():
        v["ratio"] = v["during"] / v["before"] if v["before"] and v["during"] else None
    t, p = out["throughput"]["ratio"], out["pickup_p95_ms"]["ratio"]
    out["met"] = None if t is None or p is None else (
        t >= HELD_THROUGHPUT_AT_LEAST and p <= HELD_PICKUP_AT_MOST)
    if rows:
        out["growth"] = {k: [rows[0][k], max(r[k] for r in rows), rows[-1][k]]
                         for k in ("heap_mb", "index_mb", "all_tables_mb", "dead")}
    return out


def _ratio_text(v: dict, unit: str, fmt: str) -> str:
    if v["ratio"] is None:
        return "-"
    return f"{v['ratio']:.2f}x ({v['during']:{fmt}} vs {v['before']:{fmt}} {unit})"


def report(res: dict, s: dict, facts: dict) -> str:
    systems = [x for x in s["systems"] if x in res]
    lines = [f"pressure cell, {facts['date']}: {s['rate']:.0f} jobs/s for {s['minutes']:g} min, "
             f"a snapshot held from minute {s['hold_from']:g} to {s['hold_until']:g}; "
             f"rows every {s['sample_seconds']:g} s",
             f"server: PostgreSQL {facts['server_version']}, autovacuum {facts['autovacuum']}"
             + (f" (the harness vacuumed the queue's tables every {s['vacuum_seconds']:g} s)"
                if facts["autovacuum"] != "on" else "")
             + f"; machine: {facts['cpus']} CPUs, load average {facts['load_before']} before, "
               f"{facts['load_after']} after",
             "workers at their defaults: ours 2 x run_job_workers --threads 16; "
             "pgqueuer 2 x QueueManager.run() (batch 10)",
             "throughput: jobs started per second in the interval; pickup p95 and p99: start "
             "minus creation; the queue table's (ours: jobs, PgQueuer: pgqueuer) pg_relation_size, "
             "pg_indexes_size and n_dead_tup, the backlog, and all the system's tables with "
             "their indexes (ours: jobs, job_events; PgQueuer: pgqueuer, pgqueuer_log, "
             "pgqueuer_statistics) at the interval's end; * the snapshot was held during the "
             "interval",
             ""]
    cols = "  jobs/s  p95 ms  p99 ms  table MB  idx MB      dead  backlog  all MB"
    lines.append(f"{'':10}" + "".join(f"| {x:<{len(cols) - 2}}" for x in systems))
    lines.append(f"{'t (s)':>8}  " + "".join(f"|{cols}" for _ in systems))
    n = max(len(res[x]["minutes"]) for x in systems)
    for k in range(n):
        cells, mark, end = [], " ", None
        for x in systems:
            rows = res[x]["minutes"]
            if k >= len(rows):
                cells.append(" " * len(cols))
                continue
            r = rows[k]
            end, mark = r["end_seconds"], "*" if r["held"] else mark
            p95, p99 = ("-" if r.get(key) is None else f"{r[key]:.1f}"
                        for key in ("pickup_p95_ms", "pickup_p99_ms"))
            cells.append(f"{r['throughput']:8.0f}{p95:>8}{p99:>8}{r['heap_mb']:10.1f}"
                         f"{r['index_mb']:8.1f}{r['dead']:10,}{r['backlog']:9,}"
                         f"{r['all_tables_mb']:8.1f}")
        lines.append(f"{end:>8.0f}{mark} " + "".join(f"|{c}" for c in cells))
    lines.append("")
    for x in systems:
        r = res[x]
        lines.append(f"{x}: produced {r['produced']:,}, started {r['started']:,}"
                     + (f", {r['vacuums_by_harness']} vacuums by the harness"
                        if r["vacuums_by_harness"] is not None else ""))
        m = summarize(r["minutes"], s)
        verdict = {None: "n/a", True: "MET", False: "MISSED"}[m["met"]]
        lines.append(f"  while held against before: throughput "
                     f"{_ratio_text(m['throughput'], 'jobs/s', '.0f')}, pickup p95 "
                     f"{_ratio_text(m['pickup_p95_ms'], 'ms', '.1f')}; want >= "
                     f"{HELD_THROUGHPUT_AT_LEAST}x and <= {HELD_PICKUP_AT_MOST}x: {verdict}")
        if m.get("growth"):
            g = m["growth"]
            lines.append(f"  first / largest / last interval: queue table {g['heap_mb'][0]:.1f} / "
                         f"{g['heap_mb'][1]:.1f} / {g['heap_mb'][2]:.1f} MB, its indexes "
                         f"{g['index_mb'][0]:.1f} / {g['index_mb'][1]:.1f} / "
                         f"{g['index_mb'][2]:.1f} MB, all its tables "
                         f"{g['all_tables_mb'][0]:.1f} / {g['all_tables_mb'][1]:.1f} / "
                         f"{g['all_tables_mb'][2]:.1f} MB, dead tuples {g['dead'][0]:,} / "
                         f"{g['dead'][1]:,} / {g['dead'][2]:,}")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("produce", help="the producer (run by the harness)")
    p.add_argument("--system", choices=SYSTEMS, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "produce":
        produce(args.system, args.url, args.rate, args.seconds, args.out)
        return 0
    from bench.run import server_facts, server_url

    s = settings()
    base = server_url()
    if "pgqueuer" in s["systems"]:
        ensure_peers_venv()
    facts = {**server_facts(base), "autovacuum": "on" if autovacuum_on(base) else "off",
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "cpus": os.cpu_count(), "load_before": " ".join(
                 f"{x:.2f}" for x in os.getloadavg())}
    prefix = os.environ.get("BENCH_DB_PREFIX", "bench")
    res = {}
    for system in s["systems"]:
        log(f"--- {system} ---")
        res[system] = measure(system, base, s, prefix, facts["autovacuum"] != "on")
    facts["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    text = report(res, s, facts)
    print("\n" + text, end="")
    results_dir = os.environ.get("PRESSURE_RESULTS_DIR", os.path.join(HERE, "results"))
    os.makedirs(results_dir, exist_ok=True)
    name = f"pressure-{server_tag(base)}"
    with open(os.path.join(results_dir, name + ".txt"), "w") as f:
        f.write(text)
    with open(os.path.join(results_dir, name + ".json"), "w") as f:
        json.dump({"settings": s, "server": facts, "results": res}, f, indent=1, default=str)
    print(f"\nwrote {os.path.join(results_dir, name)}.txt and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
