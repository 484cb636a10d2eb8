"""POST /api/v1/jobs/actions/: cancel, retry, rerun or delete many jobs, by ids or by filter.

Validates, checks the action's permission, and hands over to services/bulk_actions.py, which
puts each job through the single-job service in short batches. (POST jobs/retry/, the dead
letter's retry, differs on purpose: see jobs/retry.py.)"""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from ... import conf, selectors, shards
from ...services import bulk_actions, job_actions
from ..base import JobQueueAPIView
from ..fields import BigIntegerField, StrictSerializer
from ..filters import JobFilter
from ..permissions import (
    ACTION_PERMISSIONS,
    JobActionPermission,
    check_may_select,
    has_action_permission,
)
from ..schema import errors, extend_schema
from ..shards import OmitNullShardsMixin, ShardStateSerializer

# Each request by filter is bounded, so that it answers well within a proxy's timeout (60 s is
# common): it stops after the batch that reaches either bound and says how to go on.
MAX_JOBS_PER_REQUEST = 5_000
MAX_SECONDS_PER_REQUEST = 20.0


def _matching(params: dict[str, str], request):
    """The jobs the list endpoint would return to this request's user for these filter
    parameters (400 otherwise): the request makes `search` match the user's own API keys."""
    filterset = JobFilter(data=params, queryset=selectors.job_list(), request=request)
    if not filterset.is_valid():
        raise ValidationError({"filter": filterset.errors})
    return filterset.qs


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
    payload = serializers.CharField(required=False, allow_blank=True, help_text=(
        "As the list's payload filter: `path:value`, the jobs whose payload contains it "
        "(`customer_id:42`)."))
    shard = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text=(
        "As the list's `shard`: the jobs of this database alone, a shard's alias or "
        "JOB_DATABASE's (another name is a 400 naming it). Without it, every database's."))

    def validate_shard(self, value):
        wrong = value and shards.not_a_database(value)
        if wrong:
            raise serializers.ValidationError(wrong)
        return value


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
        """The filters given (blank ones dropped); `shard` counts only with JOB_SHARDS, where
        it leaves the other databases alone (without, it names the one database: every job)."""
        given = attrs.get("filter") or {}
        return {name: str(value) for name, value in given.items()
                if value not in (None, "") and (name != "shard" or conf.get().SHARDS)}

    def filter_params(self) -> dict[str, str]:
        """The filter as the list endpoint's query parameters (blank ones dropped, and
        `shard`, which is where they apply: `shard()`); {} when `all` is true."""
        return {name: value for name, value in self._given_filter(self.validated_data).items()
                if name != "shard"}

    def shard(self) -> str | None:
        """The database the filter names (`shard`), or None: every database."""
        return (self.validated_data.get("filter") or {}).get("shard") or None


class _Refusal(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.ChoiceField(choices=["not_found", "invalid_transition"])
    status = serializers.CharField(allow_null=True, help_text="The job's status (null when not found).")
    detail = serializers.CharField(help_text="A sentence for people.")


class JobActionResultSerializer(OmitNullShardsMixin, serializers.Serializer):
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
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "By filter or all, with JOB_SHARDS only: each database (JOB_DATABASE and every "
        "shard) and whether it answered; the jobs of one that did not were not acted on "
        "(send the same request once it is back)."))


class JobActionsView(JobQueueAPIView):
    permission_classes = [JobActionPermission]

    @extend_schema(
        summary="Cancel, retry or delete many jobs: the given ids, or every job matching a filter",
        tags=["jobs"], operation_id="v1_jobs_actions_create",
        request=JobActionSerializer,
        description="Each job goes through the single-job action's service, with its guards: "
                    "cancel takes queued and running jobs, retry failed and cancelled ones, "
                    "delete finished ones (succeeded, failed, cancelled) with their events. "
                    "The others are listed in `refused` with the reason. `filter` takes the "
                    "job list's filter parameters (GET /api/v1/jobs/) as an object; its jobs "
                    f"are processed in batches of {bulk_actions.BATCH_SIZE} by id, each batch "
                    "its own short transaction, so a filter matching millions of jobs holds no "
                    "long transaction. One request does at most "
                    f"{MAX_JOBS_PER_REQUEST:,} jobs or {MAX_SECONDS_PER_REQUEST:.0f} s of work "
                    "(then the batch under way ends): the answer's `remaining` says how many "
                    "matching jobs are left and `after` where it stopped; send the same request "
                    "with that `after` to go on, until `after` is null. "
                    "A filter must filter: `{}` (or only blank values) "
                    "is a 400, and every job is meant only by `{\"all\": true}`. "
                    "With JOB_SHARDS, a `filter` or `all` applies in every database in turn "
                    "(in shard number order, so in id order: one `after` goes on across "
                    "them), the counts summed and the bounds shared; `shards` says which "
                    "database answered, and one that did not is skipped; the filter's `shard` "
                    "keeps it to that database. `ids` reach the database each id names. "
                    "Permissions: change_job for cancel and retry, "
                    "delete_job for delete; by `filter` or `all`, view_job too (a filter "
                    "reads the jobs it matches): without it, a 403 and nothing is matched.",
        examples=[
            OpenApiExample("selected", request_only=True,
                           value={"action": "delete", "ids": [41, 42, 43]}),
            OpenApiExample("by filter", request_only=True,
                           value={"action": "retry", "filter": {"status": "failed",
                                                                "type": "email_send"}}),
            OpenApiExample("every job", request_only=True, value={"action": "delete", "all": True}),
        ],
        responses={200: OpenApiResponse(JobActionResultSerializer, examples=[OpenApiExample(
            "done", response_only=True, value={
                "done": 2, "refused_count": 1, "after": None, "remaining": 0, "refused": [{
                    "id": 43, "reason": "invalid_transition", "status": "running",
                    "detail": "cannot delete job 43: it is running"}]})]),
            **errors(400, 401, 403, 503)},
    )
    def post(self, request):
        serializer = JobActionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        action = serializer.validated_data["action"]
        if not has_action_permission(request.user, action):
            raise PermissionDenied(f"{action} needs the {ACTION_PERMISSIONS[action]} permission.")
        actor = request.user.get_username()
        if "ids" in serializer.validated_data:
            outcome = bulk_actions.apply_to_ids(action, serializer.validated_data["ids"], actor=actor)
        else:
            check_may_select(request.user, action)
            bounds = {"actor": actor, "after": serializer.validated_data.get("after", 0),
                      "max_jobs": MAX_JOBS_PER_REQUEST, "max_seconds": MAX_SECONDS_PER_REQUEST}
            matching = _matching(serializer.filter_params(), request)
            if conf.get().SHARDS:
                outcome = bulk_actions.apply_to_matching_everywhere(
                    action, matching, shard=serializer.shard(), **bounds)
            else:
                outcome = bulk_actions.apply_to_matching(action, matching, **bounds)
        return Response(JobActionResultSerializer(outcome).data)
