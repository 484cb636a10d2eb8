"""OpenTelemetry: a span around each enqueue and each execution, with the trace carried from
the producer to the job. Optional and off by default.

Needs `opentelemetry-api` (`pip install django-pg-jobqueue[otel]`, plus an SDK and exporter
of your choice, configured the usual way) and JOB_OTEL_ENABLED=true. Without either, every
function here is a plain pass-through: no import cost, no extra query.

Where the trace context travels. Not in the payload: that is the user's data, it is
fingerprinted for idempotency and handed to the handler as is. The enqueue writes the W3C
`traceparent` (and `tracestate`, if any) into the data of the job's `created` event, which
already exists for every job, is written in the same statement as the job, and is never
changed. The executor reads it back (one indexed query per execution, only when tracing is
on) and makes the execution span a child of the enqueue span, for every attempt.

Engine hooks (in services/enqueuing.py and worker/executor.py):
    enqueuing.py   @tracing.traced_enqueue on `_insert`; `tracing.carrier_json()` as the
                   insert's trace parameter (the last positional one of sql.ENQUEUE_ONE,
                   `%(trace)s` in sql.ENQUEUE_MANY), merged into the created event's data with
                   `jsonb_build_object(...) || <trace>::jsonb`
    executor.py    `result = tracing.run_handler(spec.run, ctx, job)` in place of
                   `result = spec.run(ctx, job.payload)`
"""
import functools
import json

from . import conf, sql
from .db import queue_connection
from .exceptions import JobCancelled, Snooze

try:  # optional dependency
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - exercised when the extra is not installed
    trace = None

TRACER_NAME = "django_pg_jobqueue"
CARRIER_KEYS = ("traceparent", "tracestate")
SYSTEM = "django-pg-jobqueue"

def enabled() -> bool:
    return trace is not None and conf.get().OTEL_ENABLED


def traced_enqueue(insert):
    """Decorate `_insert(new_jobs)`: one PRODUCER span around the statement that creates the
    jobs; `carrier_json()` called inside it then carries this span's context."""

    @functools.wraps(insert)
    def wrapper(new_jobs, *args, **kwargs):
        if not enabled():
            return insert(new_jobs, *args, **kwargs)
        types = sorted({j.type for j in new_jobs})
        name = f"enqueue {types[0]}" if len(types) == 1 else "enqueue"
        attributes = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "send",
            "messaging.batch.message_count": len(new_jobs),
            "jobs.types": types,
            "jobs.queues": sorted({j.queue for j in new_jobs}),
        }
        tracer = trace.get_tracer(TRACER_NAME)
        with tracer.start_as_current_span(name, kind=SpanKind.PRODUCER,
                                          attributes=attributes) as span:
            result = insert(new_jobs, *args, **kwargs)
            try:
                span.set_attribute("jobs.ids", [int(job.id) for job, _ in result])
            except (TypeError, ValueError, AttributeError):
                pass
            return result

    return wrapper


def carrier() -> dict:
    """The current trace context as W3C headers ({} when tracing is off or no span is active)."""
    if not enabled():
        return {}
    headers: dict = {}
    propagate.inject(headers)
    return {k: v for k, v in headers.items() if k in CARRIER_KEYS}


def carrier_json() -> str:
    """`carrier()` as a JSON object, to merge into the created event's data."""
    return json.dumps(carrier())


def stored_carrier(job_id: int) -> dict:
    """The trace context the job's producer left in its `created` event."""
    with queue_connection().cursor() as cur:
        cur.execute(sql.CREATED_EVENT_TRACE, [job_id])
        row = cur.fetchone()
    data = row[0] if row else {}
    if isinstance(data, str):
        data = json.loads(data)
    return {k: data[k] for k in CARRIER_KEYS if isinstance(data, dict) and k in data}


def run_handler(func, ctx, job):
    """Run `func(ctx, job.payload)` inside the span of `middleware`."""
    return middleware(lambda: func(ctx, job.payload), ctx, job)


def middleware(call_next, ctx, job):
    """The first of the handler middleware (middleware.py): run `call_next()` inside a
    CONSUMER span whose parent is the enqueue's span. Snooze and cancellation are control
    flow, not errors; any other exception marks the span as failed. Exceptions always
    propagate unchanged."""
    if not enabled():
        return call_next()
    parent = propagate.extract(stored_carrier(job.id))
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue,
        "messaging.message.id": str(job.id),
        "jobs.type": job.type,
        "jobs.attempt": job.attempt,
        "jobs.worker_id": job.worker_id,
    }
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(f"run {job.type}", context=parent, kind=SpanKind.CONSUMER,
                                      attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as span:
        try:
            return call_next()
        except (Snooze, JobCancelled) as exc:
            span.set_attribute("jobs.outcome", type(exc).__name__)
            raise
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
