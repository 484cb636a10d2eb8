"""The one exception handler: domain errors and DRF errors become one JSON error shape.

    {"code": "invalid", "detail": "a sentence for people", "errors": {"field": ["..."]}}

`errors` is present on validation failures only. Domain errors map to statuses here, so that
views stay three lines: JobNotFound, QueueNotFound, HostNotFound, ScheduleNotFound and BatchNotFound -> 404,
InvalidTransition, IdempotencyConflict and ScheduleInvalid -> 409,
UnknownJobType -> 400 (on the `type` field), NotCreatable -> 400 (on `type` or
`payload`), a database that does not answer -> 503.
"""
import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import DataError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings as host_api_settings
from rest_framework.views import set_rollback

from ..exceptions import (
    BatchNotFound,
    HostNotFound,
    IdempotencyConflict,
    InvalidJobArgument,
    InvalidTransition,
    JobNotFound,
    JobPayloadTooLarge,
    NotCreatable,
    QueueNotFound,
    ScheduleInvalid,
    ScheduleNotFound,
    UnknownJobType,
)

log = logging.getLogger("django_pg_jobqueue.api")

DB_RETRY_AFTER_SECONDS = 5


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request too large"
    default_code = "payload_too_large"


class QueueFull(exceptions.APIException):
    """Backpressure: the queued depth is at JOB_MAX_QUEUE_DEPTH."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the queue is full; try again later"
    default_code = "queue_full"

    def __init__(self, detail=None, *, retry_after: int = 5):
        super().__init__(detail)
        self.retry_after = retry_after


class DatabaseUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the database is unavailable; try again shortly"
    default_code = "database_unavailable"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflict"
    default_code = "conflict"


def _flatten(errors, prefix="") -> list[str]:
    """{"payload": ["must be an object"]} -> ["payload: must be an object"] (nested, too)."""
    if isinstance(errors, dict):
        out = []
        for key, value in errors.items():
            if isinstance(key, int):
                out += _flatten(value, f"{prefix}[{key}]")
                continue
            name = key if key != "non_field_errors" else ""
            out += _flatten(value, f"{prefix}.{name}" if prefix and name else prefix or name)
        return out
    if isinstance(errors, list):
        if all(isinstance(e, str) for e in errors):
            return [f"{prefix}: {e}" if prefix else str(e) for e in errors]
        out = []
        for index, value in enumerate(errors):
            if value:
                out += _flatten(value, f"{prefix}[{index}]")
        return out
    return [f"{prefix}: {errors}" if prefix else str(errors)]


def _first_code(codes) -> str:
    if isinstance(codes, str):
        return codes
    if isinstance(codes, dict):
        for value in codes.values():
            return _first_code(value)
    if isinstance(codes, list):
        for value in codes:
            if value:
                return _first_code(value)
    return "invalid"


def _field_error(exc: InvalidJobArgument, messages: list[str], code: str):
    # enqueue()'s arguments are the API's fields, by the same names: the argument is the field.
    errors = {exc.argument: messages}
    if exc.index is not None:  # a bulk request: errors.jobs[i] names the bad fields of item i
        errors = {"jobs": {exc.index: errors}}  # "jobs[i].field" in the detail, as DRF's
    return exceptions.ValidationError(errors, code=code)


def _translate(exc):
    """Domain and Django errors -> DRF APIExceptions (or None: not ours, a real 500)."""
    if isinstance(exc, JobNotFound):
        return exceptions.NotFound(f"job {exc.args[0]} not found" if exc.args else "job not found")
    if isinstance(exc, QueueNotFound):
        return exceptions.NotFound(str(exc), code="queue_not_found")
    if isinstance(exc, HostNotFound):
        return exceptions.NotFound(str(exc), code="host_not_found")
    if isinstance(exc, ScheduleNotFound):
        return exceptions.NotFound(str(exc), code="schedule_not_found")
    if isinstance(exc, BatchNotFound):
        return exceptions.NotFound(str(exc), code="batch_not_found")
    if isinstance(exc, ScheduleInvalid):
        return Conflict(str(exc), code="schedule_invalid")
    if isinstance(exc, InvalidTransition):
        err = Conflict(str(exc), code="invalid_transition")
        err.extra = {"status": exc.status}
        return err
    if isinstance(exc, IdempotencyConflict):
        err = Conflict(str(exc), code="idempotency_conflict")
        err.extra = {"job_id": exc.job_id}
        return err
    if isinstance(exc, UnknownJobType):
        return _field_error(exc, [exc.detail], "unknown_type")
    if isinstance(exc, NotCreatable):
        return _field_error(exc, [exc.detail], "not_creatable")
    if isinstance(exc, JobPayloadTooLarge):
        return PayloadTooLarge(str(exc))
    if isinstance(exc, InvalidJobArgument):
        # The service layer's one validation of a job's arguments, named as the API's fields.
        return _field_error(exc, [exc.detail], "invalid")
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, PermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge(str(exc))
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError(str(exc))
    if isinstance(exc, (OperationalError, InterfaceError)):
        log.warning("database unavailable: %s", exc)
        return DatabaseUnavailable()
    if isinstance(exc, DataError):
        # Input that slipped past validation and the database refused: the client's fault.
        log.warning("database refused a value: %s", exc)
        return exceptions.ValidationError({"non_field_errors": ["the database refused a value"]},
                                          code="invalid")
    return None


NON_FIELD_ERRORS = "non_field_errors"


def _own_non_field_key(errors):
    """DRF's serializers file errors that belong to no field under the host's
    NON_FIELD_ERRORS_KEY; the API's shape keeps them under `non_field_errors`."""
    key = host_api_settings.NON_FIELD_ERRORS_KEY
    if key == NON_FIELD_ERRORS:
        return errors
    return _rename_key(errors, key)


def _rename_key(errors, key):
    if isinstance(errors, dict):
        return {NON_FIELD_ERRORS if k == key else k: _rename_key(v, key) for k, v in errors.items()}
    if isinstance(errors, list):
        return [_rename_key(v, key) for v in errors]
    return errors


def exception_handler(exc, context):
    if not isinstance(exc, exceptions.APIException):
        exc = _translate(exc)
        if exc is None:
            return None
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    wait = getattr(exc, "wait", None)
    if wait is not None:
        headers["Retry-After"] = str(max(1, int(wait + 0.999)))
    if isinstance(exc, QueueFull):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, DatabaseUnavailable):
        headers["Retry-After"] = str(DB_RETRY_AFTER_SECONDS)

    if isinstance(exc, exceptions.ValidationError):
        detail = (_own_non_field_key(exc.detail) if isinstance(exc.detail, dict)
                  else {NON_FIELD_ERRORS: exc.detail})
        body = {"code": "invalid", "detail": "; ".join(_flatten(detail)) or "invalid input",
                "errors": detail}
    else:
        codes = exc.get_codes()
        body = {"code": codes if isinstance(codes, str) else _first_code(codes),
                "detail": str(exc.detail) if not isinstance(exc.detail, (list, dict))
                else "; ".join(_flatten(exc.detail))}
    body.update(getattr(exc, "extra", {}))
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)
