"""Serializers: request validation and the JSON shapes of jobs, events, metrics and users.

Request serializers refuse fields they do not know, naming them; the fields the queue
itself maintains (status, attempts, lease, result ...) are refused as read-only, so that no
request can mass-assign them.
"""
import datetime as dt
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import ISO_8601, serializers
from rest_framework.utils.serializer_helpers import BindingDict

from .. import retries
from ..models import Job, JobEvent
from ..registry import registry
from ..services import job_actions
from ..states import (
    AFTER_FAILURE_CHOICES,
    MAX_ATTEMPTS_LIMIT,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_CONCURRENCY_KEY_LIMIT,
    MAX_DELAY_SECONDS,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_QUEUE_NAME_LENGTH,
    MAX_TIMEOUT_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_PATTERN,
    QUEUE_NAME_RE,
    EventKind,
    Status,
)
from .idempotency import unscoped
from .per_class import once_per_class

MAX_BULK_JOBS = 1000
STATUS_CHOICES = [s.value for s in Status]
EVENT_KIND_CHOICES = [k.value for k in EventKind]
QUEUE_NAME = re.compile(f"^{QUEUE_NAME_PATTERN}$")
MAX_RETRY_IDS = 1000
MAX_CONCURRENCY_LIMIT = 2**31 - 1  # the column is a PostgreSQL integer

# Fields of a job that only the queue writes: a request naming one is refused.
QUEUE_MAINTAINED_FIELDS = frozenset({
    "id", "status", "attempts", "available_at", "created_at", "updated_at", "started_at",
    "finished_at", "locked_by", "lease_expires_at", "lease_token", "progress",
    "progress_percent", "progress_message", "result", "last_error", "last_traceback",
    "request_fingerprint", "cancel_requested_at", "events",
})


# --- Fields and bases that do not follow the host's REST_FRAMEWORK -----------------------
# DRF's fields read some of their behaviour from the global settings (DATETIME_FORMAT,
# DATETIME_INPUT_FORMATS, COERCE_BIGINT_TO_STRING, LIST_SERIALIZER_ERRORS_AS_DICT): the API's
# serializers use these instead, which fix DRF's defaults, so that a host's settings do not
# change the API's JSON.

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


@extend_schema_field({
    "type": "object", "nullable": True, "additionalProperties": False,
    "properties": {
        "delays_seconds": {"type": "array", "items": {"type": "number", "minimum": 0},
                           "minItems": 1, "maxItems": 100},
        "base_seconds": {"type": "number", "minimum": 0},
        "factor": {"type": "number", "minimum": 1, "maximum": 10},
        "max_seconds": {"type": "number", "minimum": 0},
        "jitter": {"type": "number", "minimum": 0, "maximum": 1},
        "retry_on": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
        "give_up_on": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
    },
    "example": {"delays_seconds": [1, 5, 30], "give_up_on": ["ValueError"]}})
class RetryPolicyField(JSONObjectField):
    """A retry policy's JSON shape; its rules are the service's (services/enqueuing.py)."""

    def to_internal_value(self, data):
        if data is None:
            return None
        return super().to_internal_value(data)


@extend_schema_field({"nullable": True, "description": "Any JSON value the handler returned."})
class AnyJSONField(serializers.JSONField):
    pass


# How a row's field is rendered by SharedFieldsMixin's plan (DRF's own result, faster).
_AS_STR, _AS_INT, _AS_IS, _AS_DATETIME, _BY_FIELD = range(5)


def _plan_kind(field) -> int:
    kind = type(field)
    if kind is serializers.CharField:
        return _AS_STR  # CharField.to_representation: str(value)
    if kind is serializers.IntegerField:
        return _AS_INT  # int(value)
    if (isinstance(field, serializers.JSONField) and not field.binary
            and kind.to_representation is serializers.JSONField.to_representation):
        return _AS_IS  # the value itself
    if kind is ISODateTimeField and field.format == ISO_8601 and not hasattr(field, "timezone"):
        return _AS_DATETIME  # ISO 8601 in the current time zone
    return _BY_FIELD


# Builds the fields once per class and shares them between instances; a ModelSerializer
# also renders rows of its model through a plan built once from those fields.
#
# DRF builds a serializer's fields anew for every instance (deep copies of the declared
# fields, and a ModelSerializer's from the model): for JobSerializer's 25 fields that was
# the largest share of a POST's Python time. The fields of one prototype instance serve
# every instance instead. Fields hold no per-request state (values pass through
# `to_representation` and `run_validation`; `validate_<field>` is looked up on the
# serializer in use), but `field.parent`, `root` and `context` are the prototype's, so
# `get_<field>` methods run on the prototype (of the same class): neither they nor any
# field of such a serializer may read the instance's state, the request or the context.
# The first use builds them (two threads may both build; the results are alike).
# test_api_shared_fields checks the output against DRF's per-instance fields.
#
# Rendering: DRF's `to_representation` asks each field for its attribute and its value
# (~1.5 us a field, and each datetime looks up the current time zone): a third of a
# list page's Python time. For an instance of `Meta.model` the plan reads each model
# field's attribute directly, renders text, integers, JSON and ISO 8601 datetimes inline
# (the time zone looked up once a row) exactly as those DRF fields do, and leaves every
# other field (choices, UUIDs, nested serializers, methods) to the field itself.
# Anything else, and datetimes other than aware ones, go DRF's way.
# test_api_shared_fields compares the output with DRF's own to_representation.
#
# A comment, not a docstring: drf-spectacular describes a serializer by the first docstring
# of its classes, and would publish this one in the OpenAPI schema.
class SharedFieldsMixin:

    @property
    def fields(self):
        return once_per_class(self, "_shared_fields", self._build_fields)

    def _build_fields(self):
        prototype = type(self)()
        fields = BindingDict(prototype)
        for name, field in prototype.get_fields().items():
            fields[name] = field
        return fields

    def _representation_plan(self):
        return once_per_class(self, "_shared_plan", self._build_plan)

    def _build_plan(self):
        attnames = {f.attname for f in self.Meta.model._meta.concrete_fields}
        plan = []
        for field in self._readable_fields:
            attrs = field.source_attrs
            attr = attrs[0] if len(attrs) == 1 and attrs[0] in attnames else None
            if attr is None and attrs:  # a dotted source or a property: DRF's way
                plan.append((field.field_name, None, _BY_FIELD, field, False))
            else:
                kind = _plan_kind(field) if attr else _BY_FIELD
                plan.append((field.field_name, attr, kind, field, True))
        return plan

    def to_representation(self, instance):
        model = getattr(getattr(self, "Meta", None), "model", None)
        if model is None or type(instance) is not model:
            return super().to_representation(instance)
        iso = settings.USE_TZ
        tz = timezone.get_current_timezone() if iso else None
        ret = {}
        for name, attr, kind, field, direct in self._representation_plan():
            if not direct:
                try:
                    value = field.get_attribute(instance)
                except serializers.SkipField:
                    continue
            else:
                value = instance if attr is None else getattr(instance, attr)
            if value is None:
                ret[name] = None
            elif kind is _AS_STR:
                ret[name] = str(value)
            elif kind is _AS_INT:
                ret[name] = int(value)
            elif kind is _AS_IS:
                ret[name] = value
            elif kind is _AS_DATETIME and iso and isinstance(value, dt.datetime) \
                    and value.utcoffset() is not None:
                try:
                    text = value.astimezone(tz).isoformat()
                except OverflowError:
                    ret[name] = field.to_representation(value)  # DRF's error
                    continue
                ret[name] = text[:-6] + "Z" if text.endswith("+00:00") else text
            else:
                ret[name] = field.to_representation(value)
        return ret


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


@extend_schema_field({"oneOf": [
    {"type": "integer", "format": "int64", "minimum": 1, "description": "A job id."},
    {"type": "object", "properties": {"item": {"type": "integer", "minimum": 0}},
     "required": ["item"], "additionalProperties": False,
     "description": "In /jobs/bulk/: the i-th earlier job of the same request."},
]})
class AfterEntryField(serializers.JSONField):
    """One entry of `after`: a job id, or {"item": i} (services/dependencies.py checks it)."""


class UniqueOptionsSerializer(StrictSerializer):
    """`unique` of a new job: enqueue()'s `unique` dict (services/enqueuing.py checks it)."""

    key = StrictCharField(required=False, allow_null=True, trim_whitespace=False,
                          help_text="The unique key within the job type. Not with fields.")
    fields = serializers.ListField(
        child=StrictCharField(trim_whitespace=False), required=False, allow_null=True,
        help_text="Payload keys whose values make the key. Neither key nor fields: the whole "
                  "payload.")
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=STATUS_CHOICES), required=False, allow_null=True,
        help_text="The statuses in which a job counts as the holder of its key: at least "
                  "queued and running. Default: those two, or every status with a period.")
    period_seconds = StrictFloatField(
        required=False, allow_null=True,
        help_text="A job counts only this long after its enqueue.")


class JobCreateSerializer(SharedFieldsMixin, StrictSerializer):
    type = StrictCharField(max_length=100, help_text="A registered job type (see /api/v1/job-types/).")
    payload = JSONObjectField(required=False, allow_null=True, default=dict,
                              help_text="The handler's input: a JSON object, at most JOB_MAX_PAYLOAD_BYTES "
                                        "in UTF-8 bytes of its compact JSON (measured by the service, as for enqueue()).")
    priority = StrictIntegerField(required=False, allow_null=True, min_value=PRIORITY_MIN, max_value=PRIORITY_MAX,
                                        help_text=f"{PRIORITY_MIN}..{PRIORITY_MAX}, higher runs first, "
                                                  "at most JOB_API_MAX_PRIORITY (0 by default). "
                                                  "Default: the type's.")
    max_attempts = StrictIntegerField(required=False, allow_null=True, min_value=1,
                                      max_value=MAX_ATTEMPTS_LIMIT,
                                            help_text="Default: the type's, else JOB_DEFAULT_MAX_ATTEMPTS.")
    queue = queue_name_field(
        required=False, allow_null=True, help_text="Queue name (letters, digits, _ . : -): a queue that exists, or one of "
                  "JOB_API_QUEUES when it is set. Default: the type's.")
    idempotency_key = StrictCharField(
        required=False, allow_null=True, max_length=MAX_IDEMPOTENCY_KEY_LENGTH,
        help_text="Or the Idempotency-Key header. The same key and request again returns the first job.",
    )
    run_at = AwareDateTimeField(
        required=False, allow_null=True,
        help_text="Not runnable before this time: an ISO 8601 date and time with its offset, "
                  "from 2000-01-01T00:00:00Z, at most JOB_API_MAX_DELAY_SECONDS (30 days by "
                  "default) from now. Not with delay_seconds.")
    delay_seconds = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=MAX_DELAY_SECONDS,
                                           help_text="Not runnable for this many seconds, at most "
                                                     "JOB_API_MAX_DELAY_SECONDS (30 days by default). "
                                                     "Not with run_at.")
    timeout_seconds = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_TIMEOUT_SECONDS,
                                               help_text="Per-attempt time limit, at most "
                                                         "JOB_API_MAX_TIMEOUT_SECONDS (1 day by default). "
                                                         "Default: the type's.")
    retry_policy = RetryPolicyField(
        required=False, allow_null=True,
        help_text="This job's own retry policy, replacing its type's: {\"delays_seconds\": [1, 5, 30]} "
                  "or {\"base_seconds\", \"factor\", \"max_seconds\"} (exponential), each with "
                  "\"jitter\" (0..1), \"retry_on\" and \"give_up_on\" (exception names). Data only: "
                  "a function policy is set on the handler or task. Validated as enqueue()'s.")
    after = serializers.ListField(
        child=AfterEntryField(), required=False, allow_null=True,
        help_text="Job ids this job waits for (status waiting) until every one succeeded. In "
                  "/jobs/bulk/, {\"item\": i} names the i-th earlier job of the request.")
    after_failure = serializers.ChoiceField(
        choices=list(AFTER_FAILURE_CHOICES), required=False, allow_null=True,
        help_text="When a job it waits for fails for good or is cancelled: cancel this one "
                  "too (the default), or run it anyway.")
    unique = UniqueOptionsSerializer(
        required=False, allow_null=True,
        help_text="At most one job of this type and key at a time: a duplicate answers 200 with "
                  "the job that holds the key and `created: false`.")
    concurrency_key = StrictCharField(
        required=False, allow_null=True, max_length=MAX_CONCURRENCY_KEY_LENGTH,
        help_text="E.g. customer:42: at most concurrency_key_limit jobs with this key run at "
                  "once, across every worker; the others wait.")
    concurrency_key_limit = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_CONCURRENCY_KEY_LIMIT,
        help_text="How many jobs with concurrency_key may run at once. Default: 1. Needs "
                  "concurrency_key.")

    class Meta:
        list_serializer_class = DictErrorsListSerializer  # JobBulkCreateSerializer.jobs

    def validate_run_at(self, value):
        return _utc(value)

    def validate_idempotency_key(self, value):
        if value is not None and not value.strip():
            raise serializers.ValidationError("may not be blank.")
        return value

    def validate(self, attrs):
        if attrs.get("run_at") is not None and attrs.get("delay_seconds"):
            raise serializers.ValidationError({"delay_seconds": ["give run_at or delay_seconds, not both."]})
        return attrs

    def enqueue_options(self) -> dict:
        """The validated body as keyword arguments of `services.enqueue_or_get`."""
        data = self.validated_data
        # The fields are enqueue()'s arguments, by the same names.
        options = {name: data.get(name) for name in (
            "priority", "queue", "run_at", "delay_seconds", "idempotency_key", "max_attempts",
            "timeout_seconds", "retry_policy", "after", "after_failure", "concurrency_key",
            "concurrency_key_limit")}
        options["unique"] = _unique_option(data.get("unique"))
        return {"job_type": data["type"], "payload": data.get("payload", {}), **options}


class JobBulkCreateSerializer(StrictSerializer):
    jobs = JobCreateSerializer(many=True, min_length=1, max_length=MAX_BULK_JOBS,
                               allow_empty=False, help_text=f"1 to {MAX_BULK_JOBS} jobs.")

    def validate_jobs(self, jobs):
        seen: dict[str, int] = {}
        for index, job in enumerate(jobs):
            key = job.get("idempotency_key")
            if key is None:
                continue
            if key in seen:
                raise serializers.ValidationError(
                    f"jobs[{index}] repeats the idempotency_key of jobs[{seen[key]}].")
            seen[key] = index
        return jobs

    def enqueue_items(self) -> list[dict]:
        """The validated jobs as the dicts `services.enqueue_many` takes."""
        items = []
        for data in self.validated_data["jobs"]:
            item = {"type": data["type"], "payload": data.get("payload", {})}
            for name in ("priority", "queue", "run_at", "delay_seconds", "idempotency_key",
                         "max_attempts", "timeout_seconds", "retry_policy", "concurrency_key",
                         "concurrency_key_limit"):
                if data.get(name) is not None:
                    item[name] = data[name]
            if data.get("unique") is not None:
                item["unique"] = _unique_option(data["unique"])
            for name in ("after", "after_failure"):
                if data.get(name) is not None:
                    item[name] = data[name]
            items.append(item)
        return items


def _unique_option(value) -> dict | None:
    """The validated `unique` object as enqueue()'s dict (the options given, as given)."""
    return None if value is None else dict(value)


def _utc(value):
    """An aware datetime in UTC (PostgreSQL refuses offsets beyond +-15:59), or a 400."""
    if value is None:
        return None
    try:
        return value.astimezone(dt.timezone.utc)
    except (OverflowError, ValueError):
        raise serializers.ValidationError("out of range.") from None


class JobRetryMatchingSerializer(StrictSerializer):
    """Which jobs POST /jobs/retry/ retries: `ids`, or filters over the failed jobs, or
    `all: true`. An empty body is refused, so that no request retries every failed job by
    accident."""

    FILTERS = ("type", "error_contains", "finished_after", "finished_before")

    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False,
        min_length=1, max_length=MAX_RETRY_IDS,
        help_text=f"Retry these jobs (failed or cancelled; 1 to {MAX_RETRY_IDS} ids). The "
                  "others are listed in `not_retried`. Not with `all` or filters.")
    all = serializers.BooleanField(
        required=False, help_text="true: retry every failed job. Not with filters or ids.")
    type = serializers.CharField(required=False, max_length=100,
                                 help_text="Failed jobs of this type (exactly).")
    error_contains = serializers.CharField(
        required=False, max_length=1000,
        help_text="Failed jobs whose last error contains this text (case-insensitive).")
    finished_after = ISODateTimeField(
        required=False, help_text="Failed jobs that failed at or after this time.")
    finished_before = ISODateTimeField(
        required=False, help_text="Failed jobs that failed before this time.")

    def validate_finished_after(self, value):
        return _utc(value)

    def validate_finished_before(self, value):
        return _utc(value)

    def validate(self, attrs):
        filters = [name for name in self.FILTERS if name in attrs]
        if "ids" in attrs:
            if filters or "all" in attrs:
                raise serializers.ValidationError(
                    {"ids": ["give ids alone, without all or filters."]})
        elif attrs.get("all"):
            if filters:
                raise serializers.ValidationError(
                    {"all": ["all retries every failed job: give it alone, or give filters "
                             "without it."]})
        elif not filters:
            raise serializers.ValidationError({"non_field_errors": [
                "say which jobs to retry: ids, at least one filter (type, error_contains, "
                "finished_after, finished_before), or {\"all\": true} for every failed job."]})
        after, before = attrs.get("finished_after"), attrs.get("finished_before")
        if after is not None and before is not None and after >= before:
            raise serializers.ValidationError(
                {"finished_before": ["must be later than finished_after."]})
        return attrs

    def filters(self) -> dict:
        """The validated filters as keyword arguments of `bulk_retry.retry_matching`."""
        return {name: self.validated_data[name] for name in self.FILTERS
                if name in self.validated_data}


class JobRetryMatchingResultSerializer(serializers.Serializer):
    retried = serializers.IntegerField(help_text="How many jobs went back to the queue.")
    not_retried = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="With `ids`: the ids that were not retried (unknown, or neither failed nor "
                  "cancelled). With filters: always [] (only failed jobs match).")


class ProgressSerializer(SharedFieldsMixin, serializers.Serializer):
    # A job's progress, nested with source="*": it renders the job itself. (No docstring:
    # the schema has no description for it.)
    percent = serializers.IntegerField(source="progress_percent", allow_null=True,
                                       min_value=0, max_value=100)
    message = serializers.CharField(source="progress_message", allow_blank=True)

    class Meta:
        model = Job  # what it renders: SharedFieldsMixin's plan applies


class JobSerializer(SharedFieldsMixin, JobQueueModelSerializer):
    """A job as lists, creation, cancel and retry return it."""

    status = serializers.ChoiceField(choices=STATUS_CHOICES)
    payload = JSONObjectField()
    result = AnyJSONField(allow_null=True)
    progress = ProgressSerializer(source="*")
    is_finished = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "type", "queue", "status", "priority", "payload", "result", "attempts",
            "max_attempts", "available_at", "created_at", "updated_at", "started_at",
            "finished_at", "locked_by", "lease_expires_at", "lease_token", "timeout_seconds",
            "progress", "progress_percent", "progress_message", "last_error",
            "idempotency_key", "cancel_requested_at", "is_finished",
            "idempotency_expires_at", "unique_key", "unique_states", "has_dependants",
            "concurrency_key", "concurrency_key_limit",
        ]
        read_only_fields = fields

    def get_is_finished(self, job) -> bool:
        return job.status in (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # Keys as their client sent them, without the API user's scope (keys.py).
        for name in ("idempotency_key", "concurrency_key"):
            if name in data:
                data[name] = unscoped(data[name])
        return data


class EventSerializer(SharedFieldsMixin, JobQueueModelSerializer):
    """One event; `job_type` and `job_status` (the job's status now) save the UI a lookup."""

    job_id = serializers.IntegerField()
    job_type = serializers.CharField(source="job.type")
    job_status = serializers.ChoiceField(source="job.status", choices=STATUS_CHOICES)
    kind = serializers.ChoiceField(choices=EVENT_KIND_CHOICES)
    data = JSONObjectField()

    class Meta:
        model = JobEvent
        fields = ["id", "job_id", "job_type", "job_status", "kind", "attempt", "worker_id",
                  "message", "data", "created_at"]
        read_only_fields = fields


class NextAttemptSerializer(serializers.Serializer):
    """When and why a queued job that already ran runs again."""

    attempt = serializers.IntegerField(help_text="The attempt that runs next (1-based).")
    max_attempts = serializers.IntegerField()
    at = ISODateTimeField(help_text="Not before this time (the job's available_at).")
    after_error = serializers.CharField(allow_null=True,
                                        help_text="The error of the attempt before, if any.")
    policy = serializers.CharField(help_text="The retry policy that set the delay, in words.")


class JobLinkSerializer(serializers.Serializer):
    """A job another one waits for, or that waits for it."""

    id = serializers.IntegerField()
    type = serializers.CharField(allow_null=True, help_text="Null: the job was pruned.")
    status = serializers.ChoiceField(choices=STATUS_CHOICES, allow_null=True,
                                     help_text="Null: the job was pruned.")
    on_failure = serializers.ChoiceField(
        choices=list(AFTER_FAILURE_CHOICES),
        help_text="What the waiting job does if this one fails for good or is cancelled.")


class JobDetailSerializer(JobSerializer):
    """A job with every field of the model and its latest events (oldest first)."""

    events = EventSerializer(many=True, source="latest_events",
                             help_text="The latest 50 events, oldest first.")
    retry_policy = JSONObjectField(allow_null=True, help_text=(
        "The job's own retry policy (given at enqueue), or null: its type's, else the "
        "JOB_RETRY_* settings."))
    next_attempt = serializers.SerializerMethodField(help_text=(
        "For a queued job that already ran: when its next attempt runs, after which error, "
        "under which retry policy; else null."))
    waiting_for_handler = serializers.SerializerMethodField(help_text=(
        "True while the job is queued after a worker without a handler for its type gave it "
        "back (a rolling deploy): it waits for a worker that has one."))
    unknown_type_at = ISODateTimeField(allow_null=True, help_text=(
        "When a worker without a handler for its type first gave it back; null if none did."))

    concurrency_key_running = serializers.IntegerField(
        allow_null=True, help_text="How many jobs with this job's concurrency key run now "
                                   "(null: the job has no key).")
    concurrency_key_wait = serializers.CharField(
        help_text="Why this queued job waits for its key, e.g. \"waiting: 1 of 1 running for "
                  "key customer:42\"; empty when it does not.")
    concurrency_key_holders = serializers.ListField(
        child=serializers.IntegerField(), help_text=(
            "The ids of the running jobs that hold this job's concurrency key (the first 10, "
            "in id order; the job itself when it runs); empty without a key."))

    locked_by_state = serializers.ChoiceField(
        choices=["alive", "lost", "unknown"], allow_null=True, read_only=True, help_text=(
            "The lease owner's worker process: alive, lost (silent for more than two of its "
            "heartbeat intervals: it held the job when it died; the reaper requeues the job "
            "when its lease expires), or unknown (no heartbeat from it yet, or its row is "
            "gone); null when no one holds the job."))
    locked_by_last_seen_at = ISODateTimeField(allow_null=True, read_only=True, help_text=(
        "The lease owner's process's last heartbeat; null when unknown or not held."))

    dependencies = JobLinkSerializer(
        many=True,
        help_text="The jobs this one waits for (enqueued after them), in id order.")
    dependants = JobLinkSerializer(
        many=True,
        help_text="The jobs that wait for this one (the first 100), in id order.")

    class Meta(JobSerializer.Meta):
        fields = JobSerializer.Meta.fields + ["last_traceback", "request_fingerprint",
                                              "retry_policy", "next_attempt",
                                              "waiting_for_handler", "unknown_type_at", "events",
                                              "dependencies", "dependants",
                                              "concurrency_key_running", "concurrency_key_wait",
                                              "concurrency_key_holders",
                                              "locked_by_state", "locked_by_last_seen_at"]
        read_only_fields = fields

    @extend_schema_field(NextAttemptSerializer(allow_null=True))
    def get_next_attempt(self, job) -> dict | None:
        if job.status != Status.QUEUED or not job.attempts:
            return None
        policy = job.retry_policy
        if policy is None:
            spec = registry.get(job.type)
            policy = spec.retry_policy.as_data() if spec and spec.retry_policy else None
        return NextAttemptSerializer({
            "attempt": job.attempts + 1, "max_attempts": job.max_attempts,
            "at": job.available_at, "after_error": job.last_error,
            "policy": ("the job's own: " if job.retry_policy else "")
            + retries.describe(policy)}).data

    def get_waiting_for_handler(self, job) -> bool:
        return job.status == Status.QUEUED and job.unknown_type_at is not None


class JobEnqueuedSerializer(JobSerializer):
    """A job as an enqueue returns it: `created` false when it is an existing job (an
    idempotent replay, or the job that holds the same unique key)."""

    created = serializers.BooleanField(
        help_text="False: no job was created; this is the job that holds the idempotency key "
                  "or the unique key.")

    class Meta(JobSerializer.Meta):
        fields = JobSerializer.Meta.fields + ["created"]
        read_only_fields = fields


class BulkCreatedSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    jobs = JobEnqueuedSerializer(many=True)


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    has_more = serializers.BooleanField(help_text="More events follow: poll again at once.")
    next_after = serializers.IntegerField(allow_null=True,
                                          help_text="Pass as `after` in the next poll.")


class EventFeedQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1,
                                     help_text="An event id: only later events. Omit to start from the latest.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100,
                                     help_text="At most this many events (1..500, default 100).")


class JobTypeSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    queue = serializers.CharField()
    priority = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    timeout_seconds = serializers.IntegerField(allow_null=True)
    payload_example = JSONObjectField()
    creatable = serializers.BooleanField(
        help_text="Whether the API (and the dashboard's create form) may create jobs of this "
                  "type: JOB_API_CREATABLE_TYPES, or for django_task JOB_API_CREATABLE_TASKS.")


class QueueSerializer(serializers.Serializer):
    """A named queue: its setting (pause, concurrency limit) and its live jobs."""

    name = serializers.CharField()
    paused = serializers.BooleanField(help_text="Workers claim nothing from a paused queue.")
    concurrency_limit = serializers.IntegerField(
        allow_null=True, help_text="At most this many of its jobs run at once across every "
                                   "worker (null: no limit).")
    queued = serializers.IntegerField(help_text="Queued jobs, due now or later.")
    runnable = serializers.IntegerField(help_text="Queued jobs that are due now.")
    running = serializers.IntegerField()


class QueueNameSerializer(serializers.Serializer):
    name = queue_name_field()


class QueueUpdateSerializer(StrictSerializer):
    concurrency_limit = serializers.IntegerField(
        min_value=1, max_value=MAX_CONCURRENCY_LIMIT, allow_null=True,
        help_text="At most this many of the queue's jobs run at once across every worker; "
                  "null removes the limit.")


@extend_schema_field({"type": "array", "items": {}, "example": ["2026-01-01", 7]})
class JSONListField(serializers.JSONField):
    pass


class _LastJob(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_CHOICES)
    started_at = ISODateTimeField(allow_null=True, help_text=(
        "When its latest attempt started (null: not yet run). The tick's own time is the "
        "schedule's `last_tick_at`."))
    finished_at = ISODateTimeField(allow_null=True, help_text="When it finished (null: not yet).")


class ScheduleSerializer(serializers.Serializer):
    """A periodic entry, with its next run and the job of its latest due tick."""

    name = serializers.CharField()
    cron = serializers.CharField(help_text="Five fields, or six with seconds last.")
    timezone = serializers.CharField(help_text="The IANA time zone the cron expression is read in.")
    type = serializers.CharField(allow_null=True,
                                 help_text="The job type it enqueues (or null: a task).")
    task = serializers.CharField(allow_null=True,
                                 help_text="The Django task's path (or null: a type).")
    payload = JSONObjectField(help_text="The job's payload (with `type`).")
    args = JSONListField(help_text="The task's positional arguments (with `task`).")
    kwargs = JSONObjectField(help_text="The task's keyword arguments (with `task`).")
    queue = serializers.CharField(allow_null=True, help_text="null: the type's or task's default.")
    priority = serializers.IntegerField(allow_null=True)
    max_attempts = serializers.IntegerField(allow_null=True)
    timeout_seconds = serializers.IntegerField(allow_null=True)
    source = serializers.ChoiceField(choices=["settings", "decorator"],
                                     help_text="JOB_PERIODIC, or the @periodic decorator.")
    valid = serializers.BooleanField(help_text="false: workers skip it; `problems` says why.")
    problems = serializers.ListField(child=serializers.CharField())
    paused = serializers.BooleanField(help_text=(
        "true: the workers enqueue none of its ticks (POST schedules/{name}/resume/)."))
    next_run_at = ISODateTimeField(allow_null=True)
    last_tick_at = ISODateTimeField(
        allow_null=True, help_text="The latest tick due at or before now.")
    last_job = _LastJob(allow_null=True,
                        help_text="The job of the latest tick (null: not enqueued, e.g. no "
                                  "worker ran then, or it was pruned).")


class _TickJob(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUS_CHOICES)
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    created_at = ISODateTimeField()
    started_at = ISODateTimeField(allow_null=True, help_text="Its latest attempt's start.")
    finished_at = ISODateTimeField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)


class ScheduleTickSerializer(serializers.Serializer):
    """One job of a schedule: a tick's, or a run-now one."""

    tick_at = ISODateTimeField(allow_null=True, help_text=(
        "The tick it was enqueued for (null for a run-now job)."))
    manual = serializers.BooleanField(help_text="Enqueued by run-now, not by a tick.")
    job = _TickJob(help_text="The job and its outcome (status, times, last error).")


class ScheduleTicksQuerySerializer(StrictSerializer):
    limit = serializers.IntegerField(required=False, default=50, min_value=1, max_value=500,
                                     help_text="At most this many, newest first.")


class _Finished(serializers.Serializer):
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class _FinishedWindows(serializers.Serializer):
    last_1m = _Finished()
    last_5m = _Finished()
    last_15m = _Finished()


class _PriorityDepth(serializers.Serializer):
    priority = serializers.IntegerField()
    count = serializers.IntegerField()


class _QueueDepth(serializers.Serializer):
    queue = serializers.CharField()
    count = serializers.IntegerField()
    paused = serializers.BooleanField()


class _Queued(serializers.Serializer):
    total = serializers.IntegerField()
    runnable = serializers.IntegerField(help_text="Queued and due now.")
    scheduled = serializers.IntegerField(help_text="Queued for later (run_at, backoff).")
    by_priority = _PriorityDepth(many=True)
    by_queue = _QueueDepth(many=True)
    max_depth = serializers.IntegerField(allow_null=True, help_text="JOB_MAX_QUEUE_DEPTH (null: off).")


class _RunTime(serializers.Serializer):
    mean = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)
    sample_size = serializers.IntegerField(help_text="Jobs finished in the last 15 minutes.")


class _ThroughputPoint(serializers.Serializer):
    minute = ISODateTimeField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class _RunningJob(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    worker_id = serializers.CharField()
    started_at = ISODateTimeField(allow_null=True)
    progress_percent = serializers.IntegerField(allow_null=True)


class _WorkerProcess(serializers.Serializer):
    id = serializers.CharField()
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    threads = serializers.IntegerField()
    queues = serializers.ListField(child=serializers.CharField())
    state = serializers.ChoiceField(
        choices=["alive", "lost"],
        help_text="`lost`: silent for more than two of its heartbeat intervals (as on the workers "
                  "page); its running jobs are what it held, requeued when their leases expire.")
    started_at = ISODateTimeField()
    heartbeat_at = ISODateTimeField()
    running_jobs = _RunningJob(many=True)


class _Workers(serializers.Serializer):
    active = serializers.IntegerField(help_text="Processes alive: beating within two heartbeat "
                                                "intervals. A lost one is listed, not counted.")
    lost = serializers.IntegerField(help_text="Processes listed as lost.")
    threads = serializers.IntegerField()
    busy_threads = serializers.IntegerField()
    processes = _WorkerProcess(many=True)


class _CountsByStatus(serializers.Serializer):
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class _CountsByState(serializers.Serializer):
    """The jobs by the states an operator filters by (`?state=`): queued split in three."""

    available = serializers.IntegerField(help_text="Queued and due now.")
    scheduled = serializers.IntegerField(help_text="Queued for later, never attempted.")
    retryable = serializers.IntegerField(help_text="Queued for later after a failed attempt.")
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class _QueueWorker(serializers.Serializer):
    id = serializers.CharField()
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    threads = serializers.IntegerField()
    queues = serializers.ListField(child=serializers.CharField(),
                                   help_text='The queues it claims from ("*": every queue).')
    all_queues = serializers.BooleanField(help_text="It claims from every queue.")
    heartbeat_at = ISODateTimeField()
    running_here = serializers.IntegerField(help_text="This queue's jobs it runs now.")


class QueueDetailSerializer(QueueSerializer):
    """One queue for its page: the list's fields, every status's count, and its workers."""

    counts_by_status = _CountsByStatus(help_text="The queue's jobs by status.")
    workers = _QueueWorker(many=True, help_text=(
        "Live worker processes (a heartbeat in the last 15 s) that claim from this queue."))


class ThroughputQuerySerializer(StrictSerializer):
    range = serializers.ChoiceField(choices=["15m", "1h", "24h"], default="15m", help_text=(
        "15m and 1h: per minute; 24h: per 30 minutes."))
    queue = queue_name_field(required=False, help_text="Only this queue's jobs.")
    type = serializers.CharField(required=False, max_length=100, help_text="Only this type's jobs.")


class _ThroughputBucket(serializers.Serializer):
    at = ISODateTimeField(help_text="The bucket's start.")
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class ThroughputSerializer(serializers.Serializer):
    range = serializers.CharField()
    bucket_seconds = serializers.IntegerField()
    queue = serializers.CharField(allow_null=True)
    type = serializers.CharField(allow_null=True)
    points = _ThroughputBucket(many=True, help_text="Every bucket of the range, oldest first.")


class MetricsSerializer(serializers.Serializer):
    generated_at = ISODateTimeField()
    counts_by_status = _CountsByStatus()
    counts_by_state = _CountsByState()
    queued = _Queued()
    oldest_runnable_age_seconds = serializers.FloatField(allow_null=True)
    finished = _FinishedWindows()
    run_time_seconds = _RunTime()
    retry_rate = serializers.FloatField(
        allow_null=True, help_text="Share of jobs finished in the last 15 minutes that took more than one attempt.")
    throughput = _ThroughputPoint(many=True, help_text="Succeeded and failed per minute, last 15 minutes, oldest first.")
    workers = _Workers()


class LoginSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False,
                                     style={"input_type": "password"})


# What the user may do: view, create, each action of job_actions.ACTIONS, change a queue.
_Can = type("_Can", (serializers.Serializer,), {
    "view": serializers.BooleanField(),
    "create": serializers.BooleanField(),
    **{name: serializers.BooleanField(help_text=f"{name.capitalize()} {a.takes} ({a.permission}).")
       for name, a in job_actions.ACTIONS.items()},
    "change_queue": serializers.BooleanField(help_text=(
        "Set a queue's concurrency limit (change_queuesetting).")),
})


class UserSerializer(JobQueueModelSerializer):
    permissions = serializers.SerializerMethodField()
    can = serializers.SerializerMethodField()

    class Meta:
        model = get_user_model()
        fields = ["id", "username", "is_staff", "is_superuser", "permissions", "can"]
        read_only_fields = fields

    def get_permissions(self, user) -> list[str]:
        return sorted(user.get_all_permissions())

    @extend_schema_field(_Can)
    def get_can(self, user):
        return {
            "view": user.has_perm("django_pg_jobqueue.view_job"),
            "create": user.has_perm("django_pg_jobqueue.add_job"),
            **{name: user.has_perm(a.perm) for name, a in job_actions.ACTIONS.items()},
            "change_queue": user.has_perm("django_pg_jobqueue.change_queuesetting"),
        }


class CsrfSerializer(serializers.Serializer):
    csrf_token = serializers.CharField(help_text="Send it back in the X-CSRFToken header.")


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.CharField()
    migrations = serializers.CharField()


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



# --- Bulk actions: POST /api/v1/jobs/actions/ ----------------------------------------------
MAX_ACTION_IDS = 1000


class JobActionFilterSerializer(StrictSerializer):
    """The job list's filter parameters (GET /api/v1/jobs/), as an object; the list's own
    filter set (api/filters.py JobFilter) applies them, so both select the same jobs."""

    status = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                   help_text="One status or several, comma-separated.")
    state = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text=(
        "One state or several, comma-separated: available, scheduled, retryable, running, "
        "succeeded, failed, cancelled."))
    type = serializers.CharField(required=False, allow_blank=True, help_text="Exact job type.")
    queue = serializers.CharField(required=False, allow_blank=True, help_text="Exact queue name.")
    priority = serializers.IntegerField(required=False, allow_null=True, help_text="Exact priority.")
    priority_min = serializers.IntegerField(required=False, allow_null=True)
    priority_max = serializers.IntegerField(required=False, allow_null=True)
    created_after = serializers.CharField(required=False, allow_blank=True,
                                          help_text="ISO 8601; created at or after.")
    created_before = serializers.CharField(required=False, allow_blank=True,
                                           help_text="ISO 8601; created before.")
    schedule = serializers.CharField(required=False, allow_blank=True,
                                     help_text="The jobs this periodic schedule enqueued.")
    search = serializers.CharField(required=False, allow_blank=True,
                                   help_text="As the list's search: an id, a key, or text in any job (3+ characters).")


class JobActionSerializer(StrictSerializer):
    """An action on the given jobs (`ids`), on every job matching `filter`, or on every job
    (`"all": true`): exactly one of them. A filter that filters nothing (`{}`, or only blank
    values) is a 400: every job is only ever meant by saying `"all": true`."""

    action = serializers.ChoiceField(choices=list(job_actions.ACTIONS), help_text="; ".join(
        f"{name}: {a.takes}" for name, a in job_actions.ACTIONS.items()) + ".")
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False,
        min_length=1, max_length=MAX_ACTION_IDS,
        help_text=f"These jobs (1 to {MAX_ACTION_IDS:,} ids). Not with `filter` or `all`.")
    filter = JobActionFilterSerializer(required=False, help_text=(
        "Every job matching these list filters (all of them), at least one of them given: "
        "`{}` is a 400 (send `\"all\": true` to mean every job). Processed in batches by id, "
        "each its own short transaction. Not with `ids`."))
    all = serializers.BooleanField(required=False, help_text=(
        "true: every job (each still through the action's guards). The explicit way to act on "
        "every job; not with `ids` or a non-empty `filter`."))

    after = BigIntegerField(required=False, min_value=0, max_value=2**63 - 1, help_text=(
        "Go on after this job id: the `after` of the previous answer to the same request "
        "(by `filter` or `all`; not with `ids`)."))

    def validate_all(self, value):
        if not isinstance(self.initial_data.get("all"), bool):
            raise serializers.ValidationError("must be true or false.")
        return value

    def validate(self, attrs):
        every = attrs.get("all") is True
        given = self._given_filter(attrs)
        if every:
            if "ids" in attrs or given:
                raise serializers.ValidationError({"all": [
                    "all means every job: send it without ids and without filters."]})
            return attrs
        if "ids" in attrs and "after" in attrs:
            raise serializers.ValidationError({"after": [
                "after goes on with a filter or all: ids are done in one request."]})
        if ("ids" in attrs) == ("filter" in attrs):
            raise serializers.ValidationError({"non_field_errors": [
                "give either ids (a list of job ids), filter (the job list's filter "
                "parameters, as an object) or \"all\": true (every job), one of them."]})
        if "filter" in attrs and not given:
            raise serializers.ValidationError({"filter": [
                "an empty filter would select every job: give at least one filter, or send "
                "\"all\": true (without filter) to mean every job."]})
        return attrs

    @staticmethod
    def _given_filter(attrs) -> dict[str, str]:
        given = attrs.get("filter") or {}
        return {name: str(value) for name, value in given.items() if value not in (None, "")}

    def filter_params(self) -> dict[str, str]:
        """The filter as the list endpoint's query parameters (blank ones dropped); {} when
        `all` is true."""
        return self._given_filter(self.validated_data)


class _Refusal(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.ChoiceField(choices=["not_found", "invalid_transition"])
    status = serializers.CharField(allow_null=True, help_text="The job's status (null when not found).")
    detail = serializers.CharField(help_text="A sentence for people.")


class JobActionResultSerializer(serializers.Serializer):
    done = serializers.IntegerField(help_text="How many jobs the action was applied to.")
    refused = _Refusal(many=True, help_text=(
        "The jobs the action was refused for, and why (the first 100; `refused_count` counts "
        "them all)."))
    refused_count = serializers.IntegerField()
    after = BigIntegerField(allow_null=True, help_text=(
        "By filter or all: null when every matching job was considered; else the request "
        "stopped at its bound after this job id: send it again with this `after` to go on."))
    remaining = serializers.IntegerField(help_text=(
        "By filter or all: the matching jobs not yet considered (0 when done)."))
