"""POST /api/v1/jobs/actions/: cancel, retry or delete many jobs, by ids or by filter.

Validates, checks the action's permission, and hands over to services/bulk_actions.py, which
puts each job through the single-job service in short batches."""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from .. import selectors
from ..services import bulk_actions
from .base import JobQueueAPIView
from .filters import JobFilter
from .permissions import (
    ACTION_PERMISSIONS,
    JobActionPermission,
    check_may_select,
    has_action_permission,
)
from .schema import errors, extend_schema
from .serializers import JobActionResultSerializer, JobActionSerializer

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
            outcome = bulk_actions.apply_to_matching(
                action, _matching(serializer.filter_params(), request), actor=actor,
                after=serializer.validated_data.get("after", 0),
                max_jobs=MAX_JOBS_PER_REQUEST, max_seconds=MAX_SECONDS_PER_REQUEST)
        return Response(JobActionResultSerializer(outcome).data)
