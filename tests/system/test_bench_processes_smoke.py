"""The processes benchmark (bench/processes.py, run by `make bench`) works end to end at a tiny
size: it drains CPU-bound jobs with `--processes 2 --threads 1` and `--processes 1 --threads 2`,
prints the machine's core count, both drains and the speed-up, writes its JSON and drops its
database. It asserts that the harness works, never how fast anything is."""
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.system.test_bench_smoke import _server_url

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


@pytest.mark.timeout(300)
def test_processes_bench_runs_end_to_end_and_cleans_up(tmp_path):
    prefix = f"bench_proc_smoke_{os.getpid()}"
    env = dict(os.environ, DATABASE_URL=_server_url(), BENCH_SMOKE="1", BENCH_DB_PREFIX=prefix,
               BENCH_RESULTS_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "processes.py")], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{os.cpu_count()} cores" in proc.stdout
    assert "--processes 2 --threads 1:" in proc.stdout
    assert "--processes 1 --threads 2:" in proc.stdout
    assert "speed-up with processes:" in proc.stdout
    result = json.loads((tmp_path / "processes.json").read_text())
    assert result["cores"] == os.cpu_count() and result["speedup"] > 0
    with psycopg.connect(_server_url().rsplit("/", 1)[0] + "/postgres") as c:
        left = c.execute("SELECT count(*) FROM pg_database WHERE datname LIKE %s",
                         [prefix + "%"]).fetchone()[0]
    assert left == 0
