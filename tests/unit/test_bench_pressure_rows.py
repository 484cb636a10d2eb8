"""The pressure cell's rows (bench/pressure.py, `make pressure`): each interval counts the jobs
that started in it, takes the pickup p95 over them (start minus creation), carries the sizes
sampled at its end, and is marked when the snapshot was held during any part of it. Pure: no
database, no workers; the cell itself runs only by `make pressure`."""
import pytest

from bench.pressure import report, summarize, table_rows

SETTINGS = {"sample_seconds": 10.0, "hold_from": 0.25, "hold_until": 0.5, "minutes": 0.5,
            "rate": 2.0, "vacuum_seconds": 10.0, "systems": ["ours"]}


def _sample(heap_mb: float, dead: int, backlog: int) -> dict:
    return {"t": 0.0, "heap": heap_mb * 1e6, "index": heap_mb * 5e5, "dead": dead,
            "backlog": backlog, "all_tables": heap_mb * 3e6}


def test_each_interval_counts_its_starts_their_pickup_and_whether_the_snapshot_was_held():
    t0 = 1000.0
    # Two jobs a second for 30 s; those created in the second interval start 50 ms late, the
    # others 10 ms late; one job of the last interval never started.
    created = {i: t0 + i / 2 for i in range(60)}
    started = {i: t + (0.05 if 10 <= t - t0 < 20 else 0.01) for i, t in created.items()
               if i != 59}
    samples = [_sample(0.1, 0, 0), _sample(1, 100, 0), _sample(2, 900, 3), _sample(2, 50, 1)]

    rows = table_rows(t0, created, started, samples, SETTINGS)

    assert [r["end_seconds"] for r in rows] == [10, 20, 30]
    # Held from 15 s to 30 s: the second and third intervals.
    assert [r["held"] for r in rows] == [False, True, True]
    assert [r["throughput"] for r in rows] == [2.0, 2.0, pytest.approx(19 / 10)]
    assert rows[0]["pickup_p95_ms"] == pytest.approx(10, abs=0.01)
    assert rows[1]["pickup_p95_ms"] == pytest.approx(50, abs=0.01)
    assert (rows[1]["heap_mb"], rows[1]["index_mb"], rows[1]["dead"], rows[1]["backlog"]) == (
        2, 1, 900, 3)
    assert rows[2]["all_tables_mb"] == pytest.approx(6)

    # Before the hold: the one interval wholly before it; during it: the held ones.
    summary = summarize(rows, SETTINGS)
    assert summary["throughput"]["ratio"] == pytest.approx((2.0 + 1.9) / 2 / 2.0)
    assert summary["pickup_p95_ms"]["ratio"] == pytest.approx(3.0, rel=0.01)  # (50+10)/2 / 10
    assert summary["met"] is False  # pickup p95 more than doubled
    assert summary["growth"]["heap_mb"] == [1, 2, 2]

    text = report({"ours": {"minutes": rows, "produced": 60, "started": 59,
                            "vacuums_by_harness": None}}, SETTINGS,
                  {"date": "today", "server_version": "15", "autovacuum": "on", "cpus": 2,
                   "load_before": "0.1", "load_after": "0.2"})
    lines = text.splitlines()
    assert "a snapshot held from minute 0.25 to 0.5" in lines[0]
    assert "load average 0.1 before, 0.2 after" in lines[1]
    held = [line.split("|")[0].strip() for line in lines if line.strip()[:2] in ("10", "20", "30")]
    assert held == ["10", "20*", "30*"]
    assert "ours: produced 60, started 59" in text
    assert "want >= 0.9x and <= 2.0x: MISSED" in text
