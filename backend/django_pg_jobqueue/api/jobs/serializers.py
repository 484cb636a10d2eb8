"""A job as the API shows it: in lists and as actions return it (JobSerializer), with every
field and its latest events (JobDetailSerializer)."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ... import retries
from ...models import Job
from ...registry import registry
from ...states import AFTER_FAILURE_CHOICES, PRIORITY_MAX, PRIORITY_MIN, Status
from ..events import EventSerializer
from ..fields import (
    STATUS_CHOICES,
    AnyJSONField,
    AwareDateTimeField,
    BigIntegerField,
    ISODateTimeField,
    JobQueueModelSerializer,
    JSONObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    in_utc,
)
from ..idempotency import unscoped
from ..shared_fields import SharedFieldsMixin


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
    batch = serializers.IntegerField(
        source="batch_id", allow_null=True, read_only=True,
        help_text="The id of the batch the job is a member of (GET batches/{id}/), or null.")

    class Meta:
        model = Job
        fields = [
            "id", "type", "queue", "status", "priority", "payload", "result", "attempts",
            "max_attempts", "available_at", "created_at", "updated_at", "started_at",
            "finished_at", "locked_by", "lease_expires_at", "lease_token", "timeout_seconds",
            "progress", "progress_percent", "progress_message", "last_error",
            "idempotency_key", "cancel_requested_at", "is_finished",
            "idempotency_expires_at", "unique_key", "unique_states", "has_dependants",
            "concurrency_key", "concurrency_key_limit", "fairness_key", "expires_at",
            "debounce_key", "batch",
        ]
        read_only_fields = fields

    def get_is_finished(self, job) -> bool:
        return job.status in (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # Keys as their client sent them, without the API user's scope (keys.py).
        for name in ("idempotency_key", "concurrency_key", "fairness_key"):
            if name in data:
                data[name] = unscoped(data[name])
        return data


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
    fairness_wait = serializers.CharField(
        help_text="How the claim orders this queued job in a fair or aging queue, e.g. "
                  "\"fair shares: key tenant:a takes turns with 2 other keys; 3 of its jobs "
                  "come first\" or \"aging: counts as priority 7 now: 2, +1 per 30 s due, up "
                  "to 100\"; empty otherwise.")

    rate_limit_wait = serializers.CharField(
        help_text="Why this queued, due job waits for its rate limits (its queue's, its type's, "
                  "its concurrency key's), each with its window's use and when the job fits "
                  "again, e.g. \"rate limit of type email_send: 20 of 20 started in the last "
                  "1 s; room for it in 0.4 s\"; empty when none holds it back.")

    locked_by_state = serializers.ChoiceField(
        choices=["alive", "lost", "unknown"], allow_null=True, read_only=True, help_text=(
            "The lease owner's worker process: alive, lost (silent for more than two of its "
            "heartbeat intervals: it held the job when it died; the reaper requeues the job "
            "when its lease expires), or unknown (no heartbeat from it yet, or its row is "
            "gone); null when no one holds the job."))
    locked_by_last_seen_at = ISODateTimeField(allow_null=True, read_only=True, help_text=(
        "The lease owner's process's last heartbeat; null when unknown or not held."))

    awaiting_signal = serializers.CharField(allow_null=True, read_only=True, help_text=(
        "The name of the signal this queued job is parked waiting for "
        "(`ctx.wait_for_signal(name)`; POST jobs/{id}/signal/ sends it), or null."))

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
                                              "concurrency_key_holders", "fairness_wait",
                                              "rate_limit_wait",
                                              "locked_by_state", "locked_by_last_seen_at",
                                              "awaiting_signal"]
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


class JobEditSerializer(StrictSerializer):
    """PATCH /api/v1/jobs/{id}/: what may change on a job that has not started."""

    priority = StrictIntegerField(
        required=False, allow_null=True, min_value=PRIORITY_MIN, max_value=PRIORITY_MAX,
        help_text=f"{PRIORITY_MIN}..{PRIORITY_MAX}, higher runs first, at most "
                  "JOB_API_MAX_PRIORITY (0 by default). Omitted or null: unchanged.")
    run_at = AwareDateTimeField(
        required=False, allow_null=True,
        help_text="Not runnable before this time (a time past: now): an ISO 8601 date and time "
                  "with its offset, at most JOB_API_MAX_DELAY_SECONDS from now. Omitted or "
                  "null: unchanged.")

    def validate_run_at(self, value):
        return in_utc(value)


@extend_schema_field({"nullable": True, "description": "Any JSON value: what the job's wait "
                                                       "for the signal returns."})
class SignalDataField(serializers.JSONField):
    pass


class SignalSerializer(StrictSerializer):
    """POST /api/v1/jobs/{id}/signal/: a signal for a job's durable wait."""

    name = StrictCharField(
        help_text="The signal's name, as the handler waits for it "
                  "(`ctx.wait_for_signal(name)`): 1 to 200 characters.")
    data = SignalDataField(
        required=False, allow_null=True, default=None,
        help_text="What the handler's wait returns: any JSON value, under a payload's rules "
                  "(JOB_MAX_PAYLOAD_BYTES). Omitted: null.")


class SignalSentSerializer(serializers.Serializer):
    """The answer to a signal: kept for the job, and whether it woke it."""

    job_id = BigIntegerField(help_text="The job signalled.")
    name = serializers.CharField(help_text="The signal's name.")
    woke = serializers.BooleanField(
        help_text="Whether the job was parked waiting for this signal and is now queued to "
                  "run at once; false: kept until its handler waits for it.")
