"""Helpers shared by the harness and every adapter (project venv and peers venv alike).

Only the standard library and psycopg: the adapters run in two different virtualenvs.
Each adapter is a small CLI that prints exactly one JSON object on its last stdout line.
"""
import json
import os
import statistics
import sys
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
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


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
