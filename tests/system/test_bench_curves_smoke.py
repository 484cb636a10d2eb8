"""bench/curves.py works end to end at its quick sizes (CURVES_QUICK=1, three of its points):
it fills the tables in SQL within their check constraints, drains with real worker processes
(over queue subsets on the queue curve), samples the claim, draws the SVG charts, writes the
JSON and drops its database; it refuses a server that is not on loopback, and a SIGTERM still
drops its database. It asserts that the script works, never how fast anything is."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.handlers.chaos_handlers import Output
from tests.system.test_bench_smoke import _server_url

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _databases(name: str) -> list:
    with psycopg.connect(_server_url(), autocommit=True) as conn:
        return conn.execute("SELECT datname FROM pg_database WHERE datname = %s",
                            [name]).fetchall()


@pytest.mark.timeout(600)
def test_curves_quick_points_measure_draw_and_clean_up(tmp_path):
    db = f"curves_smoke_{os.getpid()}"
    env = dict(os.environ, DATABASE_URL=_server_url(), CURVES_QUICK="1", CURVES_DB=db,
               CURVES_POINTS="baseline,finished_10k,queues_100",
               CURVES_RESULTS_DIR=str(tmp_path), CURVES_CHARTS_DIR=str(tmp_path / "charts"))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "curves.py")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((tmp_path / "curves-quick.json").read_text())
    by_name = {p["name"]: p for p in res["points"]}
    assert list(by_name) == ["baseline", "finished_10k", "queues_100"]
    for p in by_name.values():
        assert p["drain"]["median"] > 0 and p["claim_p99_ms"]["median"] > 0
    # The clones are there, within the check constraints (an INSERT that broke one would have
    # failed the run): the finished ones with their events beside the baseline's backlog.
    assert by_name["finished_10k"]["jobs_rows"] >= 10_000 + by_name["baseline"]["backlog"]
    assert by_name["finished_10k"]["job_events_bytes"] > by_name["baseline"]["job_events_bytes"]
    assert "--threads 16, nothing else" in res["workers"]
    # Two points of the finished curve and of the queue curve: both charts drawn, as SVG.
    for name in ("finished", "queues"):
        svg = (tmp_path / "charts" / f"curves-{name}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "claim p99" in svg
    assert "finished_10k" in proc.stdout
    assert _databases(db) == []


def test_curves_refuses_a_server_off_loopback(tmp_path):
    env = dict(os.environ, DATABASE_URL="postgres://postgres@192.0.2.1:5432/postgres",
               CURVES_QUICK="1", CURVES_RESULTS_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "curves.py")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "loopback" in proc.stderr


def test_curves_drops_its_database_on_sigterm(tmp_path):
    db = f"curves_sigterm_{os.getpid()}"
    env = dict(os.environ, DATABASE_URL=_server_url(), CURVES_QUICK="1", CURVES_DB=db,
               CURVES_POINTS="finished_50k", CURVES_RESULTS_DIR=str(tmp_path),
               CURVES_CHARTS_DIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, str(REPO / "bench" / "curves.py")], env=env,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Output(proc)
    try:
        # Under way: its database made, migrated and filled for the first point, by its log.
        out.wait_for_line("built in", timeout=120)
        assert _databases(db), "curves.py never created its database"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _databases(db) == []
    # Nor a worker process it started: each would poll a database that is gone, forever.
    assert _workers_of(db) == [], out.text()[-2000:]


def _workers_of(db: str) -> list[int]:
    """The live run_job_workers processes whose DATABASE_URL names `db` (Linux's /proc)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if b"run_job_workers" in cmdline and f"/{db}".encode() in environ:
            found.append(int(pid))
    return found
