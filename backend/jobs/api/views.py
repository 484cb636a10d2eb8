"""API views. Each validates, calls one service or selector, and serializes; the exception
handler (api/exceptions.py) turns domain errors into 404/409/400/503."""
from django.contrib.auth import authenticate, login, logout
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import (
    OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from django_filters.rest_framework import DjangoFilterBackend

from .. import conf, selectors, services
from ..exceptions import JobNotFound
from .exceptions import QueueFull
from .filters import JobFilter
from .permissions import ADD, CHANGE, VIEW, JobPermission
from .schema import IDEMPOTENCY_KEY, JOB_ID, REPLAY, RETRY_AFTER, errors
from .serializers import (
    BulkCreatedSerializer, CsrfSerializer, EventFeedQuerySerializer, EventPageSerializer,
    HealthSerializer, JobBulkCreateSerializer, JobCreateSerializer, JobDetailSerializer,
    JobSerializer, JobTypeSerializer, LoginSerializer, MetricsSerializer, UserSerializer,
)
from .throttles import JobCreateThrottle, LoginThrottle

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
    "cancel_requested_at": None, "is_finished": False,
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
    header = request.headers.get("Idempotency-Key")
    if header is None:
        return body_key
    if not header.strip() or len(header) > 255:
        raise ValidationError({"Idempotency-Key": ["must be 1 to 255 characters."]})
    if body_key is not None and body_key != header:
        raise ValidationError({"idempotency_key": ["differs from the Idempotency-Key header."]})
    return header


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
class JobViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "retrieve": VIEW, "events": VIEW,
                       "create": ADD, "bulk": ADD, "cancel": CHANGE, "retry": CHANGE}
    serializer_class = JobSerializer
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = JobFilter
    ordering_fields = ["id", "created_at", "updated_at", "available_at", "finished_at",
                       "priority", "attempts", "status", "type", "queue"]
    ordering = ["-id"]
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.job_list()

    def get_throttles(self):
        if self.action in ("create", "bulk"):
            return [JobCreateThrottle()]
        return super().get_throttles()

    def retrieve(self, request, pk=None):
        detail = selectors.job_detail(_job_id(pk))
        detail.job.latest_events = detail.events
        return Response(JobDetailSerializer(detail.job).data)

    @extend_schema(
        summary="Enqueue a job", tags=["jobs"],
        description="Only `type` is required; the type's defaults fill the rest "
                    "(see /api/v1/job-types/). 201: created. 200: an idempotent replay (the "
                    "same key and the same request before): the original job, with "
                    "`X-Idempotency-Replay: true`.",
        request=JobCreateSerializer, parameters=[IDEMPOTENCY_KEY, REPLAY, RETRY_AFTER],
        examples=[_CREATE_EXAMPLE],
        responses={
            201: OpenApiResponse(JobSerializer, description="Created.", examples=[
                OpenApiExample("created", value=_JOB_EXAMPLE, response_only=True, status_codes=[201])]),
            200: OpenApiResponse(JobSerializer, description="Idempotent replay: the job the first "
                                 "request with this key created (as it is now).", examples=[
                OpenApiExample("replay", value=_JOB_EXAMPLE, response_only=True, status_codes=[200])]),
            **errors(400, 401, 403, 409, 413, 429, 503),
        },
    )
    def create(self, request):
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        options = serializer.enqueue_options()
        options["idempotency_key"] = _idempotency_key(request, options["idempotency_key"])
        key = options["idempotency_key"]
        _check_backpressure(1, [key] if key else [])
        try:
            job, created = services.enqueue_job(**options)
        except ValueError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from None
        if created:
            return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)
        return Response(JobSerializer(job).data, status=status.HTTP_200_OK,
                        headers={"X-Idempotency-Replay": "true"})

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
        _check_backpressure(len(items), [i["idempotency_key"] for i in items if "idempotency_key" in i])
        try:
            jobs = services.enqueue_many(items)
        except ValueError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from None
        return Response({"count": len(jobs), "jobs": JobSerializer(jobs, many=True).data},
                        status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel a job", tags=["jobs"], request=None, parameters=[JOB_ID],
        description="A queued job is cancelled at once; a running one is asked to stop "
                    "(`cancel_requested_at`) and ends cancelled when its handler stops. "
                    "409 when it already finished.",
        responses={200: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = services.cancel(_job_id(pk), actor=request.user.get_username())
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="Retry a failed or cancelled job", tags=["jobs"], request=None, parameters=[JOB_ID],
        description="Back to queued, runnable now; attempts already spent stay counted (one more "
                    "is allowed if none is left). 409 for any other status.",
        responses={200: JobSerializer, **errors(401, 403, 404, 409, 503)},
    )
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        job = services.retry(_job_id(pk), actor=request.user.get_username())
        return Response(JobSerializer(job).data)

    @extend_schema(
        summary="A job's events after a cursor, oldest first", tags=["events"],
        parameters=[JOB_ID, *_EVENT_PARAMS],
        responses={200: OpenApiResponse(EventPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [_EVENT_EXAMPLE], "has_more": False, "next_after": 1001})]),
            **errors(400, 401, 403, 404, 503)},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request, pk=None):
        query = _events_query(request)
        job = selectors.job_get(_job_id(pk))
        page = selectors.events_feed(job_id=job.pk, **query)
        return Response(EventPageSerializer(page).data)


class EventFeedView(APIView):
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


class JobTypeListView(APIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="The registered job types and their defaults", tags=["jobs"],
        responses={200: JobTypeSerializer(many=True), **errors(401, 403)},
    )
    def get(self, request):
        return Response(JobTypeSerializer(selectors.job_types(), many=True).data)


class MetricsView(APIView):
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


class HealthView(APIView):
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
            with connection.cursor() as cur:
                cur.execute("SELECT 1")
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            if pending:
                body["migrations"] = "pending: " + ", ".join(
                    f"{m.app_label}.{m.name}" for m, _ in pending)
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


class CsrfView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(summary="Set the CSRF cookie for session writes", tags=["auth"], auth=[],
                   responses={200: CsrfSerializer})
    @method_decorator(ensure_csrf_cookie)
    def get(self, request):
        return Response({"csrf_token": get_token(request)})


class LoginView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(
        summary="Log in (session)", tags=["auth"], auth=[], request=LoginSerializer,
        description="Starts a session (cookie) for the UI. Needs the CSRF cookie (GET "
                    "/api/v1/auth/csrf/) and its value in the X-CSRFToken header.",
        responses={200: UserSerializer, **errors(400, 403, 429)},
    )
    def post(self, request):
        _enforce_csrf(request)
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = authenticate(request._request, **serializer.validated_data)
        if user is None:
            raise ValidationError({"non_field_errors": ["invalid username or password."]})
        login(request._request, user)
        return Response(UserSerializer(user).data)


class LogoutView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(summary="Log out (end the session)", tags=["auth"], request=None,
                   responses={204: None, **errors(403)})
    def post(self, request):
        # A session user got here past SessionAuthentication's CSRF check; a token user has
        # no session to end.
        if request.user.is_authenticated and request.auth is None:
            logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="The current user and what they may do", tags=["auth"],
                   responses={200: UserSerializer, **errors(401)})
    def get(self, request):
        return Response(UserSerializer(request.user).data)

