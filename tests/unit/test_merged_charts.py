"""How merged.throughput and merged.latency merge the buckets of several databases, on
answers made up here (fanout.each replaced): throughput summed per bucket; latency's jobs
summed and each percentile the highest of the databases that finished jobs in the bucket (an
upper bound, exact when one database finished them all); a database that did not answer left
out and named; none answering is an OperationalError (the API's 503)."""
from datetime import datetime, timedelta, timezone

import pytest
from django.db import OperationalError

from django_pg_jobqueue import merged
from django_pg_jobqueue.fanout import Answer

T0 = datetime(2026, 12, 6, 1, 0, tzinfo=timezone.utc)
MIN = timedelta(minutes=1)


def _answers(monkeypatch, *values):
    answers = [Answer(alias, n, value) if value is not None else Answer(alias, n, error="refused")
               for n, (alias, value) in enumerate(values)]
    monkeypatch.setattr(merged, "each", lambda read: answers)


def _throughput(start, counts):
    return {"range": "15m", "bucket_seconds": 60, "queue": None, "type": None,
            "points": [{"at": start + i * MIN, "succeeded": ok, "failed": bad}
                       for i, (ok, bad) in enumerate(counts)]}


def test_throughput_sums_each_bucket_and_names_the_database_that_did_not_answer(monkeypatch):
    _answers(monkeypatch, ("default", _throughput(T0, [(1, 0), (2, 1), (0, 0)])),
             ("shard_b", _throughput(T0, [(3, 1), (0, 0), (5, 0)])), ("shard_c", None))
    out = merged.throughput(range="15m")
    assert [(p["succeeded"], p["failed"]) for p in out["points"]] == [(4, 1), (2, 1), (5, 0)]
    assert [(s["alias"], s["up"]) for s in out["shards"]] == [
        ("default", True), ("shard_b", True), ("shard_c", False)]


def test_throughput_read_across_a_bucket_boundary_keeps_the_ranges_length(monkeypatch):
    _answers(monkeypatch, ("default", _throughput(T0, [(1, 0), (1, 0), (1, 0)])),
             ("shard_b", _throughput(T0 + MIN, [(2, 0), (2, 0), (2, 0)])))
    out = merged.throughput(range="15m")
    assert [p["at"] for p in out["points"]] == [T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN]
    assert [p["succeeded"] for p in out["points"]] == [3, 3, 2]


def _point(at, jobs, wait=None, run=None):
    point = {"at": at, "jobs": jobs}
    for kind, figures in (("wait", wait), ("run", run)):
        for label, value in zip(("p50", "p95", "p99"), figures or (None, None, None)):
            point[f"{kind}_{label}_seconds"] = value
    return point


def _latency(*series):
    return {"range": "15m", "bucket_seconds": 60, "queue": None, "type": None, "by": "queue",
            "series": [{"queue": name, "points": points} for name, points in series]}


def test_latency_sums_the_jobs_and_takes_each_percentiles_highest(monkeypatch):
    _answers(monkeypatch,
             ("default", _latency(("default", [_point(T0, 4, (1, 2, 3), (10, 20, 30)),
                                               _point(T0 + MIN, 0)]))),
             ("shard_b", _latency(("default", [_point(T0, 1, (5, 5, 5), (1, 1, 1)),
                                               _point(T0 + MIN, 2, (7, 8, 9), (1, 2, 3))]),
                                  ("emails", [_point(T0, 0), _point(T0 + MIN, 1, (1, 1, 1),
                                                                    (2, 2, 2))]))))
    out = merged.latency(range="15m", by_queue=True)
    assert [s["queue"] for s in out["series"]] == ["default", "emails"]
    first, second = out["series"][0]["points"]
    assert first["jobs"] == 5
    assert [first[f"wait_{p}_seconds"] for p in ("p50", "p95", "p99")] == [5, 5, 5]
    assert [first[f"run_{p}_seconds"] for p in ("p50", "p95", "p99")] == [10, 20, 30]
    # One database finished the bucket's jobs: its figures, exact.
    assert second["jobs"] == 2 and second["run_p99_seconds"] == 3
    assert out["series"][1]["points"][0]["wait_p50_seconds"] is None


def test_no_database_answering_is_an_operational_error_naming_each(monkeypatch):
    _answers(monkeypatch, ("default", None), ("shard_c", None))
    with pytest.raises(OperationalError, match="default: refused; shard_c: refused"):
        merged.latency(range="15m")
