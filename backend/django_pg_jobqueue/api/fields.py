"""The API's field types and serializer bases, shared by every resource's serializers.

DRF's fields read some of their behaviour from the global settings (DATETIME_FORMAT,
DATETIME_INPUT_FORMATS, COERCE_BIGINT_TO_STRING, LIST_SERIALIZER_ERRORS_AS_DICT): the API's
serializers use these instead, which fix DRF's defaults, so that a host's settings do not
change the API's JSON. The fields take values as sent, never coerced; what a value may be is
the services' to say (services/enqueuing.py holds the rules and their bounds): these only
shape.

Request serializers derive from StrictSerializer, which refuses fields it does not know,
naming them; the fields the queue itself maintains (status, attempts, lease, result ...) are
refused as read-only, so that no request can mass-assign them.
"""
import datetime as dt
import re

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import ISO_8601, serializers

from ..states import MAX_QUEUE_NAME_LENGTH, QUEUE_NAME_PATTERN, QUEUE_NAME_RE, EventKind, Status

STATUS_CHOICES = [s.value for s in Status]
EVENT_KIND_CHOICES = [k.value for k in EventKind]
QUEUE_NAME = re.compile(f"^{QUEUE_NAME_PATTERN}$")

# Fields of a job that only the queue writes: a request naming one is refused.
QUEUE_MAINTAINED_FIELDS = frozenset({
    "id", "status", "attempts", "available_at", "created_at", "updated_at", "started_at",
    "finished_at", "locked_by", "lease_expires_at", "lease_token", "progress",
    "progress_percent", "progress_message", "result", "last_error", "last_traceback",
    "request_fingerprint", "cancel_requested_at", "events",
})


class ISODateTimeField(serializers.DateTimeField):
    """ISO 8601 out and in (DRF's default), whatever DATETIME_FORMAT the host sets."""

    format = ISO_8601
    input_formats = [ISO_8601]


# The fields of a job to create take their values as they are, never coerced: what the API
# accepts is what enqueue() accepts (services/enqueuing.py holds the rules and their bounds).
class StrictCharField(serializers.CharField):
    """A JSON string, as sent: not a number made a string, not trimmed ("a\\n" stays "a\\n",
    for the service to refuse as Python's enqueue() does)."""

    default_error_messages = {"invalid": "must be a string."}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: not "5", not 5.0, not true."""

    default_error_messages = {"invalid": "must be an integer (a JSON number with no fraction)."}

    def to_internal_value(self, data):
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number: not "5", not true."""

    default_error_messages = {"invalid": "must be a number."}

    def to_internal_value(self, data):
        if not isinstance(data, (int, float)) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


# An ISO 8601 date and time with its offset: 2026-01-01T09:30:00Z, 2026-01-01T10:30+01:00.
AWARE_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)")


class AwareDateTimeField(ISODateTimeField):
    """An ISO 8601 date-time with a time zone offset, as a string; a date alone or a time
    with no offset is refused (never read in the server's time zone, as DRF would)."""

    default_error_messages = {
        "invalid": "must be an ISO 8601 date and time with a time zone offset, "
                   "e.g. 2026-01-01T09:30:00Z."}

    def to_internal_value(self, value):
        if not isinstance(value, str) or not AWARE_DATETIME.fullmatch(value):
            self.fail("invalid")
        try:
            return super().to_internal_value(value)
        except (OverflowError, ValueError):
            self.fail("invalid")


class BigIntegerField(serializers.BigIntegerField):
    """A number, never a string, whatever COERCE_BIGINT_TO_STRING the host sets."""

    coerce_to_string = False


class DictErrorsListSerializer(serializers.ListSerializer):
    """Errors of a list of items name only the bad items, `{"3": {"type": [...]}}`, whatever
    LIST_SERIALIZER_ERRORS_AS_DICT the host sets. Not-a-list, empty and length errors are
    DRF's own."""

    def to_internal_value(self, data):
        if not isinstance(data, list) or (not self.allow_empty and not data) \
                or (self.max_length is not None and len(data) > self.max_length) \
                or (self.min_length is not None and len(data) < self.min_length):
            return super().to_internal_value(data)  # raises DRF's error
        ret, errors = [], {}
        for index, item in enumerate(data):
            try:
                ret.append(self.run_child_validation(item))
            except serializers.ValidationError as exc:
                errors[index] = exc.detail
        if errors:
            raise serializers.ValidationError(errors)
        return ret


# DRF's ModelSerializer, with the model fields above mapped to the fields above. (A comment:
# drf-spectacular would publish a docstring as the description of every component.)
class JobQueueModelSerializer(serializers.ModelSerializer):

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: ISODateTimeField,
        models.BigAutoField: BigIntegerField,
        models.BigIntegerField: BigIntegerField,
    }


@extend_schema_field({"type": "object", "additionalProperties": True,
                      "example": {"to": "ada@example.com"}})
class JSONObjectField(serializers.JSONField):
    """A JSON object (a dict); anything else is refused."""

    default_error_messages = {"not_object": "must be a JSON object, not {kind}."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            self.fail("not_object", kind=type(value).__name__.replace("NoneType", "null"))
        return value


@extend_schema_field({"nullable": True, "description": "Any JSON value the handler returned."})
class AnyJSONField(serializers.JSONField):
    pass


class StrictSerializer(serializers.Serializer):
    """Refuses unknown and read-only fields in the request body, naming each."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            errors = {}
            for name in data:
                if name in self.fields and not self.fields[name].read_only:
                    continue
                if name in QUEUE_MAINTAINED_FIELDS:
                    errors[name] = ["read-only: the queue sets this field, a request cannot."]
                else:
                    errors[name] = ["unknown field."]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


def queue_name_field(**kwargs) -> serializers.RegexField:
    """A queue name as jobs carry it: 1 to MAX_QUEUE_NAME_LENGTH (100) of letters, digits and
    _ . : - (states.QUEUE_NAME_PATTERN)."""
    return serializers.RegexField(
        QUEUE_NAME.pattern, max_length=MAX_QUEUE_NAME_LENGTH, trim_whitespace=False,
        # `$` matches before a final newline: the whole string must match, as in enqueue().
        validators=[_whole_queue_name],
        error_messages={"invalid": "use letters, digits and _ . : - only."}, **kwargs)


def _whole_queue_name(value) -> None:
    if not QUEUE_NAME_RE.fullmatch(value):
        raise serializers.ValidationError("use letters, digits and _ . : - only.", code="invalid")


def in_utc(value):
    """An aware datetime in UTC (PostgreSQL refuses offsets beyond +-15:59), or a 400."""
    if value is None:
        return None
    try:
        return value.astimezone(dt.timezone.utc)
    except (OverflowError, ValueError):
        raise serializers.ValidationError("out of range.") from None
