"""`make bench`: this queue against PgQueuer, Procrastinate, django-tasks-db, graphile-worker
(Node.js), Oban for Python and the incumbent, Celery with its Redis broker, side by side on one
machine, plus the raw-SQL ceiling of this design and pgbench for scale. Every system is drained
at its defaults (only the number of processes chosen, and for ours `--threads`) and at the best
of several configurations; the report prints the ratio at defaults first (ours at defaults vs
PgQueuer's best, and vs graphile-worker's), then the tuned best, then the enqueue ratios, then
the table and the speed targets, met or missed.

    make bench                       full size (20,000 jobs, 3 runs each, ~40 min)
    BENCH_QUICK=1 make bench         a faster variant (5,000 jobs, smaller scale tests)
    BENCH_N=2000 BENCH_RUNS=1 ...    the drains' job count and the runs, for a check
    BENCH_SYSTEMS=ours,raw,pgbench   only some parts (ours, pgqueuer, procrastinate,
                                     django-tasks-db, graphile-worker, oban, celery, raw,
                                     pgbench)

Celery needs a Redis server at BENCH_REDIS_URL (default redis://127.0.0.1:6379; it uses and
flushes database number BENCH_REDIS_DB, default 13); when none answers it is skipped, and
the report says so. graphile-worker needs Node.js (`node` and `npm` on PATH): it is installed
into bench/peers/graphile/ from its own lock file (`npm ci`); without Node.js it is skipped,
and the report says so.

The server is DATABASE_URL's, else the embedded PostgreSQL. Each system gets its own
database, created and dropped here. The Python peers run from bench/.venv-peers (created on
first use from bench/requirements-peers.txt, on Python 3.12+ as Oban for Python needs:
PEERS_PYTHON picks the interpreter), never from the project's environment. Each figure is the
median of the runs, with its range; the table gives the ratios to the best peer and to the
raw-SQL ceiling, and the JSON goes to bench/results/<mode>.json.
"""
import contextlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.common import connect, create_db, drop_db, log, with_dbname  # noqa: E402
from bench.installs import PEERS_PY, ensure_graphile, ensure_peers_venv  # noqa: E402

PEERS = ["pgqueuer", "procrastinate", "django-tasks-db", "graphile-worker", "oban", "celery"]
ADAPTERS = {"pgqueuer": "peer_pgqueuer.py", "procrastinate": "peer_procrastinate.py",
            "django-tasks-db": "peer_django_tasks_db.py", "graphile-worker": "peer_graphile.py",
            "oban": "peer_oban.py", "celery": "peer_celery.py"}
# Each peer's MODES key: the configurations its best drain tries.
CONFIG_KEYS = {"pgqueuer": "pgq_configs", "procrastinate": "proc_configs",
               "django-tasks-db": "dtdb_configs", "graphile-worker": "graphile_configs",
               "oban": "oban_configs", "celery": "celery_configs"}
# Ours at defaults: processes x --threads, nothing else chosen (the defaults the speed targets name: 2 x 16).
OURS_DEFAULTS = "2x16"
# Every peer's drain at defaults runs as many worker processes as ours.
DEFAULTS_PROCS = "2"
ALL = ["ours", *PEERS, "raw", "pgbench"]

# name: (sizes for every part). Smoke is what the test suite runs: tiny, one run.
MODES = {
    "full": dict(n=20000, runs=3, pickup_n=200, claim_terminal=1_000_000, claim_queued=10_000,
                 claim_samples=1000, rss_n=100_000, pgbench_seconds=10, pgbench_scale=10,
                 ours_configs="2x32x50x0,2x64x100x0,2x32x100x64,2x32x200x128,2x16x200x128",
                 pgq_configs="1x10,1x100,2x100,2x200,3x100", proc_configs="2x10,2x50", dtdb_configs="2",
                 # graphile-worker: processes x concurrent jobs x localQueue x completion batch
                 # delay (ms): its documented best, on 1 and 2 processes. Oban: processes x
                 # queue limit.
                 graphile_configs="1x24x500x0,2x24x500x0", oban_configs="1x20,1x50,1x100,2x50",
                 celery_configs="1xpreforkx2x4,1xpreforkx2x64,2xpreforkx2x64,1xthreadsx16x64,"
                                "2xsolox1x64", api_seconds=10),
    "quick": dict(n=5000, runs=3, pickup_n=100, claim_terminal=200_000, claim_queued=10_000,
                  claim_samples=300, rss_n=20_000, pgbench_seconds=5, pgbench_scale=5,
                  ours_configs="2x32x50x0,2x32x200x128,2x16x200x128", pgq_configs="1x100,2x100",
                  proc_configs="2x50", dtdb_configs="2",
                  graphile_configs="1x24x500x0,2x24x500x0", oban_configs="1x50,2x50",
                  celery_configs="1xpreforkx2x64,1xthreadsx16x64,2xsolox1x64", api_seconds=5),
    "smoke": dict(n=300, runs=1, pickup_n=20, claim_terminal=2000, claim_queued=200,
                  claim_samples=50, rss_n=300, pgbench_seconds=1, pgbench_scale=1,
                  ours_configs="1x2x10x4", pgq_configs="1x10", proc_configs="1x10",
                  dtdb_configs="1", graphile_configs="1x4x10x0", oban_configs="1x10",
                  celery_configs="1xsolox1x4", api_seconds=1),
}

# The speed targets: (name, what it says, value). The ratios are to PgQueuer's figure (its
# best configuration for the drains), or graphile-worker's where named; machine CPU per drained
# job is theirs over ours, so 1.0x means no more than theirs.
TARGETS = [
    ("drain_defaults", "x PgQueuer best", 1.2), ("drain_best", "x PgQueuer best", 1.5),
    ("drain_defaults_graphile", "x graphile-worker best", 1.0),
    ("drain_best_raw", "x raw SQL", 0.8), ("drain_cpu", "x PgQueuer", 1.0),
    ("drain_cpu_graphile", "x graphile-worker", 1.0),
    ("enqueue_single", "x PgQueuer", 1.0), ("enqueue_bulk", "x PgQueuer", 1.2),
    ("drain_stale_stats", "x after ANALYZE", 0.9),
    ("pickup_p95", "ms at most", 6.0), ("claim_p99", "ms at most", 5.0),
    ("rss_after", "MB at most", 150.0), ("api_post_rps", "req/s at least", 1000.0),
    ("api_post_p95", "ms at most", 50.0),
]


def server_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    out = subprocess.run([sys.executable, os.path.join(REPO, "backend/config/embedded_pg.py"),
                          "url"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def run_adapter(python: str, script: str, args: list[str], timeout: float) -> dict:
    cmd = [python, os.path.join(HERE, script), *args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout,
                          cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} exited {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_system(system: str, base: str, m: dict, prefix: str, skip: dict) -> dict:
    if system in skip:
        log(f"{system} skipped: {skip[system]}")
        return {"system": system, "skipped": skip[system]}
    db = f"{prefix}_{system.replace('-', '_')}"
    url = create_db(base, db)
    common = ["--url", url, "--n", str(m["n"]), "--runs", str(m["runs"]),
              "--pickup-n", str(m["pickup_n"])]
    try:
        if system == "ours":
            return run_adapter(sys.executable, "ours.py", [
                *common, "--configs", m["ours_configs"], "--defaults", OURS_DEFAULTS,
                "--claim-terminal", str(m["claim_terminal"]),
                "--claim-queued", str(m["claim_queued"]),
                "--claim-samples", str(m["claim_samples"]), "--rss-n", str(m["rss_n"]),
                "--api-seconds", str(m["api_seconds"])], 3600)
        if system == "raw":
            return run_adapter(sys.executable, "rawsql.py", [
                "--url", url, "--n", str(m["n"]), "--runs", str(m["runs"])], 1800)
        return run_adapter(PEERS_PY, ADAPTERS[system], [
            "all", *common, "--configs", m[CONFIG_KEYS[system]],
            "--defaults-procs", DEFAULTS_PROCS], 3600)
    finally:
        drop_db(base, db)


def pgbench(base: str, m: dict, prefix: str) -> dict:
    exe = shutil.which("pgbench")
    if not exe:
        return {"skipped": "pgbench not on PATH (apt-get install postgresql-client)"}
    db = f"{prefix}_pgbench"
    url = create_db(base, db)
    try:
        subprocess.run([exe, "-i", "-q", "-s", str(m["pgbench_scale"]), url], check=True,
                       capture_output=True)
        runs = []
        for _ in range(m["runs"]):
            out = subprocess.run([exe, "-c", "8", "-j", "2", "-T", str(m["pgbench_seconds"]), url],
                                 check=True, capture_output=True, text=True).stdout
            runs.append(float(re.search(r"tps = ([\d.]+)", out).group(1)))
        log(f"pgbench TPC-B (8 clients): {runs}")
        from bench.common import summary
        return {"tps": summary(runs), "clients": 8, "scale": m["pgbench_scale"],
                "seconds": m["pgbench_seconds"]}
    finally:
        drop_db(base, db)


def server_facts(base: str) -> dict:
    with connect(with_dbname(base, "postgres")) as c:
        facts = {k: c.execute(f"SHOW {k}").fetchone()[0] for k in (
            "server_version", "fsync", "synchronous_commit", "full_page_writes",
            "shared_buffers", "max_connections")}
    return facts


# --- the table -------------------------------------------------------------------------------
def _med(d, *path):
    for p in path:
        if not isinstance(d, dict) or d.get(p) is None:
            return None
        d = d[p]
    return d


def promote_defaults(res: dict) -> None:
    """A system's best drain is the better of its tuned search and its defaults."""
    for s in ["ours", *PEERS]:
        r = res.get(s) or {}
        best, dflt = r.get("drain"), r.get("drain_defaults")
        if best and dflt and (dflt.get("median") or 0) > (best.get("median") or 0):
            r["drain"] = {**dflt, "tried": best.get("tried"),
                          "config": dflt["config"] + " - its defaults beat every tuned try"}


def build_rows(res: dict) -> list[dict]:
    """One row per figure: ours, each peer, PgQueuer's, the best peer's, ratios."""
    spec = [  # (key, label, path in a system's JSON, higher is better, raw ceiling path)
        ("drain_defaults", "drain at defaults (jobs/s)", ("drain_defaults", "median"), True,
         ("claim50_complete50", "median")),
        ("drain", "drain, best config (jobs/s)", ("drain", "median"), True,
         ("claim50_complete50", "median")),
        ("enqueue_single", "enqueue one at a time (jobs/s)", ("enqueue_single", "median"), True,
         ("insert_single", "median")),
        ("enqueue_bulk", "enqueue in bulk (jobs/s)", ("enqueue_bulk", "median"), True,
         ("insert_bulk", "median")),
        ("drain_cpu", "drain: machine CPU per job (us)", ("drain", "cpu_us_per_job", "median"),
         False, None),
        ("pickup_p50", "pickup p50 (ms)", ("pickup", "p50", "median"), False, None),
        ("pickup_p95", "pickup p95 (ms)", ("pickup", "p95", "median"), False, None),
        ("pickup_p99", "pickup p99 (ms)", ("pickup", "p99", "median"), False, None),
    ]
    rows = []
    for key, label, path, higher, raw_path in spec:
        row = {"key": key, "label": label, "higher_is_better": higher,
               "values": {s: _med(res.get(s), *path) for s in ["ours", *PEERS]},
               "ranges": {s: [_med(res.get(s), path[0], *path[1:-1], "min"),
                              _med(res.get(s), path[0], *path[1:-1], "max")]
                          for s in ["ours", *PEERS]}}
        peers = {s: v for s, v in row["values"].items() if s != "ours" and v}
        ours = row["values"]["ours"]

        def ratio(theirs):
            return (ours / theirs) if higher else (theirs / ours)

        if peers:
            best = (max if higher else min)(peers, key=peers.get)
            row["best_peer"], row["best_peer_value"] = best, peers[best]
            if ours:
                row["ratio_to_best_peer"] = ratio(peers[best])
        # PgQueuer's reference: its best drain for both drain rows (as the speed targets read it).
        pgq = _med(res.get("pgqueuer"), *(("drain", "median") if key == "drain_defaults"
                                          else path))
        if pgq and ours:
            row["pgqueuer_reference"], row["ratio_to_pgqueuer"] = pgq, ratio(pgq)
        # graphile-worker's the same way: its best drain for both drain rows.
        gw = _med(res.get("graphile-worker"), *(("drain", "median") if key == "drain_defaults"
                                                else path))
        if gw and ours:
            row["graphile_reference"], row["ratio_to_graphile"] = gw, ratio(gw)
        raw = _med(res.get("raw"), *raw_path) if raw_path else None
        if raw and ours:
            row["raw_ceiling"], row["ratio_to_raw"] = raw, ours / raw
        rows.append(row)
    return rows


def verdicts(res: dict, rows: list[dict]) -> list[dict]:
    by_key = {r["key"]: r for r in rows}
    ours = res.get("ours") or {}
    stale, fresh = (_med(ours, k, "median") for k in ("drain_defaults_stale_stats",
                                                       "drain_defaults"))
    got_by_key = {
        "drain_defaults": by_key["drain_defaults"].get("ratio_to_pgqueuer"),
        "drain_best": by_key["drain"].get("ratio_to_pgqueuer"),
        "drain_defaults_graphile": by_key["drain_defaults"].get("ratio_to_graphile"),
        "drain_best_raw": by_key["drain"].get("ratio_to_raw"),
        "drain_cpu": by_key["drain_cpu"].get("ratio_to_pgqueuer"),
        "drain_cpu_graphile": by_key["drain_cpu"].get("ratio_to_graphile"),
        "enqueue_single": by_key["enqueue_single"].get("ratio_to_pgqueuer"),
        "enqueue_bulk": by_key["enqueue_bulk"].get("ratio_to_pgqueuer"),
        "drain_stale_stats": (stale / fresh) if stale and fresh else None,
        "pickup_p95": by_key["pickup_p95"]["values"]["ours"],
        "claim_p99": _med(ours, "claim_at_scale", "p99", "median"),
        "rss_after": _med(ours, "rss", "after_mb", "median"),
        "api_post_rps": _med(ours, "api", "post", "rps", "median"),
        "api_post_p95": _med(ours, "api", "post", "p95", "median"),
    }
    out = []
    for key, how, target in TARGETS:
        got = got_by_key[key]
        at_most = how.endswith("at most")
        met = None if got is None else (got <= target if at_most else got >= target)
        wanted = (f">= {target}{how[0]}{how[1:]}" if how.startswith("x") else
                  f">= {target:.0f} {how.split()[0]}" if how.endswith("at least") else
                  f"<= {target} {how.split()[0]}")
        out.append({"target": key, "wanted": wanted, "got": got, "met": met})
    return out


def fmt(v, ms=False):
    if v is None:
        return "-"
    if ms:
        return f"{v:.1f}"
    return f"{v:,.0f}"


def _x(v):
    return f"{v:.2f}x" if v else "-"


def print_headline(res: dict, rows: list[dict]) -> None:
    """Defaults first: the ratio a user who changes nothing gets, then the tuned best, then
    enqueue."""
    by_key = {r["key"]: r for r in rows}
    ours, pgq = res.get("ours") or {}, res.get("pgqueuer") or {}
    print("\nheadline (ratios to PgQueuer, measured in this run):")
    d, b = by_key["drain_defaults"], by_key["drain"]
    if ours.get("drain_defaults"):
        print(f"  drain at defaults   {_x(d.get('ratio_to_pgqueuer')):>7}  ours "
              f"{fmt(d['values']['ours'])} jobs/s vs "
              f"PgQueuer's best {fmt(d.get('pgqueuer_reference'))} jobs/s "
              f"[{_med(pgq, 'drain', 'config') or '-'}]")
        stale = ours.get("drain_defaults_stale_stats") or {}
        if stale.get("median"):
            print(f"  ... before ANALYZE  {stale['median'] / d['values']['ours']:.2f}x of the "
                  f"drain after it ({fmt(stale['median'])} jobs/s)")
    gw = res.get("graphile-worker") or {}
    if ours.get("drain_defaults") and d.get("graphile_reference"):
        print(f"  ... vs graphile     {_x(d.get('ratio_to_graphile')):>7}  against "
              f"graphile-worker's best {fmt(d['graphile_reference'])} jobs/s "
              f"[{_med(gw, 'drain', 'config') or '-'}]")
    if ours.get("drain"):
        print(f"  drain, tuned best   {_x(b.get('ratio_to_pgqueuer')):>7}  ours "
              f"{fmt(b['values']['ours'])} jobs/s [{ours['drain']['config']}]; "
              f"{_x(b.get('ratio_to_raw'))} of the raw-SQL ceiling")
    for key, name in (("enqueue_single", "enqueue single"), ("enqueue_bulk", "enqueue bulk")):
        r = by_key[key]
        if r["values"]["ours"]:
            print(f"  {name:19} {_x(r.get('ratio_to_pgqueuer')):>7}  ours "
                  f"{fmt(r['values']['ours'])} jobs/s vs PgQueuer "
                  f"{fmt(r.get('pgqueuer_reference'))}")
    skipped = [f"{s}: {res[s]['skipped']}" for s in PEERS if (res.get(s) or {}).get("skipped")]
    if skipped:
        print("  skipped: " + "; ".join(skipped))


def print_api(a: dict, how: str) -> None:
    if a.get("post"):
        for name in ("post", "get"):
            d = a[name]

            def ms(key):  # a short run may have too few samples for a percentile
                value = (d.get(key) or {}).get("median")
                return "-" if value is None else f"{value:.1f}"

            print(f"API {name.upper()} /api/v1/jobs/ ({how}; {a['concurrency']} connections, "
                  f"gunicorn, {a['load_generator']}): {d['rps']['median']:.0f} req/s "
                  f"({d['rps']['min']:.0f}-{d['rps']['max']:.0f}), p50 {ms('p50')} / "
                  f"p95 {ms('p95')} / p99 {ms('p99')} ms, codes {d['codes']}")
    elif a:
        print(f"API ({how}): {a.get('skipped')}")


def print_table(res: dict, rows: list[dict], targets: list[dict]) -> None:
    print_headline(res, rows)
    names = ["ours", *PEERS]
    head = (f"{'median (range)':32}" + "".join(f" {n:>23}" for n in names)
            + f"{'vs PgQueuer':>13}{'vs graphile':>13}{'vs best peer':>14}{'vs raw SQL':>12}")
    print("\n" + head)
    print("-" * len(head))
    # Ratios read "x better than": ours / theirs for rates, theirs / ours for latencies.
    for r in rows:
        ms = not r["higher_is_better"]
        cells = []
        for n in names:
            v, (lo, hi) = r["values"][n], r["ranges"][n]
            cells.append(f"{fmt(v, ms)} ({fmt(lo, ms)}-{fmt(hi, ms)})" if v is not None else "-")
        print(f"{r['label']:32}" + "".join(f" {c:>23}" for c in cells)
              + f"{_x(r.get('ratio_to_pgqueuer')):>13}{_x(r.get('ratio_to_graphile')):>13}"
              f"{_x(r.get('ratio_to_best_peer')):>14}"
              f"{_x(r.get('ratio_to_raw')):>12}")
    ours = res.get("ours") or {}
    print("\nat defaults: " + "; ".join(
        f"{s} {res[s]['drain_defaults']['config']}" for s in names
        if (res.get(s) or {}).get("drain_defaults")))
    if ours.get("drain"):
        print(f"best configurations: ours {ours['drain']['config']}; " + "; ".join(
            f"{p} {res[p]['drain']['config']}" for p in PEERS
            if (res.get(p) or {}).get("drain")))
    if (res.get("celery") or {}).get("broker"):
        print(f"celery {res['celery']['version']} with {res['celery']['broker']}")
    if (res.get("graphile-worker") or {}).get("node"):
        gw = res["graphile-worker"]
        print(f"graphile-worker {gw['version']} on Node.js {gw['node']}")
    raw = res.get("raw")
    if raw:
        print("raw SQL ceiling ({} threads): claim 1 + complete 1: {}/s, claim 50 + complete each: "
              "{}/s, claim 50 + complete 50: {}/s; inserts single {}/s, bulk {}/s".format(
                  raw["threads"], *(fmt(raw[k]["median"]) for k in (
                      "claim1_complete1", "claim50_complete_each", "claim50_complete50",
                      "insert_single", "insert_bulk"))))
    pg = res.get("postgres") or {}
    if pg:
        print("server: PostgreSQL " + ", ".join(
            f"{k} {v}" if k != "server_version" else v for k, v in pg.items()))
    if (res.get("pgbench") or {}).get("tps"):
        print(f"pgbench TPC-B: {fmt(res['pgbench']['tps']['median'])} TPS "
              f"({fmt(res['pgbench']['tps']['min'])}-{fmt(res['pgbench']['tps']['max'])})")
    if ours.get("claim_at_scale"):
        c = ours["claim_at_scale"]
        print(f"claim latency with {c['terminal_rows']:,} finished + {c['queued_rows']:,} queued: "
              f"p50 {c['p50']['median']:.2f} / p95 {c['p95']['median']:.2f} / "
              f"p99 {c['p99']['median']:.2f} ms")
    if ours.get("rss"):
        r = ours["rss"]
        print(f"worker RSS after {r['jobs']:,} jobs, {r['threads']} threads: "
              f"{r['after_mb']['median']:.0f} MB (idle {r['idle_mb']['median']:.0f} MB)")
    for key, how in (("api", "defaults: the creation throttle counting in the queue's database"),
                     ("api_redis", "JOB_THROTTLE_CACHE_URL: the login throttle's cache in Redis; "
                                   "job creation counts in the database either way")):
        print_api(ours.get(key) or {}, how)
    print("\nspeed targets:")
    for t in targets:
        got = t["got"]
        print(f"  {t['target']:23} want {t['wanted']:30} got "
              f"{('-' if got is None else f'{got:.2f}'):>8}"
              f"  {'MET' if t['met'] else ('n/a' if t['met'] is None else 'MISSED')}")


def main() -> int:
    mode = "smoke" if os.environ.get("BENCH_SMOKE") else (
        "quick" if os.environ.get("BENCH_QUICK") else "full")
    m = dict(MODES[mode])
    # A mode's job count and runs, overridden for a check at another size (BENCH_N, BENCH_RUNS).
    for key in ("n", "runs"):
        if os.environ.get(f"BENCH_{key.upper()}"):
            m[key] = int(os.environ[f"BENCH_{key.upper()}"])
    systems = [s.strip() for s in os.environ.get("BENCH_SYSTEMS", ",".join(ALL)).split(",")]
    unknown = set(systems) - set(ALL)
    if unknown:
        print(f"unknown BENCH_SYSTEMS {sorted(unknown)}; choose from {ALL}", file=sys.stderr)
        return 2
    prefix = os.environ.get("BENCH_DB_PREFIX", "bench")
    results_dir = os.environ.get("BENCH_RESULTS_DIR", os.path.join(HERE, "results"))
    base = server_url()
    if any(s in PEERS for s in systems):
        ensure_peers_venv()
    skip = {}
    if "graphile-worker" in systems:
        why = ensure_graphile()
        if why:
            skip["graphile-worker"] = why
    started = time.time()
    res: dict = {"mode": mode, "sizes": m, "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                             "python": platform.python_version()},
                 "postgres": server_facts(base)}
    for s in systems:
        log(f"--- {s} ---")
        t0 = time.time()
        res[s] = (pgbench(base, m, prefix) if s == "pgbench"
                  else measure_system(s, base, m, prefix, skip))
        res[s]["seconds"] = round(time.time() - t0, 1)
    promote_defaults(res)
    rows = build_rows(res)
    targets = verdicts(res, rows)
    res["table"], res["targets"] = rows, targets
    res["elapsed_seconds"] = round(time.time() - started, 1)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_table(res, rows, targets)
    print(buf.getvalue(), end="")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"{mode}.txt"), "w") as f:
        f.write(buf.getvalue().lstrip("\n"))
    path = os.path.join(results_dir, f"{mode}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(path + ".tmp", path)
    print(f"\nwrote {os.path.relpath(path, REPO)} ({res['elapsed_seconds']:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
