"""POST /api/v1/jobs/ and jobs/bulk/: what a request to enqueue may say (the fields are
enqueue()'s arguments, by the same names; the service validates them, these shape them), the
Idempotency-Key header, the user's scope of the keys, backpressure (JOB_MAX_QUEUE_DEPTH) and
the creation throttle's charge."""
from contextlib import contextmanager

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from ... import conf, selectors, services
from ...exceptions import IdempotencyConflict
from ...states import (
    AFTER_FAILURE_CHOICES,
    MAX_ATTEMPTS_LIMIT,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_CONCURRENCY_KEY_LIMIT,
    MAX_DELAY_SECONDS,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
)
from .. import idempotency
from ..exceptions import QueueFull
from ..fields import (
    STATUS_CHOICES,
    AwareDateTimeField,
    DictErrorsListSerializer,
    JSONObjectField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    in_utc,
    queue_name_field,
)
from ..permissions import may_view_jobs
from ..schema import IDEMPOTENCY_KEY, REPLAY, RETRY_AFTER, errors, extend_schema
from ..shared_fields import SharedFieldsMixin
from ..throttles import JobCreateThrottle, charge_created, job_units, settle_unspent
from .serializers import JobSerializer

MAX_BULK_JOBS = 1000


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


@extend_schema_field({"oneOf": [
    {"type": "integer", "format": "int64", "minimum": 1, "description": "A job id."},
    {"type": "object", "properties": {"item": {"type": "integer", "minimum": 0}},
     "required": ["item"], "additionalProperties": False,
     "description": "In /jobs/bulk/: the i-th earlier job of the same request."},
]})
class AfterEntryField(serializers.JSONField):
    """One entry of `after`: a job id, or {"item": i} (services/dependencies.py checks it)."""


def _key_fields() -> serializers.ListField:
    """`fields` of unique, debounce and throttle: the payload keys that make a job's key."""
    return serializers.ListField(
        child=StrictCharField(trim_whitespace=False), required=False, allow_null=True,
        help_text="Payload keys whose values make the key. Neither key nor fields: the whole "
                  "payload.")


class UniqueOptionsSerializer(StrictSerializer):
    """`unique` of a new job: enqueue()'s `unique` dict (services/enqueuing.py checks it)."""

    key = StrictCharField(required=False, allow_null=True, trim_whitespace=False,
                          help_text="The unique key within the job type. Not with fields.")
    fields = _key_fields()
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=STATUS_CHOICES), required=False, allow_null=True,
        help_text="The statuses in which a job counts as the holder of its key: at least "
                  "queued and running. Default: those two, or every status with a period.")
    period_seconds = StrictFloatField(
        required=False, allow_null=True,
        help_text="A job counts only this long after its enqueue.")


class PolicyOptionsSerializer(StrictSerializer):
    """`debounce` or `throttle` of a new job: enqueue()'s dict (services/preparing.py checks it)."""

    key = StrictCharField(required=False, allow_null=True, trim_whitespace=False,
                          help_text="The key within the job type. Not with fields.")
    fields = _key_fields()
    period_seconds = StrictFloatField(
        required=False, allow_null=True,
        help_text="Required. debounce: the quiet time the job waits for after its key's last "
                  "enqueue; throttle: the window in which the key admits one job.")


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
    fairness_key = StrictCharField(
        required=False, allow_null=True, max_length=MAX_CONCURRENCY_KEY_LENGTH,
        help_text="E.g. tenant:a: in a fair queue, claims take jobs round-robin across keys, "
                  "so one key's backlog does not hold back the others' jobs.")
    debounce = PolicyOptionsSerializer(
        required=False, allow_null=True,
        help_text="While the job of this type and key has not started, a new one replaces its "
                  "payload and pushes its start to period_seconds from now: a burst runs once, "
                  "with the last payload (answers 200, `created: false`). Not with run_at, "
                  "delay_seconds, idempotency_key, unique, throttle or after.")
    throttle = PolicyOptionsSerializer(
        required=False, allow_null=True,
        help_text="At most one job of this type and key per period_seconds: later ones answer "
                  "200 with the first job and `created: false`. Not with unique. (Not the "
                  "API's job-creation throttle, JOB_API_THROTTLE_*.)")
    expires_at = AwareDateTimeField(
        required=False, allow_null=True,
        help_text="A job not started by this time never runs: it ends cancelled with an "
                  "`expired` event. After its start time. Not with expires_in_seconds.")
    expires_in_seconds = StrictFloatField(
        required=False, allow_null=True,
        help_text="expires_at as seconds from now (above 0, at most a year).")

    class Meta:
        list_serializer_class = DictErrorsListSerializer  # JobBulkCreateSerializer.jobs

    def validate_run_at(self, value):
        return in_utc(value)

    def validate_expires_at(self, value):
        return in_utc(value)

    # A blank idempotency key, or run_at with delay_seconds: refused by the service
    # (arguments.py, services/preparing.py), which names the field, for Python and the API alike.

    def enqueue_options(self) -> dict:
        """The validated body as keyword arguments of `services.enqueue_or_get`."""
        data = self.validated_data
        # The fields are enqueue()'s arguments, by the same names.
        options = {name: data.get(name) for name in (
            "priority", "queue", "run_at", "delay_seconds", "idempotency_key", "max_attempts",
            "timeout_seconds", "retry_policy", "after", "after_failure", "concurrency_key",
            "concurrency_key_limit", "fairness_key", "expires_at", "expires_in_seconds")}
        for name in ("unique", "debounce", "throttle"):
            options[name] = _unique_option(data.get(name))
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
                         "concurrency_key_limit", "fairness_key", "expires_at",
                         "expires_in_seconds"):
                if data.get(name) is not None:
                    item[name] = data[name]
            for name in ("unique", "debounce", "throttle"):
                if data.get(name) is not None:
                    item[name] = _unique_option(data[name])
            for name in ("after", "after_failure"):
                if data.get(name) is not None:
                    item[name] = data[name]
            items.append(item)
        return items


def _unique_option(value) -> dict | None:
    """The validated `unique`, `debounce` or `throttle` object as enqueue()'s dict (the
    options given, as given)."""
    return None if value is None else dict(value)


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


QUEUE_FULL_RETRY_AFTER_SECONDS = 5

_CREATE_EXAMPLE = OpenApiExample(
    "email", request_only=True,
    value={"type": "email_send", "payload": {"to": "ada@example.com", "subject": "Welcome"},
           "priority": 10, "idempotency_key": "welcome-ada"},
)
_JOB_EXAMPLE = {
    "id": 42, "type": "email_send", "queue": "default", "status": "queued", "priority": 10,
    "payload": {"to": "ada@example.com", "subject": "Welcome"}, "result": None, "attempts": 0,
    "max_attempts": 5, "available_at": "2026-01-01T12:00:00Z", "created_at": "2026-01-01T12:00:00Z",
    "updated_at": "2026-01-01T12:00:00Z", "started_at": None, "finished_at": None,
    "locked_by": None, "lease_expires_at": None, "lease_token": None, "timeout_seconds": 30,
    "progress": {"percent": None, "message": ""}, "progress_percent": None,
    "progress_message": "", "last_error": None, "idempotency_key": "welcome-ada",
    "cancel_requested_at": None, "is_finished": False, "idempotency_expires_at": None,
    "unique_key": None, "unique_states": None,
}


def _idempotency_key(request, body_key: str | None) -> str | None:
    # META, not request.headers: that builds a dict of every header, on every POST.
    header = request.META.get("HTTP_IDEMPOTENCY_KEY")
    if header is None:
        return body_key
    if not header.strip() or len(header) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise ValidationError({"Idempotency-Key": [
            f"must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters."]})
    if body_key is not None and body_key != header:
        raise ValidationError({"idempotency_key": ["differs from the Idempotency-Key header."]})
    return header


@contextmanager
def _client_keys(sent: dict):
    """A conflict on a scoped key names the key as its client sent it (the job is theirs)."""
    try:
        yield
    except IdempotencyConflict as exc:
        raise IdempotencyConflict(sent.get(exc.key, idempotency.unscoped(exc.key)),
                                  exc.job_id) from None


def _check_backpressure(new_jobs: int, keys: list[str]) -> None:
    """503 when the queued depth would pass JOB_MAX_QUEUE_DEPTH. A retried idempotent
    request whose job exists is let through: it creates nothing."""
    limit = conf.get().MAX_QUEUE_DEPTH
    if limit is None:
        return
    if len(keys) == 1 and new_jobs == 1 and selectors.job_by_idempotency_key(keys[0]):
        return
    depth = selectors.queued_depth()
    if depth + new_jobs > limit:
        raise QueueFull(
            f"the queue holds {depth} queued jobs (JOB_MAX_QUEUE_DEPTH={limit}); "
            f"{new_jobs} more would pass it",
            retry_after=QUEUE_FULL_RETRY_AFTER_SECONDS,
        )


# POST jobs/ and jobs/bulk/ of JobViewSet (jobs/views.py), with the creation throttle.
class JobEnqueueMixin:

    def get_throttles(self):
        if self.action in ("create", "bulk"):
            return [JobCreateThrottle()]
        return super().get_throttles()

    def finalize_response(self, request, response, *args, **kwargs):
        # A create that ended without saying what it created (a 400, a 503, an error) gives
        # its throttle reservation back.
        settle_unspent(request)
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        summary="Enqueue a job", tags=["jobs"],
        description="Only `type` is required; the type's defaults fill the rest "
                    "(see /api/v1/job-types/). 201: created. 200: no job created: an "
                    "idempotent replay (the same key and the same request before: the "
                    "original job, with `X-Idempotency-Replay: true`), or a duplicate of a "
                    "unique job (the job that holds the unique key); `created` is false.",
        request=JobCreateSerializer, parameters=[IDEMPOTENCY_KEY, REPLAY, RETRY_AFTER],
        examples=[_CREATE_EXAMPLE],
        responses={
            201: OpenApiResponse(JobEnqueuedSerializer, description="Created.", examples=[
                OpenApiExample("created", value={**_JOB_EXAMPLE, "created": True}, response_only=True, status_codes=[201])]),
            200: OpenApiResponse(JobEnqueuedSerializer, description="Idempotent replay, or a "
                                 "unique job's duplicate: the job the first "
                                 "request with this key created (as it is now).", examples=[
                OpenApiExample("replay", value={**_JOB_EXAMPLE, "created": False}, response_only=True, status_codes=[200])]),
            **errors(400, 401, 403, 409, 413, 429, 503),
        },
    )
    def create(self, request):
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        options = serializer.enqueue_options()
        key = _idempotency_key(request, options["idempotency_key"])
        options["idempotency_key"] = stored_key = idempotency.scoped(request.user, key)
        _check_backpressure(1, [stored_key] if stored_key else [])
        with _client_keys({stored_key: key}):
            job, created = services.enqueue_or_get(
                **options, from_api=True, key_scope=idempotency.key_scope(request.user),
                may_name_jobs=may_view_jobs(request.user))
        charge_created(request, job_units(options) if created else 0)
        body = JobEnqueuedSerializer(job).data
        replayed = not created and stored_key is not None and job.idempotency_key == stored_key
        if replayed:
            body["idempotency_key"] = key  # as sent, also when it was stored as its digest
        if created:
            if key is not None:
                body["idempotency_key"] = key
            return Response(body, status=status.HTTP_201_CREATED)
        # Not created: an idempotent replay, or the job that holds the unique key.
        return Response(body, status=status.HTTP_200_OK,
                        headers={"X-Idempotency-Replay": "true"} if replayed else {})

    @extend_schema(
        summary="Enqueue up to 1,000 jobs, all or nothing", tags=["jobs"],
        description="One statement, one transaction: if any job is invalid nothing is created "
                    "and `errors.jobs[i]` names the bad fields of item i. Items may carry their "
                    "own idempotency_key (unique within the request).",
        request=JobBulkCreateSerializer, parameters=[RETRY_AFTER],
        examples=[OpenApiExample("two jobs", request_only=True, value={"jobs": [
            {"type": "noop"}, {"type": "sleep", "payload": {"seconds": 2}, "priority": 5}]})],
        responses={201: BulkCreatedSerializer, **errors(400, 401, 403, 409, 413, 429, 503)},
    )
    @action(detail=False, methods=["post"])
    def bulk(self, request):
        serializer = JobBulkCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        items = serializer.enqueue_items()
        sent = {}  # stored key -> the key as sent
        for item in items:
            if "idempotency_key" in item:
                key = item["idempotency_key"]
                item["idempotency_key"] = stored_key = idempotency.scoped(request.user, key)
                sent[stored_key] = key
        _check_backpressure(len(items), list(sent))
        with _client_keys(sent):
            results = services.enqueue_many_or_get(
                items, from_api=True, key_scope=idempotency.key_scope(request.user),
                may_name_jobs=may_view_jobs(request.user))
        charge_created(request, sum(job_units(item)
                                    for item, (_, created) in zip(items, results, strict=True)
                                    if created))
        jobs = [job for job, _ in results]
        body = JobEnqueuedSerializer(jobs, many=True).data
        for job, shown in zip(jobs, body, strict=True):
            if job.idempotency_key in sent:
                shown["idempotency_key"] = sent[job.idempotency_key]
        return Response({"count": len(jobs), "jobs": body}, status=status.HTTP_201_CREATED)
