"""Serializers that share one set of fields per class render and validate exactly as DRF's
per-instance fields do."""
import threading

import pytest
from rest_framework import serializers

from jobs import selectors, services
from jobs.api.serializers import JobCreateSerializer, JobDetailSerializer, JobSerializer

pytestmark = pytest.mark.django_db

_per_instance = serializers.Serializer.__dict__["fields"]  # DRF's own: built for each instance


class PerInstanceJobSerializer(JobSerializer):
    fields = _per_instance


class PerInstanceJobDetailSerializer(JobDetailSerializer):
    fields = _per_instance


class PerInstanceJobCreateSerializer(JobCreateSerializer):
    fields = _per_instance


def _jobs_in_every_shape():
    queued = services.enqueue("noop", {"n": 1}, idempotency_key="k1", delay=30)
    running = services.enqueue("sleep", {"seconds": 1}, priority=7)
    claimed = services.claim(worker_ids=["test-1-0"], job_ids=[running.id])[0]
    services.record_progress(claimed.id, claimed.lease_token, worker_id="test-1-0",
                             percent=40, message="halfway")
    done = services.enqueue("noop")
    lease = services.claim(worker_ids=["test-1-0"], job_ids=[done.id])[0].lease_token
    services.complete(done.id, lease, worker_id="test-1-0", result={"ok": [1, 2]})
    cancelled = services.cancel(services.enqueue("noop").id)
    return [selectors.job_get(j.id) for j in (queued, running, done, cancelled)]


def test_fields_are_built_once_per_class():
    assert JobSerializer().fields is JobSerializer().fields
    assert JobDetailSerializer().fields is not JobSerializer().fields
    assert set(JobDetailSerializer().fields) - set(JobSerializer().fields) == {
        "last_traceback", "request_fingerprint", "events"}


def test_jobs_render_as_with_per_instance_fields():
    jobs = _jobs_in_every_shape()
    for job in jobs:
        assert JobSerializer(job).data == PerInstanceJobSerializer(job).data
        detail = selectors.job_detail(job.id)
        detail.job.latest_events = detail.events
        assert (JobDetailSerializer(detail.job).data
                == PerInstanceJobDetailSerializer(detail.job).data)
    assert JobSerializer(jobs, many=True).data == PerInstanceJobSerializer(jobs, many=True).data


@pytest.mark.parametrize("body", [
    {"type": "noop"},
    {"type": "noop", "payload": {"a": 1}, "priority": 5, "queue": "q.1", "max_attempts": 2,
     "idempotency_key": "x", "run_at": "2030-01-01T00:00:00+02:00", "timeout_seconds": 9},
    {"type": "noop", "delay_seconds": 3.5, "idempotency_key": None},
    {"type": "nope"}, {"type": "noop", "priority": 101}, {"type": "noop", "payload": [1]},
    {"type": "noop", "queue": "bad name"}, {"type": "noop", "status": "running"},
    {"type": "noop", "run_at": "2030-01-01T00:00:00Z", "delay_seconds": 1},
    {"type": "noop", "idempotency_key": "  "}, {"payload": {}}, {"type": "noop", "x": 1},
])
def test_create_bodies_validate_as_with_per_instance_fields(body):
    shared, per_instance = JobCreateSerializer(data=body), PerInstanceJobCreateSerializer(data=body)
    assert shared.is_valid() == per_instance.is_valid()
    assert shared.errors == per_instance.errors
    if not shared.errors:
        assert shared.enqueue_options() == per_instance.enqueue_options()


def test_threads_rendering_at_once_each_get_their_own_job():
    jobs = [services.enqueue("noop", {"i": i}) for i in range(8)]
    expected = {job.id: PerInstanceJobSerializer(job).data for job in jobs}
    failures = []

    def render(job):
        for _ in range(200):
            if JobSerializer(job).data != expected[job.id]:
                failures.append(job.id)
                return

    threads = [threading.Thread(target=render, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []

