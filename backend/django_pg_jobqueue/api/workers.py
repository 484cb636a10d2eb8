"""GET /api/v1/workers/: every worker process, alive or lost, with what its threads run (the
dashboard's workers page). Read-only; the view permission, like the job list.

A host's overrides of its queues (services/worker_overrides.py): GET workers/overrides/ lists
them (view permission); PUT and DELETE workers/hosts/{hostname}/queues/{queue}/ set and remove
one (change_queuesetting, as a queue's limit)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.response import Response

from .. import conf, merged, selectors, services
from .base import JobQueueAPIView
from .fields import ISODateTimeField, StrictSerializer
from .permissions import CHANGE_QUEUE, VIEW, JobPermission
from .schema import errors, extend_schema
from .shards import with_down_header


class WorkerJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    queue = serializers.CharField()
    worker_id = serializers.CharField(help_text="The executor thread running it (host-pid-n).")
    started_at = ISODateTimeField(allow_null=True)
    progress_percent = serializers.IntegerField(allow_null=True)


class WorkerSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="host-pid")
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    supervisor_pid = serializers.IntegerField(
        allow_null=True, help_text="The `run_job_workers --processes` supervisor that started "
                                   "it; null: an unsupervised process.")
    threads = serializers.IntegerField()
    queues = serializers.ListField(child=serializers.CharField())
    state = serializers.ChoiceField(
        choices=["alive", "lost"],
        help_text="lost: silent for more than two of its heartbeat intervals; shown until the "
                  "reaper has requeued the jobs it held.")
    started_at = ISODateTimeField()
    heartbeat_at = ISODateTimeField(help_text="Its last heartbeat: when it was last seen.")
    heartbeat_age_seconds = serializers.FloatField()
    heartbeat_interval_seconds = serializers.FloatField()
    lost_in_seconds = serializers.FloatField(help_text=(
        "Seconds until it is lost if it beats no more (0: lost); a page that asks again then "
        "sees a dead process as soon as the server calls it lost."))
    rss_bytes = serializers.IntegerField(allow_null=True, help_text="Resident memory.")
    jobs_done = serializers.IntegerField(help_text=(
        "Attempts its threads finished since it started (succeeded, retry scheduled, failed "
        "or cancelled); not those still running or whose lease was lost."))
    stuck_handlers = serializers.IntegerField(
        help_text="Handlers running past their timeout plus JOB_TIMEOUT_GRACE_SECONDS now.")
    running_jobs = WorkerJobSerializer(many=True, help_text="What its threads run (a lost "
                                                            "process's: what it held).")
    shard = serializers.CharField(required=False, help_text=(
        "With JOB_SHARDS only: the alias of the database it works (JOB_DATABASE's or a "
        "shard's)."))


class WorkerListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Worker processes, alive or lost, and what each runs", tags=["workers"],
        operation_id="v1_workers_list",
        description="With JOB_SHARDS, the processes of every database, each naming its "
                    "`shard`; the X-Job-Shards-Down header names any database that did not "
                    "answer.",
        responses={200: OpenApiResponse(WorkerSerializer(many=True), examples=[OpenApiExample(
            "workers", response_only=True, value=[{
                "id": "vm-1-4242", "hostname": "vm-1", "pid": 4242, "supervisor_pid": 4240,
                "threads": 4, "queues": ["*"], "state": "alive",
                "started_at": "2026-01-01T02:00:00Z", "heartbeat_at": "2026-01-01T02:10:00Z",
                "heartbeat_age_seconds": 0.8, "heartbeat_interval_seconds": 2.0,
                "lost_in_seconds": 3.2,
                "rss_bytes": 73400320, "jobs_done": 1200, "stuck_handlers": 0,
                "running_jobs": [{"id": 42, "type": "send_email", "queue": "default",
                                  "worker_id": "vm-1-4242-3",
                                  "started_at": "2026-01-01T02:09:58Z",
                                  "progress_percent": None}]}])]),
            **errors(401, 403, 503)},
    )
    def get(self, request):
        if conf.get().SHARDS:
            rows, answers = merged.workers()
            return with_down_header(Response(WorkerSerializer(rows, many=True).data), answers)
        return Response(WorkerSerializer(selectors.worker_processes(), many=True).data)


class LostWorkerSerializer(serializers.Serializer):
    """A worker process that went silent and was forgotten once its jobs were taken back."""

    worker_id = serializers.CharField(help_text="host-pid, as it was listed while alive.")
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    supervisor_pid = serializers.IntegerField(allow_null=True)
    threads = serializers.IntegerField()
    started_at = ISODateTimeField()
    last_heartbeat_at = ISODateTimeField(help_text="Its last heartbeat: when it was last seen.")
    forgotten_at = ISODateTimeField(help_text=(
        "When it left the list of workers: the reaper had taken back every job it held."))
    jobs_done = serializers.IntegerField(help_text="Attempts its threads finished before.")
    jobs_requeued = serializers.IntegerField(help_text=(
        "Jobs it held that the reaper put back in the queue once their leases expired."))
    jobs_failed = serializers.IntegerField(help_text=(
        "Jobs it held that the reaper failed for good (no attempt left)."))


class LostWorkerListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Worker processes lost in the last day, newest first", tags=["workers"],
        operation_id="v1_workers_lost_list",
        description="A process that stops beating is listed by GET workers/ as lost until the "
                    "reaper has taken back the jobs it held; then it moves here, with when it "
                    "was last seen, when it was forgotten and how many of its jobs were "
                    "requeued or failed. Kept for a day; at most the latest "
                    f"{selectors.LOST_WORKERS_LISTED}.",
        responses={200: OpenApiResponse(LostWorkerSerializer(many=True), examples=[
            OpenApiExample("lost", response_only=True, value=[{
                "worker_id": "vm-1-4242", "hostname": "vm-1", "pid": 4242,
                "supervisor_pid": None, "threads": 4, "started_at": "2026-01-01T01:00:00Z",
                "last_heartbeat_at": "2026-01-01T02:10:00Z",
                "forgotten_at": "2026-01-01T02:10:40Z", "jobs_done": 1200,
                "jobs_requeued": 3, "jobs_failed": 1}])]),
            **errors(401, 403, 503)},
    )
    def get(self, request):
        return Response(LostWorkerSerializer(selectors.lost_workers(), many=True).data)


class WorkerOverrideSerializer(serializers.Serializer):
    """A host's override of how it runs one queue."""

    hostname = serializers.CharField(help_text="The host, as its workers report it.")
    queue = serializers.CharField()
    threads = serializers.IntegerField(
        allow_null=True, help_text="At most this many of the host's threads (in each of its "
                                   "worker processes) run the queue's jobs at once; 0: none; "
                                   "null: as its command line says.")
    stopped = serializers.BooleanField(help_text="The host claims none of the queue's jobs; "
                                                 "running ones finish.")
    actor = serializers.CharField(help_text="Who set it last.")
    updated_at = ISODateTimeField()


class WorkerOverrideSetSerializer(StrictSerializer):
    """A host's override of a queue: threads, stopped, or both (one of them says something)."""

    threads = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="0 to 10000: at most this many of the host's threads (in each of its worker "
                  "processes) run the queue's jobs at once; null or left out: as its command "
                  "line says.")
    stopped = serializers.BooleanField(
        required=False, default=False,
        help_text="True: the host claims none of the queue's jobs (running ones finish).")


_OVERRIDE_EXAMPLE = {"hostname": "vm-1", "queue": "reports", "threads": 1, "stopped": False,
                     "actor": "ops", "updated_at": "2026-01-01T02:10:00Z"}
_HOST_AND_QUEUE = [
    OpenApiParameter("hostname", OpenApiTypes.STR, OpenApiParameter.PATH,
                     description="The host, as the workers list names it."),
    OpenApiParameter("queue", OpenApiTypes.STR, OpenApiParameter.PATH,
                     description="The queue's name."),
]


class WorkerOverrideListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Every host's overrides of its queues", tags=["workers"],
        operation_id="v1_workers_overrides_list",
        responses={200: OpenApiResponse(WorkerOverrideSerializer(many=True), examples=[
            OpenApiExample("overrides", response_only=True, value=[_OVERRIDE_EXAMPLE])]),
            **errors(401, 403, 503)},
    )
    def get(self, request):
        return Response(WorkerOverrideSerializer(selectors.worker_overrides(), many=True).data)


class WorkerOverrideView(JobQueueAPIView):
    """One host's override of one queue: PUT sets it, DELETE removes it."""

    permission_classes = [JobPermission]
    job_permission = CHANGE_QUEUE

    @extend_schema(
        summary="Set a host's threads for a queue, or stop the queue on that host",
        tags=["workers"], operation_id="v1_workers_override_set", parameters=_HOST_AND_QUEUE,
        description="Replaces the host's override of the queue. Its worker processes read it "
                    "after each lease renewal pass (every min(lease / 3, 2 s)) and follow "
                    "from their next claim: running jobs finish. 400 names a bad field "
                    "(`threads` out of 0..10000, both `threads` null and `stopped` false: "
                    "DELETE removes an override); 404 `queue_not_found` for a queue that does "
                    "not exist, `host_not_found` for a host no live worker reports and with no "
                    "override. Setting the same again changes nothing. Needs "
                    "change_queuesetting.",
        request=WorkerOverrideSetSerializer,
        examples=[OpenApiExample("one thread", request_only=True, value={"threads": 1}),
                  OpenApiExample("stopped", request_only=True, value={"stopped": True})],
        responses={200: OpenApiResponse(WorkerOverrideSerializer, examples=[
            OpenApiExample("override", response_only=True, value=_OVERRIDE_EXAMPLE)]),
            **errors(400, 401, 403, 404, 503)},
    )
    def put(self, request, hostname, queue):
        serializer = WorkerOverrideSetSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = services.set_worker_override(queue, hostname, **serializer.validated_data,
                                           actor=request.user.get_username())
        return Response(WorkerOverrideSerializer(row).data)

    @extend_schema(
        summary="Remove a host's override of a queue", tags=["workers"],
        operation_id="v1_workers_override_remove", parameters=_HOST_AND_QUEUE, request=None,
        description="The host runs the queue as its command line says again, within one "
                    "renewal pass. Removing an override that does not exist is fine (204 "
                    "too). Needs change_queuesetting.",
        responses={204: None, **errors(400, 401, 403, 503)},
    )
    def delete(self, request, hostname, queue):
        services.remove_worker_override(queue, hostname, actor=request.user.get_username())
        return Response(status=204)
