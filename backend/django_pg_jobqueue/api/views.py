"""API views. Each validates, calls one service or selector, and serializes; the exception
handler (api/exceptions.py) turns domain errors into 404/409/400/503. Every view derives from
api/base.py's classes, which carry the API's whole DRF configuration (no REST_FRAMEWORK)."""
from contextlib import contextmanager

from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from .. import conf, selectors, services
from ..exceptions import IdempotencyConflict, JobNotFound
from ..services.bulk_retry import retry_ids, retry_matching
from ..services.deleting import delete as delete_job
from ..states import MAX_IDEMPOTENCY_KEY_LENGTH
from . import idempotency
from .base import JobQueueAPIView, JobQueueGenericViewSet, JobQueueOrderingFilter, JobQueueViewSet
from .exceptions import QueueFull
from .filters import JobFilter, JobFilterBackend
from .permissions import (
    ACTION_PERMISSIONS,
    ADD,
    CHANGE,
    CHANGE_QUEUE,
    VIEW,
    JobPermission,
    check_may_select,
    may_view_jobs,
)
from .schema import IDEMPOTENCY_KEY, JOB_ID, QUEUE_NAME, REPLAY, RETRY_AFTER, errors, extend_schema
from .serializers import (
    BulkCreatedSerializer,
    CsrfSerializer,
    EventFeedQuerySerializer,
    EventPageSerializer,
    HealthSerializer,
    JobBulkCreateSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobEnqueuedSerializer,
    JobRetryMatchingResultSerializer,
    JobRetryMatchingSerializer,
    JobSerializer,
    JobTypeSerializer,
    LoginSerializer,
    MetricsSerializer,
    QueueDetailSerializer,
    QueueNameSerializer,
    QueueSerializer,
    QueueUpdateSerializer,
    ScheduleSerializer,
    ScheduleTickSerializer,
    ScheduleTicksQuerySerializer,
    ThroughputQuerySerializer,
    ThroughputSerializer,
    UserSerializer,
)
from .throttles import JobCreateThrottle, LoginThrottle, charge_created, job_units, settle_unspent

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
_EVENT_EXAMPLE = {
    "id": 1001, "job_id": 42, "job_type": "email_send", "job_status": "running",
    "kind": "claimed", "attempt": 1, "worker_id": "host-4242-0", "message": "",
    "data": {"lease_seconds": 30}, "created_at": "2026-01-01T12:00:01Z",
}


def _job_id(value) -> int:
    job_id = selectors.parse_job_id(value)
    if job_id is None:
        raise JobNotFound(value)
    return job_id


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


def _events_query(request) -> dict:
    query = EventFeedQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


_EVENT_PARAMS = [
    OpenApiParameter("after", {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                     description="An event id: return only later events (the cursor). Omit it "
                                 "to start from the latest events."),
    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
                     description="At most this many events."),
]


@extend_schema_view(
    list=extend_schema(
        summary="List jobs", tags=["jobs"],
        description="Filtered, ordered and paginated. `ordering` takes one of the listed "
                    "fields, `-` for descending (default `-id`, newest first).",
        responses={200: JobSerializer(many=True), **errors(400, 401, 403, 404, 503)},
    ),
    retrieve=extend_schema(
        summary="One job, with every field and its latest 50 events", tags=["jobs"],
        parameters=[JOB_ID],
        responses={200: JobDetailSerializer, **errors(401, 403, 404, 503)},
    ),
)
class JobViewSet(mixins.ListModelMixin, JobQueueGenericViewSet):
    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "retrieve": VIEW, "events": VIEW, "create": ADD, "bulk": ADD,
                       "cancel": ACTION_PERMISSIONS["cancel"],
                       "retry": ACTION_PERMISSIONS["retry"],
                       "rerun": ACTION_PERMISSIONS["rerun"],
                       "retry_matching": ACTION_PERMISSIONS["retry"],
                       "destroy": ACTION_PERMISSIONS["delete"]}
    serializer_class = JobSerializer
    filter_backends = [JobFilterBackend, JobQueueOrderingFilter]
    filterset_class = JobFilter
    ordering_fields = ["id", "created_at", "updated_at", "available_at", "finished_at",
                       "priority", "attempts", "status", "type", "queue"]
    ordering = ["-id"]
    # The URL's `{id}`: DRF's `pk` would be published as `{id}` only while the host keeps
    # SCHEMA_COERCE_PATH_PK on (DRF's default).
    lookup_url_kwarg = "id"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.job_list()

    def get_throttles(self):
        if self.action in ("create", "bulk"):
            return [JobCreateThrottle()]
        return super().get_throttles()

    def finalize_response(self, request, response, *args, **kwargs):
        # A create that ended without saying what it created (a 400, a 503, an error) gives
        # its throttle reservation back.
        settle_unspent(request)
        return super().finalize_response(request, response, *args, **kwargs)

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
        summary="Retry failed jobs in bulk: by filter, every one, or the given ids", tags=["jobs"],
        operation_id="v1_jobs_retry_matching_create",
        description="The dead letter's retry. With filters (all of them must match): every "
                    "failed job of that `type`, whose last error contains `error_contains`, "
                    "that failed in [`finished_after`, `finished_before`), retried in batches "
                    "of 500, each its own short transaction. `{\"all\": true}`: every failed "
                    "job. `ids`: these jobs, failed or cancelled; the others come back in "
                    "`not_retried`. A body that says none of these is a 400, so that no "
                    "request retries every failed job by accident. Attempts already spent stay "
                    "counted, as with a single retry. Needs change_job; by filter or `all`, "
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
        try:
            retried = retry_matching(**serializer.filters(), actor=actor)
        except ValueError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from None
        return Response({"retried": retried, "not_retried": []})

    @extend_schema(
        summary="A job's events after a cursor, oldest first", tags=["events"],
        parameters=[JOB_ID, *_EVENT_PARAMS],
        responses={200: OpenApiResponse(EventPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [_EVENT_EXAMPLE], "has_more": False, "next_after": 1001})]),
            **errors(400, 401, 403, 404, 503)},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request, id=None):
        query = _events_query(request)
        job = selectors.job_get(_job_id(id))
        page = selectors.events_feed(job_id=job.pk, **query)
        return Response(EventPageSerializer(page).data)


def _queue_name(value) -> str:
    """The queue name from the URL, validated like a job's `queue` field (400 otherwise)."""
    serializer = QueueNameSerializer(data={"name": value})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data["name"]


_QUEUE_EXAMPLE = {"name": "reports", "paused": False, "concurrency_limit": 2, "queued": 120,
                  "runnable": 118, "running": 2}


def _queue_response(description: str, **overrides):
    example = {**_QUEUE_EXAMPLE, **overrides}
    return OpenApiResponse(QueueSerializer, description=description, examples=[
        OpenApiExample("queue", response_only=True, value=example)])


class QueueViewSet(JobQueueViewSet):
    """Named queues: list them, pause and resume them, set their concurrency limit. Writes go
    through `django_pg_jobqueue.services` (pause_queue, resume_queue, set_queue_limit), as the admin's do."""

    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "retrieve": VIEW, "partial_update": CHANGE_QUEUE,
                       "pause": CHANGE, "resume": CHANGE}
    lookup_field = "name"
    lookup_value_regex = "[^/]+"  # a bad name reaches the view and gets a 400, not a 404

    @extend_schema(
        summary="Every queue with jobs or a setting", tags=["queues"],
        description="By name: paused or not, the concurrency limit (null: none), and its "
                    "queued (due now or later), runnable (due now) and running jobs. A queue "
                    "appears once it has a job (of any status) or a setting (it was paused, "
                    "resumed or limited).",
        responses={200: OpenApiResponse(QueueSerializer(many=True), examples=[OpenApiExample(
            "queues", response_only=True, value=[
                {"name": "default", "paused": False, "concurrency_limit": None, "queued": 3,
                 "runnable": 3, "running": 1},
                {**_QUEUE_EXAMPLE, "paused": True}])]),
            **errors(401, 403, 503)},
    )
    def list(self, request):
        return Response(QueueSerializer(selectors.queues(), many=True).data)

    @extend_schema(
        summary="One queue: its counts by status and its workers", tags=["queues"],
        parameters=[QUEUE_NAME],
        description="The list's fields, the queue's jobs counted by every status, and the live "
                    "worker processes that claim from it (those that list it, or every queue), "
                    "each with how many of its jobs it runs now. 404 for a queue that does not "
                    "exist (see pause). Its throughput: GET metrics/throughput/?queue=<name>.",
        responses={200: QueueDetailSerializer, **errors(400, 401, 403, 404, 503)},
    )
    def retrieve(self, request, name=None):
        return Response(QueueDetailSerializer(selectors.queue_detail(_queue_name(name))).data)

    @extend_schema(
        summary="Set a queue's concurrency limit", tags=["queues"], parameters=[QUEUE_NAME],
        description="At most `concurrency_limit` of the queue's jobs run at once, across every "
                    "worker process, enforced inside the claim; null removes the limit. "
                    "Workers see the change within a second. The queue must exist (see pause). "
                    "An empty body changes nothing. Needs change_queuesetting (the admin's "
                    "permission for queue settings), not change_job.",
        request=QueueUpdateSerializer,
        examples=[OpenApiExample("limit", request_only=True, value={"concurrency_limit": 2}),
                  OpenApiExample("no limit", request_only=True, value={"concurrency_limit": None})],
        responses={200: _queue_response("The queue, as it is now."),
                   **errors(400, 401, 403, 404, 503)},
    )
    def partial_update(self, request, name=None):
        name = _queue_name(name)
        serializer = QueueUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        if "concurrency_limit" in serializer.validated_data:  # an empty patch changes nothing
            services.set_queue_limit(name, serializer.validated_data["concurrency_limit"])
        return Response(QueueSerializer(selectors.queue_get(name)).data)

    @extend_schema(
        summary="Pause a queue", tags=["queues"], request=None, parameters=[QUEUE_NAME],
        description="Workers stop claiming its jobs within one poll interval; running jobs "
                    "finish. Jobs can still be enqueued. Survives restarts. Pausing a paused "
                    "queue is fine. The queue must exist: it holds jobs (of any status), a "
                    "registered handler, the Tasks backend's QUEUES or a periodic schedule "
                    "names it, or it has a setting; otherwise 404 `queue_not_found`, and "
                    "nothing is created (a typo leaves no phantom queue).",
        responses={200: _queue_response("The queue, paused.", paused=True),
                   **errors(400, 401, 403, 404, 503)},
    )
    @action(detail=True, methods=["post"])
    def pause(self, request, name=None):
        name = _queue_name(name)
        services.pause_queue(name)
        return Response(QueueSerializer(selectors.queue_get(name)).data)

    @extend_schema(
        summary="Resume a paused queue", tags=["queues"], request=None, parameters=[QUEUE_NAME],
        description="Workers claim its jobs again from their next poll. 404 for a queue that "
                    "does not exist (see pause). A queue that exists only by its setting (no "
                    "jobs, nothing names it) loses that setting once it says nothing.",
        responses={200: _queue_response("The queue, resumed."), **errors(400, 401, 403, 404, 503)},
    )
    @action(detail=True, methods=["post"])
    def resume(self, request, name=None):
        name = _queue_name(name)
        services.resume_queue(name)
        return Response(QueueSerializer(selectors.queue_get(name)).data)


class ScheduleListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Periodic jobs: each schedule and its next run", tags=["schedules"],
        operation_id="v1_schedules_list",
        description="Every entry of JOB_PERIODIC and of the @periodic decorator, by name: what "
                    "it enqueues (a job `type` with its `payload`, or a Django `task` with its "
                    "`args` and `kwargs`), its cron expression and time zone, its next run, and "
                    "the job of its latest due tick (null if that tick was not enqueued). An "
                    "invalid entry (`valid: false`) is skipped by the workers; `problems` says "
                    "why.",
        responses={200: OpenApiResponse(ScheduleSerializer(many=True), examples=[OpenApiExample(
            "schedules", response_only=True, value=[{
                "name": "nightly-report", "cron": "0 3 * * *", "timezone": "Europe/Paris",
                "type": "report_generate", "task": None, "payload": {"pages": 20}, "args": [],
                "kwargs": {}, "queue": "reports", "priority": None, "max_attempts": None,
                "timeout_seconds": None, "source": "settings", "valid": True, "problems": [],
                "paused": False,
                "next_run_at": "2026-01-02T02:00:00Z", "last_tick_at": "2026-01-01T02:00:00Z",
                "last_job": {"id": 42, "status": "succeeded",
                             "started_at": "2026-01-01T02:00:01Z",
                             "finished_at": "2026-01-01T02:00:09Z"}}])]),
            **errors(401, 403, 503)},
    )
    def get(self, request):
        return Response(ScheduleSerializer(selectors.schedules(), many=True).data)


def _schedule_row(name: str) -> dict:
    return next(row for row in selectors.schedules() if row["name"] == name)


SCHEDULE_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH,
                                 description="The schedule's name (JOB_PERIODIC key or @periodic name).")


class ScheduleRunView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = CHANGE

    @extend_schema(
        summary="Run a periodic schedule now", tags=["schedules"], request=None,
        parameters=[SCHEDULE_NAME], operation_id="v1_schedules_run_create",
        description="Enqueues the schedule's job at once (201, the job), paused or not, "
                    "whatever its cron. Each request makes one new job: two at once make two. "
                    "The job's key is `periodic:<name>:manual:<random>`, so it shows in the "
                    "schedule's ticks (`manual: true`) and in the jobs list's `schedule` "
                    "filter. 404 (`schedule_not_found`) for an unknown name; 409 "
                    "(`schedule_invalid`) for an entry with problems. Needs change_job.",
        responses={201: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    def post(self, request, name):
        job = services.run_schedule(name, actor=request.user.get_username())
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)


class SchedulePauseView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = CHANGE

    @extend_schema(
        summary="Pause a periodic schedule", tags=["schedules"], request=None,
        parameters=[SCHEDULE_NAME], operation_id="v1_schedules_pause_create",
        description="The workers enqueue none of its ticks until it is resumed (from their "
                    "next pass; one conditional write, so pausing a paused schedule is fine). "
                    "Jobs already enqueued run. Returns the schedule. Needs change_job.",
        responses={200: ScheduleSerializer, **errors(401, 403, 404, 503)},
    )
    def post(self, request, name):
        services.pause_schedule(name)
        return Response(ScheduleSerializer(_schedule_row(name)).data)


class ScheduleResumeView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = CHANGE

    @extend_schema(
        summary="Resume a paused periodic schedule", tags=["schedules"], request=None,
        parameters=[SCHEDULE_NAME], operation_id="v1_schedules_resume_create",
        description="Its ticks are enqueued again from the workers' next pass; the ticks it "
                    "missed while paused are not. Returns the schedule. Needs change_job.",
        responses={200: ScheduleSerializer, **errors(401, 403, 404, 503)},
    )
    def post(self, request, name):
        services.resume_schedule(name)
        return Response(ScheduleSerializer(_schedule_row(name)).data)


class ScheduleTicksView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="A periodic schedule's tick history", tags=["schedules"],
        parameters=[SCHEDULE_NAME, ScheduleTicksQuerySerializer],
        operation_id="v1_schedules_ticks_list",
        description="Its jobs, newest first (`limit`, default 50, at most 500): each tick's "
                    "time (null for a run-now job) and the job with its outcome. A tick whose "
                    "job was pruned is no longer listed; a tick no worker enqueued never was.",
        responses={200: ScheduleTickSerializer(many=True), **errors(400, 401, 403, 404, 503)},
    )
    def get(self, request, name):
        query = ScheduleTicksQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        ticks = selectors.schedule_ticks(name, limit=query.validated_data["limit"])
        return Response(ScheduleTickSerializer(ticks, many=True).data)


class EventFeedView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Every job's events after a cursor, oldest first", tags=["events"],
        description="Poll with `after=<next_after of the previous answer>`. Without `after`, "
                    "the latest `limit` events. Each row carries the job's type and its "
                    "current status.",
        parameters=_EVENT_PARAMS,
        responses={200: OpenApiResponse(EventPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [_EVENT_EXAMPLE], "has_more": True, "next_after": 1001})]),
            **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        page = selectors.events_feed(**_events_query(request))
        return Response(EventPageSerializer(page).data)


class JobTypeListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="The registered job types and their defaults", tags=["jobs"],
        responses={200: JobTypeSerializer(many=True), **errors(401, 403)},
    )
    def get(self, request):
        return Response(JobTypeSerializer(selectors.job_types(), many=True).data)


class MetricsView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Queue figures for dashboards", tags=["metrics"],
        description="Counts by status; queued depth by priority and queue; the oldest runnable "
                    "job's age; succeeded and failed in the last 1, 5 and 15 minutes; mean and "
                    "p95 run time and retry rate over the last 15 minutes; succeeded/failed per "
                    "minute (15 points); active worker processes with the jobs they run.",
        responses={200: MetricsSerializer, **errors(401, 403, 503)},
    )
    def get(self, request):
        return Response(MetricsSerializer(selectors.metrics()).data)


class ThroughputView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Succeeded and failed jobs per bucket, over a range", tags=["metrics"],
        operation_id="v1_metrics_throughput_retrieve",
        description="`range` 15m or 1h: per minute; 24h: per 30 minutes. Every bucket is "
                    "present (zeros too), oldest first, named by its start. `queue` and `type` "
                    "narrow it to one queue's or one type's jobs.",
        parameters=[ThroughputQuerySerializer],
        responses={200: ThroughputSerializer, **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        query = ThroughputQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(ThroughputSerializer(selectors.throughput(**query.validated_data)).data)


class HealthView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Liveness and readiness", tags=["health"], auth=[],
        description="200 when the database answers and every migration is applied; 503 "
                    "otherwise, saying which.",
        responses={200: HealthSerializer,
                   503: OpenApiResponse(HealthSerializer, description="Not ready.")},
    )
    def get(self, request):
        body = {"status": "ok", "database": "ok", "migrations": "ok"}
        try:
            pending = selectors.pending_migrations()
            if pending:
                body["migrations"] = "pending: " + ", ".join(pending)
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            body["database"] = f"unavailable: {type(exc).__name__}"
            body["migrations"] = "unknown"
        if body["database"] != "ok" or body["migrations"] != "ok":
            body["status"] = "unavailable"
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(body)


def _enforce_csrf(request) -> None:
    """Session login/logout are CSRF-protected even before there is a session."""
    SessionAuthentication().enforce_csrf(request)


class CsrfView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(summary="Set the CSRF cookie for session writes", tags=["auth"], auth=[],
                   responses={200: CsrfSerializer})
    @method_decorator(ensure_csrf_cookie)
    def get(self, request):
        return Response({"csrf_token": get_token(request)})


class LoginView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(
        summary="Log in (session)", tags=["auth"], auth=[], request=LoginSerializer,
        description="Starts a session (cookie) for the UI. Needs the CSRF cookie (GET "
                    "/api/v1/auth/csrf/) and its value in the X-CSRFToken header. Off unless "
                    "the host sets JOB_API_PASSWORD_LOGIN = True: 404 (`login_disabled`) "
                    "then; log in through the site's own login (LOGIN_URL) instead.",
        responses={200: UserSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request):
        if not conf.get().API_PASSWORD_LOGIN:
            raise NotFound("the dashboard's password login is off (JOB_API_PASSWORD_LOGIN): "
                           "log in through the site's own login page", code="login_disabled")
        _enforce_csrf(request)
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = authenticate(request._request, **serializer.validated_data)
        if user is None:
            raise ValidationError({"non_field_errors": ["invalid username or password."]})
        login(request._request, user)
        return Response(UserSerializer(user).data)


class LogoutView(JobQueueAPIView):
    permission_classes = [AllowAny]

    @extend_schema(summary="Log out (end the session)", tags=["auth"], request=None,
                   responses={204: None, **errors(403)})
    def post(self, request):
        # A session user got here past SessionAuthentication's CSRF check; a token user has
        # no session to end.
        if request.user.is_authenticated and request.auth is None:
            logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(JobQueueAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="The current user and what they may do", tags=["auth"],
                   responses={200: UserSerializer, **errors(401)})
    def get(self, request):
        return Response(UserSerializer(request.user).data)

