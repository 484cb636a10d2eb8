"""POST /api/v1/jobs/retry/: the dead letter's bulk retry (services/bulk_retry.py).

It differs from `POST jobs/actions/` with `retry` on purpose (docs/how-to/api.md, "Two ways
to retry many jobs"): it is the retry of failed jobs by what their failure was (type, error
text, when they failed), in one statement a batch (`ids`: all in one statement, so a job and
the job it waits for are retried together, in any order), skipping jobs another session
holds, to the end in one request, answering a count. The actions endpoint puts each job
through the single-job service, by the job list's filters, and reports each refusal.
"""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from ... import conf
from ...services.bulk_actions import retry_matching_everywhere
from ...services.bulk_retry import retry_ids, retry_matching
from ..fields import ISODateTimeField, StrictSerializer, in_utc
from ..permissions import check_may_select
from ..schema import errors, extend_schema
from ..shards import OmitNullShardsMixin, ShardStateSerializer

MAX_RETRY_IDS = 1000


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
        return in_utc(value)

    def validate_finished_before(self, value):
        return in_utc(value)

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
        return attrs  # the window's order is the service's rule (bulk_retry.retry_matching)

    def filters(self) -> dict:
        """The validated filters as keyword arguments of `bulk_retry.retry_matching`."""
        return {name: self.validated_data[name] for name in self.FILTERS
                if name in self.validated_data}


class JobRetryMatchingResultSerializer(OmitNullShardsMixin, serializers.Serializer):
    retried = serializers.IntegerField(help_text="How many jobs went back to the queue.")
    not_retried = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="With `ids`: the ids that were not retried (unknown, or neither failed nor "
                  "cancelled). With filters: always [] (only failed jobs match).")
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "By filter or all, with JOB_SHARDS only: each database (JOB_DATABASE and every "
        "shard) and whether it answered; the failed jobs of one that did not were not "
        "retried (send the same request once it is back)."))


# POST jobs/retry/ as an action of JobViewSet (jobs/views.py).
class JobRetryMatchingMixin:

    @extend_schema(
        summary="Retry failed jobs in bulk: by filter, every one, or the given ids", tags=["jobs"],
        operation_id="v1_jobs_retry_matching_create",
        description="The dead letter's retry. With filters (all of them must match): every "
                    "failed job of that `type`, whose last error contains `error_contains`, "
                    "that failed in [`finished_after`, `finished_before`), retried in batches "
                    "of 500, each its own short transaction. `{\"all\": true}`: every failed "
                    "job. `ids`: these jobs, failed or cancelled; the others come back in "
                    "`not_retried`. A body that says none of these is a 400, so that no "
                    "request retries every failed job by accident. Attempts already spent stay "
                    "counted, as with a single retry. With JOB_SHARDS, a filter or `all` "
                    "retries in every database in turn (`shards` says which answered; one "
                    "that did not is skipped), and `ids` reach the database each id names. "
                    "Needs change_job; by filter or `all`, "
                    "view_job too (a filter reads the jobs it matches): a 403 otherwise.",
        request=JobRetryMatchingSerializer,
        examples=[
            OpenApiExample("by filter", request_only=True, value={
                "type": "email_send", "error_contains": "timeout",
                "finished_after": "2026-01-01T00:00:00Z"}),
            OpenApiExample("every failed job", request_only=True, value={"all": True}),
            OpenApiExample("selected", request_only=True, value={"ids": [41, 42, 43]}),
        ],
        responses={200: OpenApiResponse(JobRetryMatchingResultSerializer, examples=[
            OpenApiExample("retried", response_only=True,
                           value={"retried": 2, "not_retried": [43]})]),
            **errors(400, 401, 403, 503)},
    )
    @action(detail=False, methods=["post"], url_path="retry", url_name="retry-matching")
    def retry_matching(self, request):
        serializer = JobRetryMatchingSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        actor = request.user.get_username()
        if "ids" in serializer.validated_data:
            retried, not_retried = retry_ids(serializer.validated_data["ids"], actor=actor)
            return Response({"retried": retried, "not_retried": not_retried})
        check_may_select(request.user, "retry")
        if not conf.get().SHARDS:
            retried = retry_matching(**serializer.filters(), actor=actor)
            return Response({"retried": retried, "not_retried": []})
        outcome = retry_matching_everywhere(**serializer.filters(), actor=actor)
        return Response(JobRetryMatchingResultSerializer(
            {"retried": outcome.done, "not_retried": [], "shards": outcome.shards}).data)
