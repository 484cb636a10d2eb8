"""`make curves`: what the drain rate and the claim latency cost as the work grows.

Each point is a table state, built fast in SQL, then measured with real worker processes at
the defaults (ours at 2 processes x `run_job_workers --threads 16`, nothing else):

    finished rows   0, 1 M, 5 M succeeded jobs (with their event rows) beside the work
    backlog         10 k, 1 M queued jobs
    queues          the work spread over 1, 100, 1,000 queues, each worker process serving
                    half of them (`--queues q0,q2,...` and `q1,q3,...`)
    future          1 M jobs scheduled for tomorrow beside the work

The baseline (0 finished, 10 k queued, 1 queue, nothing scheduled) is a point of every curve.
At each point: `runs` times (3), the workers drain `drain_n` jobs (10,000) from the backlog
(jobs/s from the first start to the drain_n-th finish, database clock), then a probe claims
`claim_samples` jobs one at a time through the service (`claim`, batch 1; over a subset of
the queues on the queue curve), whose p99 is the point's claim p99. Between runs the
finished work is deleted and the backlog topped up to its size, then VACUUM ANALYZE, so that
every run of a point sees the same table. A point's figure is the median of its runs.

    make curves                    full sizes, 3 runs a point (about 25-40 min on 2 cores)
    CURVES_QUICK=1 make curves     every size / 100 (1 run a point, well under a minute)
    CURVES_POINTS=baseline,finished_1M   some points only
    CURVES_RUNS=5                  runs a point
    CURVES_MAX_MINUTES=60          stop (with what is measured) after this long
    python bench/curves.py --draw bench/results/curves-full.json [DIR]   charts again

Rows are written outside the service, by cloning a job that went through the real service
path (enqueue, claim, complete) with INSERT ... SELECT generate_series: every column is
copied from the template, only timestamps, queue and status-bound fields are set, so the
rows satisfy the table's check constraints by construction, and each clone gets copies of
the template's event rows, as the history would have them.

Safe to leave running: the server must be on loopback (127.0.0.1, ::1, localhost or a
socket); the script makes one database of its own (CURVES_DB, default `curves_<pid>`) and
drops it when it ends, however it ends (SIGTERM and Ctrl-C included); it stops by itself
at CURVES_MAX_MINUTES. The JSON goes to bench/results/curves-<mode>.json and the charts
(matplotlib, `pip install --group bench`) to docs/_static/bench/ in full mode,
bench/results/curves-quick/ in quick mode (CURVES_CHARTS_DIR overrides).
"""
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import textwrap
import time
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench.common import create_db, drop_db, log, percentile, summary, wait_until  # noqa: E402

FULL = dict(finished=[0, 1_000_000, 5_000_000], backlog=[10_000, 1_000_000],
            queues=[1, 100, 1000], future=1_000_000, drain_n=10_000, claim_samples=1000, runs=3,
            max_minutes=90)
QUICK = dict(finished=[0, 10_000, 50_000], backlog=[100, 10_000], queues=[1, 100, 1000],
             future=10_000, drain_n=100, claim_samples=50, runs=1, max_minutes=10)
PROCS, THREADS = 2, 16  # ours at defaults: only --threads chosen
CLONE_CHUNK = 500_000


def points(m: dict) -> list[dict]:
    """Every point once: name, finished rows, backlog, queues, future-scheduled rows."""
    base = dict(finished=m["finished"][0], backlog=m["backlog"][0], queues=m["queues"][0],
                future=0)
    out = [dict(base, name="baseline")]
    out += [dict(base, name=f"finished_{_short(f)}", finished=f) for f in m["finished"][1:]]
    out += [dict(base, name=f"backlog_{_short(b)}", backlog=b) for b in m["backlog"][1:]]
    out += [dict(base, name=f"queues_{q}", queues=q) for q in m["queues"][1:]]
    out.append(dict(base, name=f"future_{_short(m['future'])}", future=m["future"]))
    return out


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n))


def check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    if host not in ("", "127.0.0.1", "::1", "localhost") and not host.startswith("/"):
        raise SystemExit(f"curves: the server must be on loopback, not {host!r} (DATABASE_URL)")


# --- the table states, in SQL ---------------------------------------------------------------
def _cur():
    from django.db import connection

    return connection.cursor()


def _columns(table: str, skip: tuple[str, ...]) -> list[str]:
    with _cur() as cur:
        cur.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "ORDER BY ordinal_position", [table])
        return [r[0] for r in cur.fetchall() if r[0] not in skip]


def templates() -> tuple[int, int]:
    """A succeeded and a queued job, made by the service itself: what the clones copy."""
    from django_pg_jobqueue.services import claim, complete_many, enqueue
    from django_pg_jobqueue.services.lifecycle import Completion

    enqueue("noop", {})
    (job,) = claim(worker_ids=["curves-template"])
    complete_many([Completion(job.id, job.lease_token, "curves-template", {"ok": True})])
    queued = enqueue("noop", {})
    # Kept aside: the workers drain the queued one and the runs delete what they finished.
    with _cur() as cur:
        cur.execute("DROP TABLE IF EXISTS curves_tpl_jobs, curves_tpl_events")
        cur.execute("CREATE TABLE curves_tpl_jobs AS SELECT * FROM jobs WHERE id IN (%s, %s)",
                    [job.id, queued.id])
        cur.execute("CREATE TABLE curves_tpl_events AS SELECT * FROM job_events "
                    "WHERE job_id IN (%s, %s)", [job.id, queued.id])
        # Out of the table: every row a point has is a clone, in the point's queues.
        cur.execute("DELETE FROM job_events WHERE job_id IN (%s, %s)", [job.id, queued.id])
        cur.execute("DELETE FROM jobs WHERE id IN (%s, %s)", [job.id, queued.id])
    return job.id, queued.id


def clone(template: int, count: int, *, queues: int = 1, future: bool = False) -> None:
    """`count` copies of job `template` and of its events, in chunks. The timestamps step
    back 1 ms per copy (so finished rows spread over the past hours, as a real history
    would), or, with `future`, forward from tomorrow; with `queues` > 1 the copies cycle
    over queues q0..q{queues-1}."""
    ts = ("created_at", "available_at", "updated_at", "started_at", "finished_at")
    cols = _columns("jobs", ("id", "idempotency_key"))
    exprs = []
    for c in cols:
        if c == "available_at" and future:
            exprs.append("now() + interval '1 day' + g * interval '1 ms'")
        elif c in ts:
            exprs.append(f"t.{c} - g * interval '1 ms'")
        elif c == "queue" and queues > 1:
            exprs.append(f"'q' || (g %% {queues})")
        elif c == "outcome_event_id":  # an outcome kept on the row: each copy its own event id
            exprs.append("CASE WHEN t.outcome_event_id IS NOT NULL"
                         " THEN nextval('job_events_id_seq') END")
        else:
            exprs.append(f"t.{c}")
    ev_cols = _columns("job_events", ("id", "job_id"))
    done = 0
    while done < count:
        k = min(CLONE_CHUNK, count - done)
        with _cur() as cur:
            cur.execute("SELECT coalesce(max(id), 0) FROM jobs")
            before = cur.fetchone()[0]
            cur.execute(f"INSERT INTO jobs ({', '.join(cols)}) SELECT {', '.join(exprs)} "
                        f"FROM curves_tpl_jobs t, generate_series(%s, %s) g WHERE t.id = %s",
                        [done + 1, done + k, template])
            cur.execute(f"INSERT INTO job_events (job_id, {', '.join(ev_cols)}) "
                        f"SELECT j.id, {', '.join('e.' + c for c in ev_cols)} FROM jobs j "
                        f"JOIN curves_tpl_events e ON e.job_id = %s WHERE j.id > %s ORDER BY j.id, e.id",
                        [template, before])
        done += k


def settle() -> None:
    with _cur() as cur:
        cur.execute("VACUUM ANALYZE jobs, job_events")
        cur.execute("CHECKPOINT")  # the build's dirty pages written out before the timing


def build(point: dict) -> tuple[int, int]:
    with _cur() as cur:
        cur.execute("TRUNCATE jobs, job_events, job_search_text, job_workers RESTART IDENTITY CASCADE")
    done_t, queued_t = templates()
    t0 = time.monotonic()
    clone(done_t, point["finished"])
    clone(queued_t, point["future"], future=True)
    top_up(queued_t, point)
    settle()
    log(f"curves {point['name']}: built in {time.monotonic() - t0:.1f}s")
    return done_t, queued_t


def runnable() -> int:
    with _cur() as cur:
        cur.execute("SELECT count(*) FROM jobs WHERE status = 'queued' AND available_at <= now()")
        return cur.fetchone()[0]


def top_up(queued_t: int, point: dict) -> None:
    missing = point["backlog"] - runnable()
    if missing > 0:
        clone(queued_t, missing, queues=point["queues"])


def forget_run(since) -> None:
    """Delete what the run finished (and its events): the next run sees the same table."""
    with _cur() as cur:
        cur.execute("CREATE TEMP TABLE gone AS SELECT id FROM jobs WHERE finished_at >= %s",
                    [since])
        cur.execute("DELETE FROM job_events WHERE job_id IN (SELECT id FROM gone)")
        cur.execute("DELETE FROM jobs WHERE id IN (SELECT id FROM gone)")
        cur.execute("DROP TABLE gone")
        cur.execute("DELETE FROM job_workers")


# --- the measurements --------------------------------------------------------------------------
def queue_subsets(queues: int) -> list[str]:
    """Worker process p's --queues: every other queue, so the processes split them."""
    if queues == 1:
        return [""] * PROCS
    return [",".join(f"q{i}" for i in range(p, queues, PROCS)) for p in range(PROCS)]


# Every worker process this run started, kept as each starts: a SIGTERM that lands while
# start() is still starting them (before it returned its list) must not orphan those already
# running; main's finally stops whatever is left here before it drops the database.
STARTED: list = []


def start(url: str, queues: int, logdir: str) -> list:
    import subprocess

    from bench.ours import worker_env

    out = []
    for p, subset in enumerate(queue_subsets(queues)):
        logf = open(os.path.join(logdir, f"worker-{p}.log"), "ab")
        # A SIGTERM while a worker starts waits until it is held here: its handler, run inside
        # Popen (after the fork, before Popen returns), would leave a worker nothing holds.
        # (Not by blocking the signal: the worker would inherit the mask and never stop.)
        _TERM["starting"] = True
        try:
            out.append(subprocess.Popen(
                [sys.executable, os.path.join(REPO, "manage.py"), "run_job_workers",
                 "--threads", str(THREADS), *(["--queues", subset] if subset else [])],
                env=worker_env(url), stdout=logf, stderr=subprocess.STDOUT, cwd=REPO))
            STARTED.append(out[-1])
        finally:
            _TERM["starting"] = False
        if _TERM["pending"]:
            sys.exit(143)
    return out


_TERM = {"starting": False, "pending": False}


def _on_sigterm(*_) -> None:
    """SIGTERM ends the run like Ctrl-C (main's finally stops the workers and drops the
    database), once no worker is half started."""
    if _TERM["starting"]:
        _TERM["pending"] = True
        return
    sys.exit(143)


def drain_once(url: str, point: dict, n: int, logdir: str, deadline: float):
    from bench.ours import stop_workers

    with _cur() as cur:
        cur.execute("SELECT clock_timestamp()")
        since = cur.fetchone()[0]

    def finished() -> int:
        with _cur() as cur:
            cur.execute("SELECT count(*) FROM jobs WHERE status = 'succeeded' "
                        "AND finished_at >= %s", [since])
            return cur.fetchone()[0]

    workers = start(url, point["queues"], logdir)
    try:
        if not wait_until(lambda: finished() >= n, max(60.0, min(n / 20, deadline - time.time())),
                          0.1):
            raise RuntimeError(f"{point['name']}: {finished()} of {n} drained in time")
    finally:
        stop_workers(workers)
    with _cur() as cur:
        cur.execute("SELECT extract(epoch FROM finished_at) FROM jobs WHERE status = 'succeeded' "
                    "AND finished_at >= %s ORDER BY finished_at OFFSET %s LIMIT 1", [since, n - 1])
        nth = float(cur.fetchone()[0])
        cur.execute("SELECT extract(epoch FROM min(started_at)) FROM jobs "
                    "WHERE status = 'succeeded' AND finished_at >= %s", [since])
        first = float(cur.fetchone()[0])
    return n / (nth - first), since


def claim_p99(point: dict, samples: int) -> float:
    """p99 (ms) of `samples` one-job claims through the service, then those jobs completed.
    On the queue curve the probe asks for worker 0's subset, as its lane would."""
    from django_pg_jobqueue.services import claim, complete_many
    from django_pg_jobqueue.services.lifecycle import Completion

    subset = queue_subsets(point["queues"])[0]
    queues = subset.split(",") if subset else None
    took, claimed = [], []
    for _ in range(samples):
        t0 = time.perf_counter()
        got = claim(worker_ids=["curves-probe"], queues=queues)
        took.append((time.perf_counter() - t0) * 1000)
        assert len(got) == 1, "the probe ran out of queued jobs"
        claimed += got
    complete_many([Completion(j.id, j.lease_token, "curves-probe", None) for j in claimed])
    return percentile(took, 99)


def measure(url: str, point: dict, m: dict, logdir: str, deadline: float) -> dict:
    keep = build(point)
    rates, p99s = [], []
    for r in range(m["runs"]):
        if time.time() > deadline:
            log(f"curves {point['name']}: out of time after {r} runs")
            break
        rate, since = drain_once(url, point, m["drain_n"], logdir, deadline)
        top_up(keep[1], point)
        settle()
        p99s.append(claim_p99(point, m["claim_samples"]))
        rates.append(rate)
        forget_run(since)
        top_up(keep[1], point)
        settle()
        log(f"curves {point['name']} run {r + 1}: drain {rate:.0f} jobs/s, claim p99 "
            f"{p99s[-1]:.2f} ms")
    with _cur() as cur:
        # job_events is partitioned (migration 0007): its parent holds no rows; sum the leaves.
        cur.execute("SELECT pg_total_relation_size('jobs'), (SELECT sum(pg_total_relation_size("
                    "relid))::bigint FROM pg_partition_tree('job_events') WHERE isleaf),"
                    " (SELECT count(*) FROM jobs)")
        jobs_bytes, events_bytes, rows = cur.fetchone()
    return {**point, "drain": summary(rates), "claim_p99_ms": summary(p99s), "jobs_rows": rows,
            "jobs_bytes": jobs_bytes, "job_events_bytes": events_bytes}


# --- the charts ----------------------------------------------------------------------------------
CURVES = [  # (file, title, x label, field, values -> point names)
    ("finished", "Finished rows beside the work", "finished (succeeded) rows", "finished"),
    ("backlog", "Backlog", "queued rows", "backlog"),
    ("queues", "Queues (each worker process serves half)", "queues", "queues"),
    ("future", "Jobs scheduled for later", "future-scheduled rows", "future"),
]


def curve(results: list[dict], field: str) -> list[dict]:
    """The baseline and the points that vary `field`, in order of it."""
    base = next((r for r in results if r["name"] == "baseline"), None)
    varied = [r for r in results if r["name"].startswith(field + "_")]
    return sorted(([base] if base else []) + varied, key=lambda r: r[field])


def draw(results: list[dict], out_dir: str, caption: str) -> list[str]:
    try:
        import matplotlib
    except ImportError:
        log("curves: no matplotlib (pip install --group bench): no charts drawn")
        return []
    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({"svg.hashsalt": "django-pg-jobqueue", "font.size": 9,
                                "svg.fonttype": "none"})
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, title, xlabel, field in CURVES:
        pts = [p for p in curve(results, field) if p["drain"]["median"]]
        if len(pts) < 2:
            continue
        labels = [_short(p[field]) for p in pts]
        fig, (a, b) = plt.subplots(1, 2, figsize=(7.5, 2.8), layout="constrained")
        for ax, key, ylabel, color in ((a, "drain", "drain (jobs/s)", "#2b6cb0"),
                                       (b, "claim_p99_ms", "claim p99 (ms)", "#c05621")):
            med = [p[key]["median"] for p in pts]
            err = [[m - p[key]["min"] for m, p in zip(med, pts)],
                   [p[key]["max"] - m for m, p in zip(med, pts)]]
            ax.errorbar(range(len(pts)), med, yerr=err, marker="o", color=color, capsize=3)
            ax.set_xticks(range(len(pts)), labels)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        fig.suptitle(f"{title}: median of runs, range as bars", fontsize=10)
        fig.text(0.5, -0.02, textwrap.fill(caption, 130), ha="center", va="top", fontsize=7,
                 color="#555")
        path = os.path.join(out_dir, f"curves-{name}.svg")
        fig.savefig(path, metadata={"Date": None}, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def print_table(results: list[dict]) -> None:
    print(f"\n{'point':16}{'finished':>11}{'backlog':>10}{'queues':>8}{'future':>10}"
          f"{'drain jobs/s (range)':>26}{'claim p99 ms (range)':>24}{'jobs+events MB':>16}")
    for r in results:
        d, c = r["drain"], r["claim_p99_ms"]
        if d["median"] is None:
            print(f"{r['name']:16}  (not measured)")
            continue
        print(f"{r['name']:16}{r['finished']:>11,}{r['backlog']:>10,}{r['queues']:>8,}"
              f"{r['future']:>10,}"
              f"{f'{d['median']:,.0f} ({d['min']:,.0f}-{d['max']:,.0f})':>26}"
              f"{f'{c['median']:.2f} ({c['min']:.2f}-{c['max']:.2f})':>24}"
              f"{(r['jobs_bytes'] + r['job_events_bytes']) / 1e6:>16,.0f}")


def caption_of(out: dict) -> str:
    m, facts = out["sizes"], out["postgres"]
    return (f"{out['mode']} mode{' (sizes / 100)' if out['mode'] == 'quick' else ''}, "
            f"{out['started_at'][:10]}, {out['machine']['cpus']} CPUs, PostgreSQL "
            f"{facts['server_version'].split()[0]} (fsync {facts['fsync']}), {out['workers']}, "
            f"{m['drain_n']:,} jobs drained per run, {m['claim_samples']:,} claims sampled, "
            f"median of {m['runs']} run(s)")


def main() -> int:
    if sys.argv[1:2] == ["--draw"]:  # charts again from a run's JSON: --draw FILE [DIR]
        out = json.load(open(sys.argv[2]))
        charts = sys.argv[3] if len(sys.argv) > 3 else os.path.join(REPO, "docs/_static/bench")
        for path in draw(out["points"], charts, caption_of(out)):
            print(f"wrote {os.path.relpath(path, REPO)}")
        return 0
    mode = "quick" if os.environ.get("CURVES_QUICK") else "full"
    m = dict(QUICK if mode == "quick" else FULL)
    if os.environ.get("CURVES_RUNS"):
        m["runs"] = int(os.environ["CURVES_RUNS"])
    m["max_minutes"] = float(os.environ.get("CURVES_MAX_MINUTES", m["max_minutes"]))
    wanted = [p for p in os.environ.get("CURVES_POINTS", "").split(",") if p]
    todo = [p for p in points(m) if not wanted or p["name"] in wanted]
    if wanted and len(todo) != len(wanted):
        print(f"unknown CURVES_POINTS; choose from {[p['name'] for p in points(m)]}",
              file=sys.stderr)
        return 2
    from bench.run import server_facts, server_url

    base = server_url()
    check_loopback(base)
    db = os.environ.get("CURVES_DB", f"curves_{os.getpid()}")
    results_dir = os.environ.get("CURVES_RESULTS_DIR", os.path.join(HERE, "results"))
    charts_dir = os.environ.get("CURVES_CHARTS_DIR", os.path.join(
        REPO, "docs", "_static", "bench") if mode == "full" else os.path.join(
        results_dir, "curves-quick"))
    # SIGTERM ends the run like Ctrl-C: through the finally below, which drops the database.
    signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.time()
    deadline = started + m["max_minutes"] * 60
    url = create_db(base, db)
    results: list[dict] = []
    try:
        from bench.ours import setup_django

        setup_django(url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        logdir = tempfile.mkdtemp(prefix="bench-curves-")
        for point in todo:
            if time.time() > deadline:
                log(f"curves: CURVES_MAX_MINUTES={m['max_minutes']:g} reached; "
                    f"{point['name']} and the rest left out")
                break
            results.append(measure(url, point, m, logdir, deadline))
        from django.db import connection

        connection.close()
    finally:
        from bench.ours import stop_workers

        stop_workers([p for p in STARTED if p.poll() is None])
        drop_db(base, db)
    facts = server_facts(base)
    out = {"mode": mode, "sizes": m, "workers": f"{PROCS} processes x run_job_workers --threads "
           f"{THREADS}, nothing else", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                     time.gmtime(started)),
           "elapsed_seconds": round(time.time() - started, 1),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "postgres": facts, "points": results}
    print_table(results)
    caption = caption_of(out)
    for path in draw(results, charts_dir, caption):
        print(f"wrote {os.path.relpath(path, REPO)}")
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"curves-{mode}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    print(f"wrote {os.path.relpath(path, REPO)} ({out['elapsed_seconds']:.0f}s; medians of "
          f"{m['runs']} run(s) a point; "
          f"{statistics.median([r['drain']['median'] for r in results if r['drain']['median']] or [0]):,.0f}"
          " jobs/s median over the points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
