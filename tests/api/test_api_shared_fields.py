"""Serializers that share one set of fields per class render and validate exactly as DRF's
per-instance fields and DRF's own to_representation do."""
import threading
import uuid
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from types import SimpleNamespace

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework import serializers

from django_pg_jobqueue import selectors, services
from django_pg_jobqueue.api.events import EventSerializer
from django_pg_jobqueue.api.jobs.enqueue import JobCreateSerializer
from django_pg_jobqueue.api.jobs.serializers import JobDetailSerializer, JobSerializer
from django_pg_jobqueue.compat import UTC
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

_per_instance = serializers.Serializer.__dict__["fields"]  # DRF's own: built for each instance
_drf_rendering = serializers.Serializer.to_representation  # field by field


class PerInstanceJobSerializer(JobSerializer):
    fields = _per_instance
    to_representation = _drf_rendering


class PerInstanceJobDetailSerializer(JobDetailSerializer):
    fields = _per_instance
    to_representation = _drf_rendering


class PerInstanceEventSerializer(EventSerializer):
    fields = _per_instance
    to_representation = _drf_rendering


class PerInstanceJobCreateSerializer(JobCreateSerializer):
    fields = _per_instance


def _jobs_in_every_shape():
    queued = services.enqueue("noop", {"n": 1}, idempotency_key="k1", delay_seconds=30)
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
        "last_traceback", "request_fingerprint", "retry_policy", "next_attempt",
        "waiting_for_handler", "unknown_type_at", "events", "dependencies", "dependants",
        "concurrency_key_running", "concurrency_key_wait", "concurrency_key_holders",
        "fairness_wait", "rate_limit_wait", "locked_by_state", "locked_by_last_seen_at", "awaiting_signal"}


def test_jobs_render_as_with_per_instance_fields():
    jobs = _jobs_in_every_shape()
    for job in jobs:
        assert JobSerializer(job).data == PerInstanceJobSerializer(job).data
        detail = selectors.job_detail(job.id)
        detail.job.latest_events = detail.events
        detail.job.dependencies, detail.job.dependants = detail.dependencies, detail.dependants
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



def test_the_rendering_plan_is_used_for_rows_of_the_model(monkeypatch):
    """The plan renders a Job without asking its plain fields for their attributes."""
    job = services.enqueue("noop", {"n": 1})
    calls = []
    original = serializers.Field.get_attribute
    monkeypatch.setattr(serializers.Field, "get_attribute",
                        lambda field, instance: calls.append(field.field_name) or original(field, instance))
    JobSerializer(job).data  # noqa: B018
    assert calls == []


def _odd_job() -> Job:
    """A row with values a real one rarely has: a naive datetime, an offset one, a text
    datetime, a UUID, a JSON list result, empty strings."""
    job = services.enqueue("noop", {"nested": {"a": [1, 2.5, None]}}, idempotency_key="odd")
    job.started_at = datetime(2030, 1, 2, 3, 4, 5, 600000)  # naive
    job.finished_at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt_timezone(timedelta(hours=5)))
    job.lease_expires_at = "2030-01-01T00:00:00Z"
    job.cancel_requested_at = datetime(2030, 6, 1, tzinfo=UTC)
    job.lease_token = uuid.uuid4()
    job.result = [1, "two", {"three": 3}]
    job.locked_by = ""
    job.last_error = ""
    return job


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns"])
def test_rows_render_as_drf_renders_them_in_any_time_zone(zone):
    jobs = [*_jobs_in_every_shape(), _odd_job()]
    with override_settings(TIME_ZONE=zone):
        for job in jobs:
            assert JobSerializer(job).data == PerInstanceJobSerializer(job).data
    with timezone.override("Asia/Kolkata"):
        for job in jobs:
            assert JobSerializer(job).data == PerInstanceJobSerializer(job).data


def test_rows_render_in_iso_8601_whatever_datetime_format_the_host_sets():
    job = _odd_job()
    with override_settings(REST_FRAMEWORK={"DATETIME_FORMAT": "%Y-%m-%d %H:%M"}):
        assert JobSerializer(job).data == PerInstanceJobSerializer(job).data
        assert JobSerializer(job).data["cancel_requested_at"] == "2030-06-01T00:00:00Z"
    with override_settings(USE_TZ=False):
        assert JobSerializer(job).data == PerInstanceJobSerializer(job).data


def test_events_render_as_drf_renders_them():
    job = _jobs_in_every_shape()[1]
    detail = selectors.job_detail(job.id)
    assert detail.events
    for event in detail.events:
        assert EventSerializer(event).data == PerInstanceEventSerializer(event).data


def test_anything_but_a_row_of_the_model_renders_field_by_field():
    row = SimpleNamespace(**{"id": 1, "type": "noop", "queue": "q", "status": "queued", "priority": 0,
           "payload": {}, "result": None, "attempts": 0, "max_attempts": 3,
           "available_at": datetime(2030, 1, 1, tzinfo=UTC), "created_at": None,
           "updated_at": None, "started_at": None, "finished_at": None, "locked_by": None,
           "lease_expires_at": None, "lease_token": None, "timeout_seconds": None,
           "progress_percent": None, "progress_message": "", "last_error": None,
           "idempotency_key": None, "cancel_requested_at": None})
    assert JobSerializer(row).data == PerInstanceJobSerializer(row).data
