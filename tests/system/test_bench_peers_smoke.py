"""The graphile-worker and Oban for Python adapters of `make bench` work end to end at tiny
sizes: each installs its schema in a scratch database, enqueues one at a time and in bulk,
drains at its defaults and at one tuned configuration, measures pickup and prints its one JSON
line. They assert that the adapters work, never how fast anything is. Skipped where `make
bench` has not installed the peers (bench/.venv-peers with oban, bench/peers/graphile with
Node.js)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from tests.system.test_bench_smoke import PEERS_PY, _server_url

REPO = Path(__file__).resolve().parents[2]
GRAPHILE = REPO / "bench" / "peers" / "graphile" / "node_modules" / "graphile-worker"
pytestmark = pytest.mark.e2e


def _has_oban() -> bool:
    return PEERS_PY.exists() and subprocess.run(
        [str(PEERS_PY), "-c", "import oban"], capture_output=True).returncode == 0


def _run_adapter(script: str, db: str, *args: str) -> dict:
    server = _server_url()
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db}"')
    try:
        url = server.rsplit("/", 1)[0] + "/" + db
        proc = subprocess.run(
            [str(PEERS_PY), str(REPO / "bench" / script), "all", "--url", url, "--n", "100",
             "--runs", "1", "--pickup-n", "5", "--defaults-procs", "1", *args],
            cwd=REPO, capture_output=True, text=True, timeout=110)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_measured(res: dict, tried: str) -> None:
    for figure in ("enqueue_single", "enqueue_bulk", "drain_defaults", "drain"):
        assert res[figure]["median"] > 0, figure
    assert list(res["drain"]["tried"]) == [tried]
    assert res["pickup"]["p95"]["median"] > 0


@pytest.mark.timeout(120)
@pytest.mark.skipif(not (PEERS_PY.exists() and GRAPHILE.exists() and shutil.which("node")),
                    reason="graphile-worker not installed (make bench, with Node.js)")
def test_graphile_worker_adapter_measures_at_its_defaults_and_its_batched_best():
    res = _run_adapter("peer_graphile.py", f"bench_gw_smoke_{os.getpid()}",
                       "--configs", "1x4x10x0")
    _assert_measured(res, "1x4x10x0")
    assert res["version"].startswith("0.18")
    assert "WorkerPreset defaults" in res["drain_defaults"]["config"]
    assert "localQueue 10" in res["drain"]["config"]


@pytest.mark.timeout(120)
@pytest.mark.skipif(not _has_oban(), reason="oban not in bench/.venv-peers (make bench)")
def test_oban_adapter_measures_at_its_default_limit_and_a_tuned_one():
    res = _run_adapter("peer_oban.py", f"bench_oban_smoke_{os.getpid()}", "--configs", "1x20")
    _assert_measured(res, "1x20")
    assert res["version"].startswith("0.7")
    assert "limit 10" in res["drain_defaults"]["config"]
