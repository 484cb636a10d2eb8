"""OpenTelemetry (optional): spans around enqueue and execution, the trace carried to the job.

Runs when opentelemetry-sdk is installed (the dev extra has it); skipped otherwise."""
import json
from types import SimpleNamespace

import pytest
from django.test import override_settings

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from django_pg_jobqueue import services, tracing  # noqa: E402
from django_pg_jobqueue.models import JobEvent  # noqa: E402

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans():
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _EXPORTER.clear()
    with override_settings(JOB_OTEL_ENABLED=True):
        yield _EXPORTER
    _EXPORTER.clear()


def claimed(job, attempt=1):
    return SimpleNamespace(id=job.id, type=job.type, queue=job.queue, attempt=attempt,
                           worker_id="host-1-1", payload=job.payload)


@pytest.mark.django_db
def test_the_trace_travels_from_the_enqueue_span_to_the_execution_span(spans):
    # What the enqueuing hook does: the insert runs inside the producer span and stores the
    # carrier in the created event's data.
    @tracing.traced_enqueue
    def insert(new_jobs):
        job = services.enqueue("noop", {"x": 1})
        JobEvent.objects.filter(job=job, kind="created").update(
            data={"queue": job.queue, "priority": 0, **json.loads(tracing.carrier_json())})
        return [(job, True)]

    [(job, _)] = insert([SimpleNamespace(type="noop", queue="default")])
    stored = tracing.stored_carrier(job.id)
    assert set(stored) == {"traceparent"}

    result = tracing.run_handler(lambda ctx, payload: {"got": payload}, None, claimed(job))
    assert result == {"got": {"x": 1}}

    by_name = {s.name: s for s in spans.get_finished_spans()}
    enqueue, run = by_name["enqueue noop"], by_name["run noop"]
    assert enqueue.kind == SpanKind.PRODUCER and run.kind == SpanKind.CONSUMER
    assert run.context.trace_id == enqueue.context.trace_id
    assert run.parent.span_id == enqueue.context.span_id
    assert stored["traceparent"].split("-")[2] == format(enqueue.context.span_id, "016x")
    assert run.attributes["messaging.message.id"] == str(job.id)
    assert run.attributes["jobs.attempt"] == 1 and enqueue.attributes["jobs.ids"] == (job.id,)


@pytest.mark.django_db
def test_a_failing_handler_marks_its_span_and_the_exception_propagates(spans):
    job = services.enqueue("noop", {})
    # A job enqueued where tracing was off carries no producer context.
    JobEvent.objects.filter(job_id=job.pk, kind="created").update(data={})
    spans.clear()

    def boom(ctx, payload):
        raise RuntimeError("kaput")

    with pytest.raises(RuntimeError, match="kaput"):
        tracing.run_handler(boom, None, claimed(job, attempt=2))
    [span] = spans.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.events[0].name == "exception" and span.attributes["jobs.attempt"] == 2
    assert span.parent is None  # no producer context stored: a root span


@pytest.mark.django_db
def test_off_by_default_nothing_is_traced_or_stored():
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    _EXPORTER.clear()
    job = services.enqueue("noop", {"y": 2})
    assert tracing.enabled() is False and tracing.carrier_json() == "{}"
    assert tracing.run_handler(lambda ctx, payload: payload, None, claimed(job)) == {"y": 2}
    assert _EXPORTER.get_finished_spans() == ()
