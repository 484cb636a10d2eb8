"""GET /api/v1/metrics/latency/: p50, p95 and p99 of the wait (due to claim) and of the run
time (claim to finish) per bucket, exact on known data, by queue and type; served by
jobs_status_finished_idx."""
import json

import pytest
from django.db import connection

from django_pg_jobqueue import services, sql

pytestmark = pytest.mark.django_db

URL = "/api/v1/metrics/latency/"


def ran(job_type="noop", *, queue="default", wait: float, run: float, minutes_ago: int = 0,
        status="succeeded") -> int:
    """A finished job that waited `wait` seconds from due to claim and ran `run` seconds,
    finished at the start of the bucket `minutes_ago` minutes before the current one."""
    job = services.enqueue(job_type, {"seconds": 0} if job_type == "sleep" else {}, queue=queue)
    with connection.cursor() as cur:
        cur.execute("""
            UPDATE jobs SET status = %(status)s, attempts = 1,
                finished_at = date_bin('1 minute', now(), timestamptz '2000-01-01')
                              - make_interval(mins => %(ago)s),
                started_at = date_bin('1 minute', now(), timestamptz '2000-01-01')
                             - make_interval(mins => %(ago)s) - make_interval(secs => %(run)s),
                available_at = date_bin('1 minute', now(), timestamptz '2000-01-01')
                               - make_interval(mins => %(ago)s)
                               - make_interval(secs => %(run)s + %(wait)s)
            WHERE id = %(id)s""", {"status": status, "ago": minutes_ago, "run": run,
                                   "wait": wait, "id": job.id})
    return job.id


def latency(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def viewer_client(viewer, client_for):
    return client_for(viewer)


def test_the_percentiles_are_interpolated_exactly_per_bucket(viewer_client):
    for wait, run in [(1, 10), (2, 20), (3, 30), (4, 40)]:
        ran(wait=wait, run=run)
    ran(wait=100, run=0.5, minutes_ago=2, status="failed")
    body = latency(viewer_client, range="15m")
    assert body["range"] == "15m" and body["bucket_seconds"] == 60 and body["by"] is None
    (series,) = body["series"]
    assert series["queue"] is None
    points = series["points"]
    assert len(points) == 15
    last = points[-1]
    assert last["jobs"] == 4
    # percentile_cont over 1, 2, 3, 4: p50 = 2.5, p95 = 3 + 0.85 = 3.85, p99 = 3.97
    assert last["wait_p50_seconds"] == pytest.approx(2.5)
    assert last["wait_p95_seconds"] == pytest.approx(3.85)
    assert last["wait_p99_seconds"] == pytest.approx(3.97)
    assert last["run_p50_seconds"] == pytest.approx(25)
    assert last["run_p95_seconds"] == pytest.approx(38.5)
    assert last["run_p99_seconds"] == pytest.approx(39.7)
    two_ago = points[-3]
    assert two_ago["jobs"] == 1
    assert two_ago["wait_p50_seconds"] == pytest.approx(100)
    assert two_ago["run_p99_seconds"] == pytest.approx(0.5)
    empty = points[-2]
    assert empty["jobs"] == 0 and empty["wait_p50_seconds"] is None and empty["run_p95_seconds"] is None


def test_queue_and_type_narrow_it_and_by_queue_gives_a_series_each(viewer_client):
    ran(queue="media", wait=1, run=1)
    ran(queue="media", wait=3, run=3)
    ran("sleep", queue="media", wait=50, run=50)
    ran(queue="emails", wait=7, run=7)
    only = latency(viewer_client, queue="media", type="noop")["series"][0]["points"][-1]
    assert (only["jobs"], only["wait_p50_seconds"]) == (2, pytest.approx(2))
    body = latency(viewer_client, by="queue")
    assert body["by"] == "queue"
    by = {s["queue"]: s["points"][-1] for s in body["series"]}
    assert set(by) == {"emails", "media"}
    assert by["emails"]["wait_p50_seconds"] == pytest.approx(7)
    assert by["media"]["jobs"] == 3 and by["media"]["run_p50_seconds"] == pytest.approx(3)
    assert all(len(s["points"]) == 60 for s in body["series"])
    assert latency(viewer_client, by="queue", queue="nothing-here")["series"] == []


def test_a_job_that_never_ran_or_finished_long_ago_is_not_a_sample(viewer_client):
    services.cancel(services.enqueue("noop").id)  # cancelled before it ran
    ran(wait=1, run=1, minutes_ago=120)
    body = latency(viewer_client, range="1h")
    assert sum(p["jobs"] for p in body["series"][0]["points"]) == 0
    body = latency(viewer_client, range="24h")
    assert body["bucket_seconds"] == 1800 and len(body["series"][0]["points"]) == 48
    assert sum(p["jobs"] for p in body["series"][0]["points"]) == 1


@pytest.mark.parametrize("params, name", [
    ({"range": "7d"}, "range"), ({"queue": "bad name"}, "queue"), ({"by": "type"}, "by"),
    ({"nope": "1"}, "nope"), ({"type": "x" * 101}, "type"),
])
def test_bad_parameters_are_a_400_naming_them(viewer_client, params, name):
    response = viewer_client.get(URL, params)
    assert response.status_code == 400
    assert name in response.json()["errors"]


def test_the_range_is_read_from_the_finished_index_not_the_table():
    with connection.cursor() as cur:
        # 20,000 jobs finished two days ago, outside every range, and a few in it.
        cur.execute("""
            INSERT INTO jobs (type, queue, status, attempts, max_attempts, available_at,
                              created_at, updated_at, started_at, finished_at)
            SELECT 'noop', 'q' || g %% 5, 'succeeded', 1, 1, now() - interval '2 days',
                   now() - interval '2 days', now(), now() - interval '2 days',
                   now() - interval '2 days' + make_interval(secs => g %% 7)
            FROM generate_series(1, 20000) AS g""", [])
        cur.execute("ANALYZE jobs")
    for n in range(3):
        ran(wait=n, run=n)
    with connection.cursor() as cur:
        for by_queue in (False, True):
            cur.execute("EXPLAIN (FORMAT JSON) " + sql.LATENCY, {
                "bucket": "60 seconds", "buckets": 60, "queue": None, "type": None,
                "by_queue": by_queue})
            (plan,) = cur.fetchone()
            nodes = list(_nodes((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]))
            shown = json.dumps(plan)[:3000]
            assert "jobs_status_finished_idx" in {n.get("Index Name") for n in nodes}, shown
            assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "jobs"
                           for n in nodes), shown


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)
