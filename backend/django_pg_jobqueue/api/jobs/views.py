"""JobViewSet: /api/v1/jobs/. Each action validates, calls one service or selector, and
serializes; the exception handler (api/exceptions.py) turns domain errors into
404/409/400/503. Enqueueing (POST jobs/, jobs/bulk/) is jobs/enqueue.py's, the dead letter's
retry (POST jobs/retry/) jobs/retry.py's; bulk actions are their own view (jobs/actions.py)."""
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from ... import conf, db, keyset, merged, selectors, services, shards
from ...exceptions import JobNotFound
from ...services.deleting import delete as delete_job
from ..base import JobQueueGenericViewSet, JobQueueOrderingFilter
from ..events import EVENT_EXAMPLE, EVENT_PARAMS, EventPageSerializer, events_query
from ..filters import JobFilter, JobFilterBackend
from ..pagination import MergedJobPagination
from ..permissions import ACTION_PERMISSIONS, ADD, VIEW, JobPermission
from ..schema import JOB_ID, errors, extend_schema
from ..shards import ShardCountSerializer
from .enqueue import JobEnqueueMixin
from .retry import JobRetryMatchingMixin
from .serializers import (
    JobDetailSerializer,
    JobEditSerializer,
    JobSerializer,
    SignalSentSerializer,
    SignalSerializer,
)

SHARD = OpenApiParameter(
    "shard", str, description=(
        "With shards by queue (JOB_SHARDS): list the jobs of this database, a shard's alias "
        "or JOB_DATABASE's; another name is a 400 naming `shard`. Without it, the list "
        "merges every database (paged by `cursor`, not `page`)."))
CURSOR = OpenApiParameter(
    "cursor", str, description=(
        "With JOB_SHARDS and no `shard`: the page after the one whose `next` gave it "
        "(opaque; a cursor of another ordering, or not one the list gave, is a 400 naming "
        "`cursor`). Ignored otherwise."))


def _shard_alias(request) -> str | None:
    """The alias a list's `?shard=` names when it is a shard of JOB_SHARDS (None:
    JOB_DATABASE's)."""
    if request.method not in ("GET", "HEAD"):
        return None
    shard = request.GET.get("shard")
    return shard if shard and shard in conf.get().SHARDS else None


def _job_id(value) -> int:
    job_id = selectors.parse_job_id(value)
    if job_id is None:
        raise JobNotFound(value)
    return job_id


@extend_schema_view(
    list=extend_schema(
        summary="List jobs", tags=["jobs"],
        description="Filtered, ordered and paginated. `ordering` takes one of the listed "
                    "fields, `-` for descending (default `-id`, newest first). With JOB_SHARDS "
                    "and no `shard`: every database's jobs merged in that order (ties by id), "
                    "`count` summed, paged by `cursor` (`next`; `previous` is null, `page` "
                    "past 1 a 400), and `shards` says which database answered, with its "
                    "count; one that did not is left out, not a failure.",
        parameters=[SHARD, CURSOR],
        responses={200: JobSerializer(many=True), **errors(400, 401, 403, 404, 503)},
    ),
    retrieve=extend_schema(
        summary="One job, with every field and its latest 50 events", tags=["jobs"],
        parameters=[JOB_ID],
        responses={200: JobDetailSerializer, **errors(401, 403, 404, 503)},
    ),
)
class JobViewSet(JobEnqueueMixin, JobRetryMatchingMixin, mixins.ListModelMixin,
                 JobQueueGenericViewSet):
    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "retrieve": VIEW, "events": VIEW, "create": ADD, "bulk": ADD,
                       "cancel": ACTION_PERMISSIONS["cancel"],
                       "retry": ACTION_PERMISSIONS["retry"],
                       "rerun": ACTION_PERMISSIONS["rerun"],
                       "run_now": ACTION_PERMISSIONS["run_now"],
                       "signal": ACTION_PERMISSIONS["run_now"],
                       "partial_update": ACTION_PERMISSIONS["run_now"],
                       "retry_matching": ACTION_PERMISSIONS["retry"],
                       "destroy": ACTION_PERMISSIONS["delete"]}
    serializer_class = JobSerializer
    pagination_class = MergedJobPagination
    filter_backends = [JobFilterBackend, JobQueueOrderingFilter]
    filterset_class = JobFilter
    ordering_fields = ["id", "created_at", "updated_at", "available_at", "finished_at",
                       "priority", "attempts", "status", "type", "queue"]
    ordering = ["-id"]
    # The URL's `{id}`: DRF's `pk` would be published as `{id}` only while the host keeps
    # SCHEMA_COERCE_PATH_PK on (DRF's default).
    lookup_url_kwarg = "id"
    lookup_value_regex = "[^/]+"

    def dispatch(self, request, *args, **kwargs):
        # With JOB_SHARDS, a job's routes (its page, events, cancel, retry, ...) run on the
        # database its id names (shards.py); its shard has no replica.
        # The list's `?shard=` runs it on that shard.
        if not conf.get().SHARDS:
            return super().dispatch(request, *args, **kwargs)
        job_id = selectors.parse_job_id(kwargs["id"]) if "id" in kwargs else None
        target = _shard_alias(request) if job_id is None else shards.alias_for_job_id(job_id)
        with db.on_database(target):
            return super().dispatch(request, *args, **kwargs)

    def list(self, request, *args, **kwargs):
        shard = request.query_params.get("shard")
        if shard is not None and (wrong := shards.not_a_database(shard)):
            raise ValidationError({"shard": [wrong]})
        if shard is None and conf.get().SHARDS:
            return self.merged_list(request)
        return super().list(request, *args, **kwargs)

    def merged_list(self, request):
        """Every database's jobs, merged (merged.job_page), paged by `cursor`."""
        if request.query_params.get("page", "1").strip() not in ("", "1"):
            raise ValidationError({"page": ["with shards, the merged list pages by `cursor` "
                                            "(its `next`); name a `shard` to page by number."]})
        queryset = self.filter_queryset(self.get_queryset())
        try:
            page = merged.job_page(queryset, limit=self.paginator.get_page_size(request),
                                   cursor=request.query_params.get("cursor") or None)
        except keyset.BadCursor as error:
            raise ValidationError({"cursor": [f"{error}."]}) from None
        url = remove_query_param(request.build_absolute_uri(), "page")
        return Response({
            "count": page.count,
            "next": page.next_cursor and replace_query_param(url, "cursor", page.next_cursor),
            "previous": None,
            "results": JobSerializer(page.rows, many=True).data,
            "shards": ShardCountSerializer(page.databases, many=True).data})

    def get_queryset(self):
        return selectors.job_list()

    def retrieve(self, request, id=None):
        detail = selectors.job_detail(_job_id(id))
        detail.job.latest_events = detail.events
        detail.job.dependencies = detail.dependencies
        detail.job.dependants = detail.dependants
        return Response(JobDetailSerializer(detail.job).data)

    @extend_schema(
        summary="Delete a finished job and its events", tags=["jobs"], parameters=[JOB_ID],
        description="Succeeded, failed and cancelled jobs only: 409 (`invalid_transition`, "
                    "with the job's `status`) for a queued or running one, which must be "
                    "cancelled first. Its events go with it. Needs delete_job.",
        responses={204: OpenApiResponse(description="Deleted."), **errors(401, 403, 404, 409, 503)},
    )
    def destroy(self, request, id=None):
        delete_job(_job_id(id), actor=request.user.get_username())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Cancel a job", tags=["jobs"], request=None, parameters=[JOB_ID],
        description="A queued job is cancelled at once; a running one is asked to stop "
                    "(`cancel_requested_at`) and ends cancelled when its handler stops. "
                    "409 when it already finished.",
        responses={200: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, id=None):
        job = services.cancel(_job_id(id), actor=request.user.get_username())
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="Retry a failed or cancelled job", tags=["jobs"], request=None, parameters=[JOB_ID],
        description="Back to queued, runnable now; attempts already spent stay counted (one more "
                    "is allowed if none is left). 409 for any other status.",
        responses={200: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def retry(self, request, id=None):
        job = services.retry(_job_id(id), actor=request.user.get_username())
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="Re-run a succeeded job, as a new copy", tags=["jobs"], request=None,
        parameters=[JOB_ID],
        description="Enqueues a new job with the original's type, payload, queue, priority, "
                    "max_attempts and timeout (not its idempotency key) and returns it (201); "
                    "the original stays as it was, with its result and history. The copy's "
                    "`created` event names the original (`data.rerun_of`). Each request makes "
                    "one copy. 409 (`invalid_transition`) for a job that did not succeed: "
                    "retry a failed or cancelled one. 400 when the type has no handler any "
                    "more. Needs change_job.",
        responses={201: JobSerializer, **errors(400, 401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def rerun(self, request, id=None):
        job = services.rerun(_job_id(id), actor=request.user.get_username())
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a job that has not started: its priority, its run time", tags=["jobs"],
        parameters=[JOB_ID], request=JobEditSerializer,
        description="A queued or waiting job only: 409 (`invalid_transition`, with the job's "
                    "`status`) once a worker claimed it or it finished. Fields left out (or "
                    "null) stay as they are; at least one is needed. The job's `edited` event "
                    "records what changed, old and new, and who changed it. A job made "
                    "runnable now wakes idle workers. Needs change_job.",
        responses={200: JobSerializer, **errors(400, 401, 403, 404, 409, 503)},
    )
    def partial_update(self, request, id=None):
        serializer = JobEditSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = services.edit(_job_id(id), **serializer.validated_data,
                            actor=request.user.get_username(), from_api=True)
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="Run a delayed job now", tags=["jobs"], request=None, parameters=[JOB_ID],
        description="A queued job waiting for its run time becomes runnable at once (a "
                    "waiting one as soon as what it waits for is done); one already due is "
                    "left as it is. 409 once a worker claimed it or it finished. Needs "
                    "change_job.",
        responses={200: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def run_now(self, request, id=None):
        job = services.run_now(_job_id(id), actor=request.user.get_username())
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="Send a signal to a job", tags=["jobs"], request=SignalSerializer,
        parameters=[JOB_ID],
        description="Signal `name`, with `data`, for the job's durable wait "
                    "(`ctx.wait_for_signal(name)` returns `data`). Kept whatever the job is "
                    "doing until its handler waits for it; a job parked waiting for it is "
                    "queued to run at once (`woke`). Each name is sent once. 404 for no such "
                    "job, 409 for a finished job, a name already sent or a wait for it that "
                    "timed out, 400 for a bad name or data. Needs change_job.",
        responses={200: SignalSentSerializer, **errors(400, 401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def signal(self, request, id=None):
        serializer = SignalSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job_id, name = _job_id(id), serializer.validated_data["name"]
        woke = services.send_signal(job_id, name, serializer.validated_data["data"],
                                    actor=request.user.get_username())
        return Response(SignalSentSerializer({"job_id": job_id, "name": name, "woke": woke}).data)

    @extend_schema(
        summary="A job's events after a cursor, oldest first", tags=["events"],
        parameters=[JOB_ID, *EVENT_PARAMS],
        responses={200: OpenApiResponse(EventPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [EVENT_EXAMPLE], "has_more": False, "next_after": 1001})]),
            **errors(400, 401, 403, 404, 503)},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request, id=None):
        query = events_query(request)
        job = selectors.job_get(_job_id(id))
        page = selectors.events_feed(job_id=job.pk, **query)
        return Response(EventPageSerializer(page).data)
