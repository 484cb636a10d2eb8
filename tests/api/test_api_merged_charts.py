"""GET metrics/throughput/ and metrics/latency/ over every database (merged.py): with JOB_SHARDS
empty they run their one statement and answer the same keys as before; with a shard whose
server refuses connections they answer JOB_DATABASE's buckets and say the shard is down. How
two databases' buckets merge (counts summed, each percentile the highest: an upper bound) is
tests/unit/test_merged_charts.py's."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.api.test_api_latency import ran
from tests.api.test_api_merged_list import refused_shard  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db,
              pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")]

THROUGHPUT, LATENCY = "/api/v1/metrics/throughput/", "/api/v1/metrics/latency/"


def test_without_shards_each_chart_runs_its_one_statement_and_names_no_shard(operator_client):
    ran(wait=1, run=2)
    for url in (THROUGHPUT, LATENCY):
        operator_client.get(url)  # warm: the token and permissions are remembered
        with CaptureQueriesContext(connection) as queries:
            body = operator_client.get(url, {"range": "15m"}).json()
        assert len(queries.captured_queries) == 1, queries.captured_queries
        assert "shards" not in body


def test_a_shard_that_refuses_is_reported_down_and_the_charts_show_job_database(
        operator_client, refused_shard):  # noqa: F811
    ran(wait=1, run=2)
    ran(wait=3, run=4, status="failed")
    body = operator_client.get(THROUGHPUT, {"range": "15m"}).json()
    assert len(body["points"]) == 15
    assert (body["points"][-1]["succeeded"], body["points"][-1]["failed"]) == (1, 1)
    assert [(s["alias"], s["up"]) for s in body["shards"]] == [("default", True),
                                                               ("shard_c", False)]
    assert body["shards"][1]["error"]
    body = operator_client.get(LATENCY, {"range": "15m", "by": "queue"}).json()
    (series,) = body["series"]
    assert series["queue"] == "default" and series["points"][-1]["jobs"] == 2
    assert series["points"][-1]["run_p99_seconds"] == pytest.approx(3.98)
    assert [s["up"] for s in body["shards"]] == [True, False]

