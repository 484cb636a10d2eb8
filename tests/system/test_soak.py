"""Soak: sustained enqueue and drain at half the maximum rate with pruning on, for 30 minutes
(SOAK=1, `make soak`; never in `make test`).

Two worker processes at the defaults (only `--threads` chosen) first drain a burst, which
gives the maximum rate of this machine; a producer then enqueues at half of it (SOAK_RATE
overrides) while the workers drain and their pruners delete finished jobs past a short
retention. Every minute (SOAK_SAMPLE_SECONDS) the test records the throughput over the
interval, the claim p99 of a probe that claims from a queue of its own through the same index
and the same churned table, and the size of `jobs` and `job_events`, heap and indexes apart,
with their dead tuples. It asserts that the sizes stay flat (every sample of the last third,
the last 10 minutes of 30, within SOAK_SIZE_TOLERANCE, 25%, of the sample at the one-third
mark, minute 10), that the claim p99 stays flat, that dead tuples stay bounded (within what
piles up between two vacuums, and not growing) and the workers keep up, and it prints the samples as a table and draws them as an SVG (matplotlib,
`pip install --group bench`): docs/_static/bench/soak.svg for a full 30-minute run,
else SOAK_CHART_DIR (default: the test's temporary directory). The samples also go to
bench/results/soak.json. When the server runs with autovacuum off, the test vacuums the two
tables every 10 s itself, as such an operator must (and says so). SOAK_MINUTES (default 30)
shortens it for a smoke run.
"""
import json
import os
import statistics
import textwrap
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from django_pg_jobqueue import services
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.handlers.chaos_handlers import Output, worker_env
from tests.utils import spawn_workers

MINUTES = float(os.environ.get("SOAK_MINUTES", 30))
REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow, pytest.mark.e2e, pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("SOAK"), reason="soak test: SOAK=1 (make soak)"),
    pytest.mark.timeout(int(MINUTES * 60 * 1.5) + 600),
]

RETENTION_SECONDS = 20
PROCS, THREADS = 2, 16  # the defaults: only --threads chosen
JOB = {"type": "chaos", "payload": {"mode": "ok", "seconds": 0.001}}
RELATIONS = ("jobs", "job_events")


def _p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))] if values else 0.0


def _sizes() -> dict:
    """Heap and index bytes, live and dead tuples of each relation, and the backlog."""
    out = {}
    with connection.cursor() as cur:
        for rel in RELATIONS:
            # Summed over the leaves: job_events is partitioned (migration 0007), and a
            # partitioned parent holds no rows of its own. pg_partition_tree() of a plain
            # table (jobs) is empty: the table itself is then the one leaf.
            cur.execute("WITH leaves AS (SELECT relid FROM pg_partition_tree(%(rel)s::regclass)"
                        " WHERE isleaf UNION ALL SELECT %(rel)s::regclass WHERE"
                        " (SELECT relkind FROM pg_class WHERE oid = %(rel)s::regclass) = 'r')"
                        " SELECT coalesce(sum(pg_table_size(t.relid)), 0),"
                        " coalesce(sum(pg_indexes_size(t.relid)), 0),"
                        " sum(s.n_live_tup), sum(s.n_dead_tup)"
                        " FROM leaves t LEFT JOIN pg_stat_user_tables s ON s.relid = t.relid",
                        {"rel": rel})
            table, index, live, dead = cur.fetchone()
            out[rel] = {"table": int(table), "index": int(index), "live": int(live or 0),
                        "dead": int(dead or 0)}
        cur.execute("SELECT count(*) FILTER (WHERE status = 'queued'), "
                    "count(*) FILTER (WHERE status = 'running') FROM jobs WHERE queue = 'default'")
        out["queued"], out["running"] = cur.fetchone()
    out["total"] = sum(out[r]["table"] + out[r]["index"] for r in RELATIONS)
    return out


def _max_rate(n: int) -> float:
    """Jobs/s of the running workers on a burst of `n` jobs (database clock)."""
    with connection.cursor() as cur:
        cur.execute("SELECT clock_timestamp()")
        since = cur.fetchone()[0]
    for start in range(0, n, 1000):
        services.enqueue_many([JOB] * min(1000, n - start))
    deadline = time.monotonic() + max(120, n / 20)
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute("SELECT count(*), extract(epoch FROM max(finished_at) - min(started_at)) "
                        "FROM jobs WHERE finished_at >= %s AND status = 'succeeded'", [since])
            done, seconds = cur.fetchone()
        if done >= n:
            return n / float(seconds)
        time.sleep(0.2)  # polls: the drain is other processes'
    raise AssertionError(f"the calibration burst did not drain: {done} of {n}")


def _draw(samples: list[dict], path: Path, caption: str) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("soak: no matplotlib (pip install --group bench): no chart drawn")
        return False
    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({"svg.hashsalt": "django-pg-jobqueue", "font.size": 9,
                                "svg.fonttype": "none"})
    t = [s["minute"] for s in samples]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(10, 2.8), layout="constrained")
    a.plot(t, [s["throughput"] for s in samples], marker=".", color="#2b6cb0")
    a.set_ylabel("throughput (jobs/s)")
    b.plot(t, [s["claim_p99_ms"] for s in samples], marker=".", color="#c05621")
    b.set_ylabel("probe claim p99 (ms)")
    for rel, color in (("jobs", "#2f855a"), ("job_events", "#6b46c1")):
        c.plot(t, [s[rel]["table"] / 1e6 for s in samples], color=color, label=f"{rel} heap")
        c.plot(t, [s[rel]["index"] / 1e6 for s in samples], color=color, linestyle="--",
               label=f"{rel} indexes")
    c.set_ylabel("size (MB)")
    c.legend(fontsize=7)
    for ax in (a, b, c):
        ax.set_xlabel("minute")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle("Soak at half the maximum rate, pruning on", fontsize=10)
    fig.text(0.5, -0.02, textwrap.fill(caption, 150), ha="center", va="top", fontsize=7, color="#555")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return True


def test_soak_half_max_rate_sizes_flat_claim_flat(tmp_path):
    seconds = MINUTES * 60
    interval = float(os.environ.get("SOAK_SAMPLE_SECONDS", 60 if MINUTES >= 10 else 10))
    tolerance = float(os.environ.get("SOAK_SIZE_TOLERANCE", 0.25))
    env = worker_env(tmp_path / "ledger.tsv", CHAOS_LEDGER="",
                     JOB_RETENTION_SUCCEEDED=f"{RETENTION_SECONDS}s",
                     JOB_RETENTION_FAILED=f"{RETENTION_SECONDS}s",
                     JOB_PRUNE_INTERVAL_SECONDS=2)
    workers = [spawn_workers("--threads", str(THREADS), "--queues", "default", env=env)
               for _ in range(PROCS)]
    outputs = [Output(w) for w in workers]
    stop = threading.Event()
    enqueued = [0]
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('autovacuum') = 'on',"
                    " extract(epoch FROM current_setting('autovacuum_naptime')::interval)")
        autovacuum, naptime = cur.fetchone()
    vacuums = [0]
    samples: list[dict] = []
    try:
        max_rate = _max_rate(int(os.environ.get("SOAK_CALIBRATION_JOBS", 5000)))
        rate = float(os.environ.get("SOAK_RATE") or max_rate / 2)
        print(f"\nsoak: the workers drained a burst at {max_rate:.0f} jobs/s; producing at "
              f"{rate:.0f} jobs/s for {MINUTES:g} min", flush=True)

        def produce():
            try:
                tick = 0.2
                owed = 0.0
                while not stop.is_set():
                    started = time.monotonic()
                    owed += rate * tick
                    n = int(owed)
                    owed -= n
                    if n:
                        services.enqueue_many([JOB] * n)
                        enqueued[0] += n
                    stop.wait(max(0.0, tick - (time.monotonic() - started)))
            finally:
                connection.close()

        def vacuum():
            # What an operator whose server runs with autovacuum off must schedule: without it
            # nothing reclaims the dead rows that every claim, completion and prune leaves.
            try:
                while not stop.wait(10):
                    with connection.cursor() as cur:
                        cur.execute("VACUUM (ANALYZE) jobs, job_events")
                    vacuums[0] += 1
            finally:
                connection.close()

        threads = [threading.Thread(target=produce, daemon=True)]
        if not autovacuum:
            threads.append(threading.Thread(target=vacuum, daemon=True))
        for t in threads:
            t.start()
        began = time.monotonic()
        last_done, last_t = 0, began
        print(f"{'minute':>7}{'jobs/s':>9}{'claim p99 ms':>14}{'jobs heap':>11}{'jobs idx':>10}"
              f"{'events heap':>13}{'events idx':>12}{'total MB':>10}{'dead':>8}{'queued':>8}")
        while time.monotonic() - began < seconds:
            window = []
            until = min(began + seconds, time.monotonic() + interval)
            while time.monotonic() < until:
                services.enqueue("noop", queue="soak-probe")
                t0 = time.perf_counter()
                claimed = services.claim(worker_ids=["soak-probe"], queues=["soak-probe"])
                window.append(time.perf_counter() - t0)
                for c in claimed:
                    services.complete(c.id, c.lease_token, worker_id="soak-probe")
                time.sleep(0.05)  # by design: a probe every 50 ms
            now, s = time.monotonic(), _sizes()
            done = enqueued[0] - s["queued"] - s["running"]
            s.update(minute=round((now - began) / 60, 2), claim_p99_ms=_p99(window) * 1000,
                     claim_median_ms=statistics.median(window) * 1000,
                     throughput=(done - last_done) / (now - last_t), enqueued=enqueued[0])
            last_done, last_t = done, now
            samples.append(s)
            dead = s["jobs"]["dead"] + s["job_events"]["dead"]
            print(f"{s['minute']:>7.1f}{s['throughput']:>9.0f}{s['claim_p99_ms']:>14.2f}"
                  + "".join(f"{s[r][k] / 1e6:>{w}.1f}" for r, k, w in (
                      ("jobs", "table", 11), ("jobs", "index", 10), ("job_events", "table", 13),
                      ("job_events", "index", 12)))
                  + f"{s['total'] / 1e6:>10.1f}{dead:>8}{s['queued']:>8}", flush=True)
    finally:
        stop.set()
        for w in workers:
            w.send_signal(15)
        codes = [w.wait(30) for w in workers]
    assert codes == [0] * PROCS, "\n".join(o.text()[-2000:] for o in outputs)

    # The reference: the sample at the one-third mark (minute 10 of 30), by when retention
    # has long been pruning; every sample after the two-thirds mark against it.
    third = seconds / 3 / 60
    ref = min(samples, key=lambda s: abs(s["minute"] - max(third, 2 * RETENTION_SECONDS / 60)))
    tail = [s for s in samples if s["minute"] >= 2 * third] or samples[-1:]
    first_third = [s for s in samples if s["minute"] <= third] or samples[:1]
    worst = max(tail, key=lambda s: s["total"])
    p99_first = statistics.median(s["claim_p99_ms"] for s in first_third)
    p99_last = statistics.median(s["claim_p99_ms"] for s in tail)
    steady = [s["throughput"] for s in samples[1:]] or [samples[-1]["throughput"]]
    dead = [s["jobs"]["dead"] + s["job_events"]["dead"] for s in samples]
    max_dead = max(dead)
    max_live = max(s["jobs"]["live"] + s["job_events"]["live"] for s in samples)
    # Dead tuples pile up between two vacuums of a table at the churn rate: a job leaves about
    # six (its row's two updates and its delete, its three events' deletes). Autovacuum visits
    # each database once per autovacuum_naptime (a server setting, 60 s by default), so at
    # thousands of jobs a second they hover around rate x naptime x 6, however aggressive the
    # tables' own settings (migration 0002). Bounded means: within that, and not growing.
    between_vacuums = 6 * rate * (float(naptime) if autovacuum else 10.0)
    dead_allowed = max(20000, 2 * max_live, 1.5 * between_vacuums)
    dead_before = max([d for s, d in zip(samples, dead) if s["minute"] < 2 * third] or dead[:1])
    dead_late = max([d for s, d in zip(samples, dead) if s["minute"] >= 2 * third] or dead[-1:])
    max_queued = max(s["queued"] for s in samples)
    summary = (f"soak: {MINUTES:g} min at {rate:.0f} jobs/s (half of {max_rate:.0f}), "
               f"{enqueued[0]} jobs, pruning at {RETENTION_SECONDS}s retention; throughput "
               f"median {statistics.median(steady):.0f} jobs/s; probe claim p99 (median of the "
               f"samples) {p99_first:.2f} ms first third vs {p99_last:.2f} ms last third; "
               f"jobs+events (heap + indexes) {ref['total'] / 1e6:.1f} MB at minute "
               f"{ref['minute']:.1f} vs at most {worst['total'] / 1e6:.1f} MB after minute "
               f"{2 * third:.1f}; dead tuples max {max_dead} (allowed {dead_allowed:.0f}), "
               f"queued max {max_queued}; "
               + ("autovacuum on" if autovacuum else
                  f"autovacuum is OFF on this server: the test ran VACUUM every 10 s "
                  f"({vacuums[0]}x)"))
    print("\n" + summary)
    with connection.cursor() as cur:
        cur.execute("SELECT version(), current_setting('fsync')")
        version, fsync = cur.fetchone()
    caption = (f"{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} CPUs, "
               f"{version.split(' on ')[0]} (fsync {fsync}), {PROCS} processes x "
               f"run_job_workers --threads {THREADS}, {rate:.0f} jobs/s, "
               f"{RETENTION_SECONDS}s retention")
    full = MINUTES >= 30 and not os.environ.get("SOAK_CHART_DIR")
    chart_dir = REPO / "docs/_static/bench" if full else Path(
        os.environ.get("SOAK_CHART_DIR", tmp_path))
    if _draw(samples, chart_dir / "soak.svg", caption):
        print(f"wrote {chart_dir / 'soak.svg'}")
    results = Path(os.environ.get("SOAK_RESULTS_DIR", REPO / "bench/results"))
    results.mkdir(parents=True, exist_ok=True)
    (results / "soak.json").write_text(json.dumps(
        {"minutes": MINUTES, "rate": rate, "max_rate": max_rate, "summary": summary,
         "caption": caption, "samples": samples}, indent=1))

    assert max_queued < max(rate * 10, 1000), "the workers fell behind: not a steady state"
    assert worst["total"] <= (1 + tolerance) * ref["total"], summary
    assert p99_last <= max(2 * p99_first, p99_first + 5), summary
    assert max_dead <= dead_allowed, f"dead tuples over {dead_allowed:.0f}: {summary}"
    assert dead_late <= (1 + tolerance) * max(dead_before, 20000), f"dead tuples grow: {summary}"
