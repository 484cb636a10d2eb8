"""GET /api/v1/queues/{name}/ (a queue's page), GET /api/v1/metrics/throughput/ (ranges and
filters), and who may set a queue's concurrency limit (change_queuesetting)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, WorkerProcess

pytestmark = pytest.mark.django_db


def finish(job_id, *, ok=True):
    claimed = services.claim(worker_ids=["qp-1-0"], job_ids=[job_id])[0]
    if ok:
        services.complete(job_id, claimed.lease_token, worker_id="qp-1-0", result=None)
    else:
        services.fail(job_id, claimed.lease_token, worker_id="qp-1-0", error="x", permanent=True)


@pytest.fixture
def viewer_client(viewer, client_for):
    return client_for(viewer)


def test_a_queues_page_counts_every_status_and_lists_its_workers(viewer_client):
    q = [services.enqueue("noop", queue="media").id for _ in range(5)]
    services.enqueue("noop", queue="other")
    finish(q[0])
    finish(q[1], ok=False)
    services.cancel(q[2])
    services.claim(worker_ids=["hostA-1-3"], job_ids=[q[3]])
    WorkerProcess.objects.create(id="hostA-1", hostname="hostA", pid=1, threads=4, queues=["media"])
    WorkerProcess.objects.create(id="hostB-2", hostname="hostB", pid=2, threads=2, queues=["*"])
    WorkerProcess.objects.create(id="hostC-3", hostname="hostC", pid=3, threads=2, queues=["other"])
    gone = WorkerProcess.objects.create(id="hostD-4", hostname="hostD", pid=4, threads=1, queues=["media"])
    WorkerProcess.objects.filter(pk=gone.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))

    response = viewer_client.get("/api/v1/queues/media/")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["name"] == "media" and body["paused"] is False
    assert body["counts_by_status"] == {"queued": 1, "running": 1, "succeeded": 1, "failed": 1,
                                        "cancelled": 1}
    assert (body["queued"], body["running"]) == (1, 1)
    workers = {w["id"]: w for w in body["workers"]}
    assert set(workers) == {"hostA-1", "hostB-2"}  # not the other queue's, not the silent one
    assert workers["hostA-1"]["running_here"] == 1 and workers["hostA-1"]["all_queues"] is False
    assert workers["hostB-2"]["running_here"] == 0 and workers["hostB-2"]["all_queues"] is True


def test_an_unknown_queue_is_a_404_and_a_bad_name_a_400(viewer_client):
    assert viewer_client.get("/api/v1/queues/nope/").status_code == 404
    assert viewer_client.get("/api/v1/queues/has space/").status_code == 400


def test_the_limit_needs_change_queuesetting_pause_needs_change_job(make_user, client_for):
    services.enqueue("noop", queue="media")
    operator = client_for(make_user("op", perms=["view_job", "change_job"]))
    admin = client_for(make_user("qs", perms=["view_job", "change_queuesetting"]))

    assert operator.patch("/api/v1/queues/media/", {"concurrency_limit": 2},
                          format="json").status_code == 403
    assert operator.post("/api/v1/queues/media/pause/").status_code == 200
    response = admin.patch("/api/v1/queues/media/", {"concurrency_limit": 2}, format="json")
    assert response.status_code == 200 and response.json()["concurrency_limit"] == 2
    assert admin.post("/api/v1/queues/media/resume/").status_code == 403
    assert admin.get("/api/v1/auth/me/").json()["can"]["change_queue"] is True
    assert operator.get("/api/v1/auth/me/").json()["can"]["change_queue"] is False


# -- throughput ---------------------------------------------------------------------------------

@pytest.mark.parametrize("range_, buckets, seconds", [("15m", 15, 60), ("1h", 60, 60),
                                                      ("24h", 48, 1800)])
def test_throughput_has_every_bucket_of_its_range(viewer_client, range_, buckets, seconds):
    finish(services.enqueue("noop").id)
    body = viewer_client.get("/api/v1/metrics/throughput/", {"range": range_}).json()
    assert body["range"] == range_ and body["bucket_seconds"] == seconds
    assert len(body["points"]) == buckets
    assert sum(p["succeeded"] for p in body["points"]) == 1
    assert body["points"][-1]["succeeded"] == 1  # the current bucket, last


def test_throughput_filters_by_queue_and_type(viewer_client):
    finish(services.enqueue("noop", queue="media").id)
    finish(services.enqueue("noop", queue="media").id, ok=False)
    finish(services.enqueue("sleep", {"seconds": 0}, queue="media").id)
    finish(services.enqueue("noop").id)

    def totals(**params):
        points = viewer_client.get("/api/v1/metrics/throughput/", params).json()["points"]
        return sum(p["succeeded"] for p in points), sum(p["failed"] for p in points)

    assert totals() == (3, 1)
    assert totals(queue="media") == (2, 1)
    assert totals(queue="media", type="noop") == (1, 1)
    assert totals(type="sleep") == (1, 0)


def test_an_old_finish_is_outside_the_range(viewer_client):
    job = services.enqueue("noop").id
    finish(job)
    Job.objects.filter(pk=job).update(finished_at=timezone.now() - timedelta(hours=2))
    points = viewer_client.get("/api/v1/metrics/throughput/", {"range": "1h"}).json()["points"]
    assert sum(p["succeeded"] for p in points) == 0
    points = viewer_client.get("/api/v1/metrics/throughput/", {"range": "24h"}).json()["points"]
    assert sum(p["succeeded"] for p in points) == 1


@pytest.mark.parametrize("params, name", [
    ({"range": "7d"}, "range"), ({"queue": "bad name"}, "queue"), ({"nope": "1"}, "nope"),
])
def test_bad_throughput_parameters_are_a_400_naming_them(viewer_client, params, name):
    response = viewer_client.get("/api/v1/metrics/throughput/", params)
    assert response.status_code == 400
    assert name in response.json()["errors"]
