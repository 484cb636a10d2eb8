"""The merged console (merged.py) in one process, without a second server
(tests/system/test_merged_console.py runs three): with JOB_SHARDS empty the job list runs the
same two statements as before and answers the same keys; with a shard whose server refuses
connections, the list, the overview's figures, the queues, the workers and /metrics answer
from JOB_DATABASE and say the shard is down, its connection bounded by a connect timeout and not
tried again for a few seconds; the
merged list pages by cursor (each job once) and refuses a page number or a cursor it did not
give, naming the parameter."""
import socket
import types

import pytest
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test.utils import CaptureQueriesContext

from django_pg_jobqueue import fanout, services

pytestmark = [pytest.mark.django_db,
              pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")]

JOBS = "/api/v1/jobs/"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def refused_shard(db, settings):
    """JOB_SHARDS with one shard, `shard_c`, at a port where nothing listens."""
    entry = {**connections.settings["default"], "HOST": "127.0.0.1", "PORT": _closed_port(),
             "OPTIONS": {}}
    connections.settings["shard_c"] = entry
    # Django's test case refuses connections to an alias it was not told of; this one is
    # added after it started, and its connection only ever fails: the real connect for it.
    patched = BaseDatabaseWrapper.ensure_connection
    real = next((c.cell_contents for c in patched.__closure__ or ()
                 if getattr(c.cell_contents, "__name__", "") == "ensure_connection"), patched)
    connections["shard_c"].ensure_connection = types.MethodType(real, connections["shard_c"])
    settings.DATABASES = {**settings.DATABASES, "shard_c": entry}
    settings.DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
    settings.JOB_SHARDS = {"shard_c": {"number": 2, "queues": ["video"]}}
    fanout.forget_failures()
    yield entry
    fanout.forget_failures()
    connections["shard_c"].close()
    del connections.settings["shard_c"]
    if hasattr(connections._connections, "shard_c"):
        delattr(connections._connections, "shard_c")


def test_without_shards_the_list_runs_its_count_and_page_as_before(operator_client):
    services.enqueue_many([{"type": "noop"}] * 3)
    operator_client.get(JOBS)  # warm: the token and permissions are remembered
    with CaptureQueriesContext(connection) as queries:
        body = operator_client.get(JOBS).json()
    assert set(body) == {"count", "next", "previous", "results"}
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 2, statements
    assert statements[0].startswith("SELECT COUNT(*)")
    assert statements[1].endswith('ORDER BY "jobs"."id" DESC LIMIT 3'), statements[1]


def test_a_shard_that_refuses_is_reported_down_and_job_database_answers(
        operator_client, refused_shard):
    services.enqueue_many([{"type": "noop"}] * 3)
    response = operator_client.get(JOBS)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3 and len(body["results"]) == 3 and body["next"] is None
    default, shard = body["shards"]
    assert (default["alias"], default["up"], default["count"]) == ("default", True, 3)
    assert (shard["alias"], shard["number"], shard["up"], shard["count"]) == (
        "shard_c", 2, False, None)
    assert shard["error"]
    # The shard's connection gives up opening after fanout.SHARD_CONNECT_TIMEOUT_SECONDS.
    assert connections["shard_c"].settings_dict["OPTIONS"]["connect_timeout"] == (
        fanout.SHARD_CONNECT_TIMEOUT_SECONDS)

    metrics = operator_client.get("/api/v1/metrics/").json()
    assert metrics["counts_by_status"]["queued"] == 3
    assert [(s["alias"], s["up"]) for s in metrics["shards"]] == [
        ("default", True), ("shard_c", False)]
    for path in ("/api/v1/queues/", "/api/v1/workers/"):
        response = operator_client.get(path)
        assert response.status_code == 200
        assert response.headers["X-Job-Shards-Down"] == "shard_c"
    # Prometheus: each sample names its database; the shard left out says so.
    text = operator_client.get("/metrics").content.decode()
    assert 'jobqueue_shard_up{shard="default"} 1.0' in text
    assert 'jobqueue_shard_up{shard="shard_c"} 0.0' in text
    assert 'jobqueue_queue_depth{queue="default",shard="default"} 3.0' in text
    # A shard's own list, asked for by name, is a 503 as before.
    assert operator_client.get(JOBS, {"shard": "shard_c"}).status_code == 503


def test_without_shards_the_metrics_have_no_shard_label(operator_client):
    services.enqueue("noop")
    text = operator_client.get("/metrics").content.decode()
    assert 'jobqueue_queue_depth{queue="default"} 1.0' in text
    assert "shard" not in text


def test_a_shard_that_failed_is_not_tried_again_for_a_few_seconds(
        operator_client, refused_shard, monkeypatch):
    first = operator_client.get(JOBS).json()["shards"][1]["error"]
    tried = []
    monkeypatch.setattr(fanout, "_bound_connect", tried.append)
    again = operator_client.get(JOBS).json()["shards"][1]
    assert tried == ["default"] and not again["up"]
    assert again["error"].startswith(first[:40]) and again["error"].endswith("s ago)")
    # Past DOWN_RECHECK_SECONDS it is tried again.
    monkeypatch.setattr(fanout, "DOWN_RECHECK_SECONDS", 0.0)
    operator_client.get(JOBS)
    assert tried == ["default", "default", "shard_c"]


def test_a_shard_s_own_connect_timeout_is_kept(operator_client, refused_shard):
    refused_shard["OPTIONS"]["connect_timeout"] = 1
    assert operator_client.get(JOBS).status_code == 200
    assert connections["shard_c"].settings_dict["OPTIONS"]["connect_timeout"] == 1


def test_the_merged_list_pages_by_cursor_and_refuses_what_it_did_not_give(
        operator_client, refused_shard):
    jobs = services.enqueue_many([{"type": "noop", "priority": n % 3} for n in range(7)])
    for ordering, expected in (("-id", sorted((j.id for j in jobs), reverse=True)),
                               ("priority", [j.id for j in sorted(jobs, key=lambda j: (
                                   j.priority, j.id))])):
        seen, body = [], operator_client.get(JOBS, {"page_size": 3, "ordering": ordering}).json()
        while True:
            seen += [j["id"] for j in body["results"]]
            assert body["previous"] is None
            if body["next"] is None:
                break
            assert "page=" not in body["next"] and "ordering=" in body["next"]
            body = operator_client.get(body["next"]).json()
        assert seen == expected, ordering
    assert list(operator_client.get(JOBS, {"page": 2}).json()["errors"]) == ["page"]
    assert operator_client.get(JOBS, {"page": 1}).status_code == 200
    for cursor in ("nope", "eyJ2IjoxfQ"):
        assert list(operator_client.get(JOBS, {"cursor": cursor}).json()["errors"]) == [
            "cursor"]
