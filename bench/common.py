"""Helpers shared by the harness and every adapter (project venv and peers venv alike).

Only the standard library and psycopg: the adapters run in two different virtualenvs.
Each adapter is a small CLI that prints exactly one JSON object on its last stdout line.
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def with_dbname(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def conninfo(url: str) -> str:
    """psycopg accepts postgres:// URLs directly; normalise the scheme only."""
    return url.replace("postgresql+psycopg://", "postgres://", 1)


def create_db(server_url: str, name: str) -> str:
    """(Re)create database `name` on the server of `server_url`; return its URL."""
    with psycopg.connect(conninfo(with_dbname(server_url, "postgres")), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return with_dbname(server_url, name)


def drop_db(server_url: str, name: str) -> None:
    with psycopg.connect(conninfo(with_dbname(server_url, "postgres")), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def connect(url: str, autocommit: bool = True):
    with psycopg.connect(conninfo(url), autocommit=autocommit) as c:
        yield c


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def summary(values: list[float]) -> dict:
    """The figure we report: median of the runs, with its range and the raw runs."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "runs": []}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
            "runs": [round(v, 3) for v in vals]}


def latency_summary(samples_ms: list[float]) -> dict:
    return {"p50": percentile(samples_ms, 50), "p95": percentile(samples_ms, 95),
            "p99": percentile(samples_ms, 99), "n": len(samples_ms)}


def analyze(url: str) -> None:
    """ANALYZE the whole database after a drain's queue is filled, before its workers start:
    what autovacuum does on a normal server after a bulk insert. This server runs without
    autovacuum, and a queue table whose statistics predate the fill can get a claim plan
    that reads and sorts every queued row on each claim. Done for every system alike."""
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        c.execute("ANALYZE")


# --- machine CPU during a drain ------------------------------------------------------------------
def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (every process, user + system), from
    /proc/stat; 0.0 where there is none (the figure is then left out)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


class CpuSampler(threading.Thread):
    """Samples machine_busy_seconds() every 50 ms, so that the CPU spent between a system's
    own first start and last completion can be read afterwards: worker start-up and
    shutdown stay out of the figure, as they stay out of the jobs/s."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            self.samples.append((time.time(), machine_busy_seconds()))
            self.stopping.wait(0.05)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.join()

    def _at(self, t: float) -> float:
        s = self.samples
        for (t0, b0), (t1, b1) in zip(s, s[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
        return s[0][1] if t < s[0][0] else s[-1][1]

    def us_per_job(self, first: float, last: float, n: int) -> float | None:
        if len(self.samples) < 2 or not self.samples[-1][1]:
            return None
        return (self._at(last) - self._at(first)) / n * 1e6


def best_drain(configs: str, run_one, runs: int, name: str, describe: str) -> dict:
    """Drain once at every configuration, then repeat the fastest until there are `runs`.

    `configs` is "AxB,CxD,..." (numbers, or words such as a pool's name, joined by x);
    `run_one(A, B)` drains once and returns
    (jobs/s, machine CPU us per job); `describe` formats the best one's numbers for the table
    ("{} processes x batch {}"). Returns the `drain` figure: jobs/s and CPU per job (median
    and range), the best configuration, every try."""
    tried = {}
    for cfg in configs.split(","):
        tried[cfg] = run_one(*_config_values(cfg))
        log(f"{name} drain {cfg}: {tried[cfg][0]:.0f} jobs/s, {tried[cfg][1] or 0:.0f} us CPU/job")
    best = max(tried, key=lambda c: tried[c][0])
    numbers = _config_values(best)
    results = [tried[best]] + [run_one(*numbers) for _ in range(runs - 1)]
    log(f"{name} drain best {best}: {[round(r[0]) for r in results]}")
    return {**summary([r[0] for r in results]),
            "cpu_us_per_job": summary([r[1] for r in results]),
            "config": describe.format(*numbers),
            "tried": {k: round(v[0]) for k, v in tried.items()}}


def _config_values(cfg: str) -> list:
    return [int(x) if x.isdigit() else x for x in cfg.split("x")]


def defaults_drain(run_one, runs: int, name: str, config: str) -> dict:
    """Drain `runs` times at the system's defaults (`run_one()` returns (jobs/s, CPU us per
    job), as for best_drain): the figure a user who changes nothing but the process count
    gets. `config` says in words what those defaults are."""
    results = [run_one() for _ in range(runs)]
    log(f"{name} drain at defaults ({config}): {[round(r[0]) for r in results]}")
    return {**summary([r[0] for r in results]),
            "cpu_us_per_job": summary([r[1] for r in results]), "config": config}


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def emit(result: dict) -> None:
    """The adapter's answer: one JSON line, last on stdout."""
    sys.stdout.write("\n" + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S', time.gmtime())}] {msg}", file=sys.stderr, flush=True)


def pickup_from_stamps(enqueued: dict[int, float], stamp_file: str) -> list[float]:
    """Start minus enqueue (ms) per job, from the worker's stamp file (`<i> <time.time()>`)."""
    started = {}
    with open(stamp_file) as f:
        for line in f:
            i, t = line.split()
            started.setdefault(int(i), float(t))
    return [(started[i] - t0) * 1000 for i, t0 in enqueued.items() if i in started]


def stamp(payload: dict) -> None:
    """Called first thing by every system's bench handler: append `<i> <now>` to the file."""
    path = os.environ.get("BENCH_STAMP_FILE")
    if path and "i" in payload:
        t = time.time()
        with open(path, "a") as f:
            f.write(f"{payload['i']} {t}\n")


def peer_arguments(*commands: str, configs: str, configs_help: str | None = None,
                   defaults_help: str,
                   url_help: str | None = None) -> argparse.ArgumentParser:
    """The flags every peer adapter takes: what to run (`commands`), the server, the job
    count, the runs, the drain configurations to try, the processes of the drain at its
    defaults, and the pickup run's size and gap. An adapter adds its own before parsing."""
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=list(commands))
    if url_help:
        ap.add_argument("--url", help=url_help)
    else:
        ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--configs", default=configs, help=configs_help)
    ap.add_argument("--defaults-procs", type=int, default=2, help=defaults_help)
    ap.add_argument("--pickup-n", type=int, default=200)
    ap.add_argument("--pickup-gap", type=float, default=0.02)
    return ap


def enqueue_runs(name: str, runs: int, single, bulk, reset=None) -> tuple[dict, dict]:
    """`runs` rounds of the single-call and the bulk enqueue (each returns jobs/s; `reset`,
    if given, empties the queue before each), logged; their summaries."""
    singles, bulks = [], []
    for r in range(runs):
        for measure, into in ((single, singles), (bulk, bulks)):
            if reset is not None:
                reset()
            into.append(measure())
        log(f"{name} enqueue run {r + 1}: single {singles[-1]:.0f}/s, bulk {bulks[-1]:.0f}/s")
    return summary(singles), summary(bulks)


def stamped_pickups(enqueued: dict[int, float], stamp_file: str, timeout: float = 30) -> list[float]:
    """Wait until the worker stamped every job of the pickup run (`enqueued`); their pickup
    latencies (ms). The caller stops its worker after."""
    wait_until(lambda: sum(1 for _ in open(stamp_file)) >= len(enqueued), timeout)
    return pickup_from_stamps(enqueued, stamp_file)


def pickup_result(name: str, runs: int, run_one, label: str = "") -> dict:
    """`runs` pickup runs (`run_one` returns one run's latencies, ms), logged; the medians of
    their p50, p95 and p99."""
    lat = [latency_summary(run_one()) for _ in range(runs)]
    log(f"{name} pickup{label}: {lat}")
    return {k: summary([x[k] for x in lat]) for k in ("p50", "p95", "p99")}
