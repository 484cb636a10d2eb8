"""Every failed attempt keeps its own error and traceback, on its failure event's data (the
job row keeps only the last attempt's), capped like the row's (JOB_MAX_TRACEBACK_CHARS)."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.testing import drain

pytestmark = pytest.mark.django_db

FAILURE_KINDS = ("retry_scheduled", "failed", "cancelled")


def failures(job_id):
    return list(JobEvent.objects.filter(job_id=job_id, kind__in=FAILURE_KINDS).order_by("id"))


def test_each_attempts_traceback_is_on_its_failure_event(custom_handler):
    calls = []

    def flaky(ctx, payload):
        calls.append(1)
        raise RuntimeError(f"attempt {len(calls)} broke in step_{len(calls)}")

    custom_handler("flaky_tb", flaky)
    job = services.enqueue("flaky_tb", max_attempts=3)
    drain("flaky_tb", include_scheduled=True)

    events = failures(job.id)
    assert [e.kind for e in events] == ["retry_scheduled", "retry_scheduled", "failed"]
    for n, event in enumerate(events, start=1):
        assert event.message == f"RuntimeError: attempt {n} broke in step_{n}"
        tb = event.data["traceback"]
        assert tb.startswith("Traceback (most recent call last)")
        assert f"attempt {n} broke in step_{n}" in tb and "in flaky" in tb
    row = Job.objects.get(pk=job.id)
    assert row.last_traceback == events[-1].data["traceback"]  # the row: the last one only
    assert "attempt 1 broke" not in row.last_traceback


def test_a_failure_without_a_traceback_stores_null():
    job = services.enqueue("noop", max_attempts=1)
    claimed = services.claim(worker_ids=["tb-1-0"], job_ids=[job.id])[0]
    services.fail(job.id, claimed.lease_token, worker_id="tb-1-0", error="gave up")
    (event,) = failures(job.id)
    assert event.kind == "failed" and event.data["traceback"] is None


def test_the_events_traceback_is_capped_and_cleaned_like_the_rows():
    job = services.enqueue("noop", max_attempts=2)
    long_tb = "Traceback (most recent call last):\n" + "  frame\x00\n" * 500 + "ValueError: end"
    with override_settings(JOB_MAX_TRACEBACK_CHARS=300):
        claimed = services.claim(worker_ids=["tb-1-0"], job_ids=[job.id])[0]
        services.fail(job.id, claimed.lease_token, worker_id="tb-1-0", error="x", traceback=long_tb)
    (event,) = failures(job.id)
    tb = event.data["traceback"]
    assert len(tb) <= 300 and tb.startswith("[cut: ") and tb.endswith("ValueError: end")
    assert "\x00" not in tb
    assert tb == Job.objects.get(pk=job.id).last_traceback


def test_the_job_detail_api_shows_each_attempts_traceback(custom_handler, operator_client):
    def boom(ctx, payload):
        raise KeyError("missing-" + str(ctx.attempt))

    custom_handler("boom_tb", boom)
    job = services.enqueue("boom_tb", max_attempts=2)
    drain("boom_tb", include_scheduled=True)
    events = operator_client.get(f"/api/v1/jobs/{job.id}/").json()["events"]
    tracebacks = [e["data"]["traceback"] for e in events if e["kind"] in FAILURE_KINDS]
    assert len(tracebacks) == 2
    assert "missing-1" in tracebacks[0] and "missing-2" in tracebacks[1]
