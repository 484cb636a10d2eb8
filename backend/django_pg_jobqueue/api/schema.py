"""OpenAPI helpers: `extend_schema` for the API's views, the common error responses (their
shape, ErrorSerializer, with examples), and the documented headers."""
import functools
import inspect

from drf_spectacular import utils as spectacular
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from ..states import MAX_IDEMPOTENCY_KEY_LENGTH, MAX_QUEUE_NAME_LENGTH, PRIORITY_MAX
from .fields import QUEUE_NAME as _QUEUE_NAME_RE


@functools.wraps(spectacular.extend_schema)
def extend_schema(*args, **kwargs):
    """drf-spectacular's `extend_schema`, built on drf-spectacular's AutoSchema (the API's
    views' `schema`) rather than on the host's DEFAULT_SCHEMA_CLASS.

    On a view method, drf-spectacular derives its schema class from REST_FRAMEWORK's
    DEFAULT_SCHEMA_CLASS: DRF's own AutoSchema when the host sets none, which the generator
    cannot use, and the host's own class when it sets one. A method not yet decorated is
    given AutoSchema as its base for the time of the decoration."""
    decorate = spectacular.extend_schema(*args, **kwargs)

    def decorator(f):
        if inspect.isclass(f) or hasattr(f, "schema") or "schema" in getattr(f, "kwargs", {}):
            return decorate(f)
        f.schema = AutoSchema
        try:
            return decorate(f)
        finally:
            del f.schema

    return decorator


class ErrorSerializer(serializers.Serializer):
    """Every error response has this shape."""

    code = serializers.CharField(help_text="Machine-readable: invalid, not_found, not_authenticated, "
                                           "permission_denied, invalid_transition, idempotency_conflict, "
                                           "payload_too_large, throttled, queue_full, database_unavailable ...")
    detail = serializers.CharField(help_text="A sentence for people.")
    errors = serializers.DictField(required=False, child=serializers.JSONField(),
                                   help_text="On 400 only: each bad field with its messages.")
    status = serializers.CharField(required=False, help_text="On invalid_transition: the job's status.")
    job_id = serializers.IntegerField(required=False, help_text="On idempotency_conflict: the first job.")


_ERRORS = {
    400: ("Invalid input: `errors` names each bad field.", "invalid", {
        "code": "invalid",
        "detail": "type: unknown job type 'nope'; registered types: noop, sleep.; "
                  f"priority: Ensure this value is less than or equal to {PRIORITY_MAX}.",
        "errors": {"type": ["unknown job type 'nope'; registered types: noop, sleep."],
                   "priority": [f"Ensure this value is less than or equal to {PRIORITY_MAX}."]},
    }),
    401: ("Not authenticated: send `Authorization: Token <key>` or log in.", "not_authenticated", {
        "code": "not_authenticated", "detail": "Authentication credentials were not provided.",
    }),
    403: ("Authenticated, but without the permission this needs (or a session write without "
          "its CSRF token).", "permission_denied", {
        "code": "permission_denied",
        "detail": "You do not have permission to perform this action.",
    }),
    404: ("No such job or queue (or page).", "not_found", {"code": "not_found", "detail": "job 42 not found"}),
    409: ("The job's status does not allow it, or the idempotency key was used for a different "
          "request.", "conflict", {
        "code": "invalid_transition", "detail": "cannot cancel job 42: it is succeeded",
        "status": "succeeded",
    }),
    413: ("The payload is over JOB_MAX_PAYLOAD_BYTES, or the body over the request size limit.",
          "payload_too_large", {
        "code": "payload_too_large",
        "detail": "payload is 70000 bytes; the limit is 65536 (JOB_MAX_PAYLOAD_BYTES)",
    }),
    429: ("Too many requests: wait `Retry-After` seconds.", "throttled", {
        "code": "throttled", "detail": "Request was throttled. Expected available in 12 seconds.",
    }),
    503: ("The queue is full (JOB_MAX_QUEUE_DEPTH) or the database is unavailable: wait "
          "`Retry-After` seconds.", "unavailable", {
        "code": "queue_full", "detail": "the queue holds 10000 queued jobs (JOB_MAX_QUEUE_DEPTH=10000)",
    }),
}


def errors(*statuses: int) -> dict:
    out = {}
    for code in statuses:
        description, name, example = _ERRORS[code]
        examples = [OpenApiExample(name, value=example, response_only=True, status_codes=[code])]
        if code == 409:
            examples.append(OpenApiExample(
                "idempotency_conflict", response_only=True, status_codes=[409],
                value={"code": "idempotency_conflict", "job_id": 42,
                       "detail": "idempotency key 'order-7' was already used for a different "
                                 "request (job 42)"}))
        if code == 503:
            examples.append(OpenApiExample(
                "database_unavailable", response_only=True, status_codes=[503],
                value={"code": "database_unavailable",
                       "detail": "the database is unavailable; try again shortly"}))
        out[code] = OpenApiResponse(ErrorSerializer, description=description, examples=examples)
    return out


RETRY_AFTER = OpenApiParameter(
    "Retry-After", OpenApiTypes.INT, OpenApiParameter.HEADER, response=[429, 503], required=True,
    description="Seconds to wait before trying again.",
)
REPLAY = OpenApiParameter(
    "X-Idempotency-Replay", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200],
    required=True, enum=["true"],
    description="Present on a 200 from job creation: the idempotency key was seen before with "
                "the same request, and this is the job that request created.",
)
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH},
    OpenApiParameter.HEADER, required=False,
    description="Makes the request safe to repeat: the same key with the same request returns "
                "the first job (200, X-Idempotency-Replay: true); with a different request, "
                "409. May also be given as idempotency_key in the body (not both, unless equal).",
)
JOB_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The job id.")
QUEUE_NAME = OpenApiParameter(
    "name", {"type": "string", "pattern": _QUEUE_NAME_RE.pattern, "minLength": 1,
             "maxLength": MAX_QUEUE_NAME_LENGTH},
    OpenApiParameter.PATH,
    description="The queue name (letters, digits, _ . : -); another name is a 400.",
)
