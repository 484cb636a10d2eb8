"""The benchmark harness works end to end (bench/run.py at tiny sizes): it creates its own
databases, runs our engine's measurements with real worker processes, the raw-SQL ceiling and
pgbench, prints the table, writes the JSON and drops its databases. It asserts that the
harness works, never how fast anything is. The peers are left out: they need their own
virtualenv (bench/.venv-peers), which `make bench` builds."""
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _server_url() -> str:
    db = settings.DATABASES["default"]
    auth = quote(db.get("USER") or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    host = db.get("HOST") or "127.0.0.1"
    return f"postgres://{auth}@{host}:{db.get('PORT') or 5432}/postgres"


@pytest.mark.timeout(600)
def test_bench_smoke_runs_end_to_end_and_cleans_up(tmp_path):
    prefix = f"bench_smoke_{os.getpid()}"
    env = dict(os.environ, DATABASE_URL=_server_url(), BENCH_SMOKE="1",
               BENCH_SYSTEMS="ours,raw,pgbench", BENCH_DB_PREFIX=prefix,
               BENCH_RESULTS_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-3000:]

    # The table is printed, one line per figure, and the targets are judged.
    assert "drain at defaults (jobs/s)" in proc.stdout
    assert "drain, best config (jobs/s)" in proc.stdout and "pickup p95 (ms)" in proc.stdout
    assert "speed targets:" in proc.stdout
    # Defaults first: the headline's first figure is the drain at defaults against PgQueuer.
    assert proc.stdout.lstrip().startswith("headline")
    assert proc.stdout.index("drain at defaults") < proc.stdout.index("drain, tuned best")

    res = json.loads((tmp_path / "smoke.json").read_text())
    ours = res["ours"]
    n = res["sizes"]["n"]
    for figure in ("enqueue_single", "enqueue_bulk", "drain"):
        assert ours[figure]["median"] > 0 and len(ours[figure]["runs"]) == res["sizes"]["runs"]
    assert ours["drain"]["config"] and ours["drain"]["tried"]
    # At defaults: only --threads chosen, the rest described from the settings as resolved.
    for figure in ("drain_defaults", "drain_defaults_stale_stats"):
        assert ours[figure]["median"] > 0 and len(ours[figure]["runs"]) == res["sizes"]["runs"]
    assert "--threads 16, nothing else: " in ours["drain_defaults"]["config"]
    pickup = ours["pickup"]
    assert 0 < pickup["p50"]["median"] <= pickup["p95"]["median"] <= pickup["p99"]["median"]
    assert ours["claim_at_scale"]["p99"]["median"] > 0
    assert "Index" in ours["claim_at_scale"]["plan"]  # EXPLAIN of the claim is recorded
    assert ours["rss"]["after_mb"]["median"] > 10
    for mode in ("claim1_complete1", "claim50_complete_each", "claim50_complete50",
                 "insert_single", "insert_bulk"):
        assert res["raw"][mode]["median"] > 0
    assert res["raw"]["claim50_complete50"]["n"] == n
    api = ours["api"]
    if "skipped" not in api:  # `hey` (Debian) installed: gunicorn really served both
        assert api["post"]["codes"].get("201", 0) > 0 and api["get"]["codes"].get("200", 0) > 0
        assert api["post"]["rps"]["median"] > 0
    redis_api = ours["api_redis"]
    if "skipped" not in redis_api:  # a Redis server answered: the login throttle counted there
        assert redis_api["settings"] == {"JOB_THROTTLE_CACHE_URL": "redis://127.0.0.1:6379/14"}
        assert redis_api["post"]["codes"].get("201", 0) > 0
    assert res["postgres"]["fsync"] in ("on", "off")
    assert {t["target"] for t in res["targets"]} >= {
        "drain_defaults", "drain_best", "drain_stale_stats", "claim_p99", "rss_after"}
    stale = next(t for t in res["targets"] if t["target"] == "drain_stale_stats")
    assert stale["got"] == pytest.approx(ours["drain_defaults_stale_stats"]["median"]
                                         / ours["drain_defaults"]["median"])
    drain_row = next(r for r in res["table"] if r["key"] == "drain")
    assert res["table"][0]["key"] == "drain_defaults"
    assert drain_row["ratio_to_raw"] == pytest.approx(
        ours["drain"]["median"] / res["raw"]["claim50_complete50"]["median"])

    # Every database the harness created is gone.
    with psycopg.connect(_server_url(), autocommit=True) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                            [prefix + "%"]).fetchall()
    assert left == []


@pytest.mark.timeout(300)
def test_drain_profile_prices_the_schema_and_cleans_up():
    """bench/drain_profile.py at tiny sizes: a variant with the old foreign key instead of the
    history's guard, then the schema as migrated again (so the guard was put back), each split
    into worker and server CPU; its scratch database is dropped."""
    env = dict(os.environ, DATABASE_URL=_server_url())
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "drain_profile.py"), "-n", "300",
                           "--rounds", "1", "--variants", "with_fk,baseline"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()
            if line.split() and line.split()[0] in ("with_fk", "baseline")}
    assert set(rows) == {"with_fk", "baseline"}, proc.stdout
    assert "foreign key" in " ".join(rows["with_fk"])
    with psycopg.connect(_server_url(), autocommit=True) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE "
                            "'drain\\_profile\\_%'").fetchall()
    assert left == []


PEERS_PY = REPO / "bench" / ".venv-peers" / "bin" / "python"


@pytest.mark.timeout(600)
@pytest.mark.skipif(not PEERS_PY.exists(), reason="bench/.venv-peers not built (make bench)")
def test_celery_adapter_measures_or_says_why_it_skipped():
    """The Celery peer at tiny sizes: with a Redis server on 127.0.0.1:6379 it measures
    enqueue, the drain at defaults and at its best pool, and pickup; with none (a port where
    nothing listens) it says it was skipped, and why, instead of failing the run."""
    script = str(REPO / "bench" / "peer_celery.py")
    env = dict(os.environ, BENCH_REDIS_URL="redis://127.0.0.1:9")
    down = subprocess.run([str(PEERS_PY), script, "all", "--n", "10"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr[-2000:]
    assert "does not answer" in json.loads(down.stdout.strip().splitlines()[-1])["skipped"]
    ping = subprocess.run([str(PEERS_PY), script, "ping"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    if ping.returncode != 0:
        pytest.skip(f"no Redis server at 127.0.0.1:6379: {ping.stdout.strip()}")
    env = dict(os.environ, BENCH_REDIS_DB=str(14))  # not the bench's own database number
    proc = subprocess.run([str(PEERS_PY), script, "all", "--n", "200", "--runs", "1",
                           "--pickup-n", "10", "--configs", "1xsolox1x4,1xthreadsx4x4"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    for figure in ("enqueue_single", "enqueue_bulk", "drain_defaults", "drain"):
        assert res[figure]["median"] > 0
    assert "no flag" in res["drain_defaults"]["config"]
    assert set(res["drain"]["tried"]) == {"1xsolox1x4", "1xthreadsx4x4"}
    assert res["pickup"]["p95"]["median"] > 0
