"""/api/v1/schedules/: the periodic schedules (JOB_PERIODIC and @periodic) with their next
runs, a schedule's tick history, and its commands: run now, pause, resume."""
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.response import Response

from .. import selectors, services
from .base import JobQueueViewSet
from .fields import STATUS_CHOICES, ISODateTimeField, JSONObjectField, StrictSerializer
from .jobs.serializers import JobSerializer
from .permissions import CHANGE, VIEW, JobPermission
from .schema import errors, extend_schema


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


SCHEDULE_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH,
                                 description="The schedule's name (JOB_PERIODIC key or @periodic name).")


def _schedule_row(name: str) -> dict:
    return next(row for row in selectors.schedules() if row["name"] == name)


# Its routes are declared in api/urls.py, one method each (their names and paths predate the
# viewset). A comment, not a docstring: drf-spectacular would publish a docstring as the
# description of every operation, and DRF's OPTIONS answer would carry it.
class ScheduleViewSet(JobQueueViewSet):
    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "ticks": VIEW, "run": CHANGE, "pause": CHANGE,
                       "resume": CHANGE}

    @property
    def job_permission(self) -> str:
        # What the route's one action needs, also for its OPTIONS (DRF's action "metadata").
        return self.job_permissions[next(iter(self.action_map.values()))]

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
    def list(self, request):
        return Response(ScheduleSerializer(selectors.schedules(), many=True).data)

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
    def run(self, request, name):
        job = services.run_schedule(name, actor=request.user.get_username())
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Pause a periodic schedule", tags=["schedules"], request=None,
        parameters=[SCHEDULE_NAME], operation_id="v1_schedules_pause_create",
        description="The workers enqueue none of its ticks until it is resumed (from their "
                    "next pass; one conditional write, so pausing a paused schedule is fine). "
                    "Jobs already enqueued run. Returns the schedule. Needs change_job.",
        responses={200: ScheduleSerializer, **errors(401, 403, 404, 503)},
    )
    def pause(self, request, name):
        services.pause_schedule(name, actor=request.user.get_username())
        return Response(ScheduleSerializer(_schedule_row(name)).data)

    @extend_schema(
        summary="Resume a paused periodic schedule", tags=["schedules"], request=None,
        parameters=[SCHEDULE_NAME], operation_id="v1_schedules_resume_create",
        description="Its ticks are enqueued again from the workers' next pass; the ticks it "
                    "missed while paused are not. Returns the schedule. Needs change_job.",
        responses={200: ScheduleSerializer, **errors(401, 403, 404, 503)},
    )
    def resume(self, request, name):
        services.resume_schedule(name, actor=request.user.get_username())
        return Response(ScheduleSerializer(_schedule_row(name)).data)

    @extend_schema(
        summary="A periodic schedule's tick history", tags=["schedules"],
        parameters=[SCHEDULE_NAME, ScheduleTicksQuerySerializer],
        operation_id="v1_schedules_ticks_list",
        description="Its jobs, newest first (`limit`, default 50, at most 500): each tick's "
                    "time (null for a run-now job) and the job with its outcome. A tick whose "
                    "job was pruned is no longer listed; a tick no worker enqueued never was.",
        responses={200: ScheduleTickSerializer(many=True), **errors(400, 401, 403, 404, 503)},
    )
    def ticks(self, request, name):
        query = ScheduleTicksQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        ticks = selectors.schedule_ticks(name, limit=query.validated_data["limit"])
        return Response(ScheduleTickSerializer(ticks, many=True).data)
