"""/api/v1/queues/: list named queues, one queue's page, pause, resume, the concurrency
limit, fair shares and priority aging; the queue's shapes beside them."""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from .. import conf, db, merged, selectors, services, shards
from ..arguments import check_fairness_weights
from ..exceptions import InvalidJobArgument
from .base import JobQueueViewSet
from .fields import ISODateTimeField, StrictSerializer, queue_name_field
from .metrics import _CountsByStatus
from .permissions import CHANGE, CHANGE_QUEUE, VIEW, JobPermission
from .schema import QUEUE_NAME, errors, extend_schema
from .shards import with_down_header

MAX_CONCURRENCY_LIMIT = 2**31 - 1  # the column is a PostgreSQL integer


class QueueSerializer(serializers.Serializer):
    """A named queue: its setting (pause, concurrency limit) and its live jobs."""

    name = serializers.CharField()
    paused = serializers.BooleanField(help_text="Workers claim nothing from a paused queue.")
    concurrency_limit = serializers.IntegerField(
        allow_null=True, help_text="At most this many of its jobs run at once across every "
                                   "worker (null: no limit).")
    fair = serializers.BooleanField(help_text="Claims take its jobs round-robin across their "
                                              "fairness keys (docs/how-to/fairness.md).")
    aging_seconds = serializers.FloatField(
        allow_null=True, help_text="A queued job counts one priority higher per this many "
                                   "seconds it has been due (null: no aging).")
    aging_max_priority = serializers.IntegerField(
        allow_null=True, help_text="The highest priority aging raises a job to (null: 100).")
    fairness_weights = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Turns per round of each weighted fairness key (a key as stored, or a "
                  "prefix ending in `*`) in a fair queue; a key not named takes 1.")
    queued = serializers.IntegerField(help_text="Queued jobs, due now or later.")
    runnable = serializers.IntegerField(help_text="Queued jobs that are due now.")
    running = serializers.IntegerField()


class QueueNameSerializer(serializers.Serializer):
    name = queue_name_field()


class QueueUpdateSerializer(StrictSerializer):
    concurrency_limit = serializers.IntegerField(
        min_value=1, max_value=MAX_CONCURRENCY_LIMIT, allow_null=True,
        help_text="At most this many of the queue's jobs run at once across every worker; "
                  "null removes the limit.")
    fair = serializers.BooleanField(
        help_text="True: claims take the queue's jobs round-robin across their fairness keys.")
    aging_seconds = serializers.FloatField(
        allow_null=True, help_text="Raise a queued job's effective priority by one per this "
                                   "many seconds it has been due (above 0, at most a day); "
                                   "null turns aging off. Sets aging_max_priority with it.")
    aging_max_priority = serializers.IntegerField(
        allow_null=True, help_text="The cap of aging (-100 to 100; null or left out: 100). "
                                   "Needs aging_seconds.")
    fairness_weights = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        help_text="Turns per round (1 to 100) of each fairness key named (a key as stored, or "
                  "a prefix ending in `*`: a key's own name counts first, then the longest "
                  "prefix it starts with; else 1); null removes the key's weight; keys not "
                  "named keep theirs.")

    def validate_fairness_weights(self, value):
        # The service's own check (arguments.py), run before any of the body is written.
        try:
            return check_fairness_weights(value)
        except InvalidJobArgument as exc:
            raise serializers.ValidationError(exc.detail) from exc


class _QueueWorker(serializers.Serializer):
    id = serializers.CharField()
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    threads = serializers.IntegerField()
    queues = serializers.ListField(child=serializers.CharField(),
                                   help_text='The queues it claims from ("*": every queue).')
    all_queues = serializers.BooleanField(help_text="It claims from every queue.")
    heartbeat_at = ISODateTimeField()
    running_here = serializers.IntegerField(help_text="This queue's jobs it runs now.")


class QueueDetailSerializer(QueueSerializer):
    """One queue for its page: the list's fields, every status's count, and its workers."""

    counts_by_status = _CountsByStatus(help_text="The queue's jobs by status.")
    workers = _QueueWorker(many=True, help_text=(
        "Live worker processes (a heartbeat in the last 15 s) that claim from this queue."))


def _queue_name(value) -> str:
    """The queue name from the URL, validated like a job's `queue` field (400 otherwise)."""
    serializer = QueueNameSerializer(data={"name": value})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data["name"]


_QUEUE_EXAMPLE = {"name": "reports", "paused": False, "concurrency_limit": 2, "fair": False,
                  "aging_seconds": None, "aging_max_priority": None, "fairness_weights": {},
                  "queued": 120,
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

    def dispatch(self, request, *args, **kwargs):
        # With JOB_SHARDS, one queue's routes (its page, pause, resume, settings) read and
        # write the database that holds it (its shard's, else JOB_DATABASE).
        if not conf.get().SHARDS or "name" not in kwargs:
            return super().dispatch(request, *args, **kwargs)
        with db.on_database(shards.alias_for_queue(kwargs["name"])):
            return super().dispatch(request, *args, **kwargs)

    @extend_schema(
        summary="Every queue with jobs or a setting", tags=["queues"],
        description="By name: paused or not, the concurrency limit (null: none), and its "
                    "queued (due now or later), runnable (due now) and running jobs. A queue "
                    "appears once it has a job (of any status) or a setting (it was paused, "
                    "resumed or limited). With JOB_SHARDS, every database's queues (a queue "
                    "found in two, while it moves, has its counts summed); the "
                    "X-Job-Shards-Down header names any database that did not answer.",
        responses={200: OpenApiResponse(QueueSerializer(many=True), examples=[OpenApiExample(
            "queues", response_only=True, value=[
                {"name": "default", "paused": False, "concurrency_limit": None, "fair": True,
                 "aging_seconds": 30.0, "aging_max_priority": None,
                 "fairness_weights": {"tenant:big": 4}, "queued": 3,
                 "runnable": 3, "running": 1},
                {**_QUEUE_EXAMPLE, "paused": True}])]),
            **errors(401, 403, 503)},
    )
    def list(self, request):
        if conf.get().SHARDS:
            rows, answers = merged.queues()
            return with_down_header(Response(QueueSerializer(rows, many=True).data), answers)
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
        summary="Set a queue's concurrency limit, fair shares and aging", tags=["queues"],
        parameters=[QUEUE_NAME],
        description="At most `concurrency_limit` of the queue's jobs run at once, across every "
                    "worker process, enforced inside the claim; null removes the limit. "
                    "`fair`: claims take turns by fairness key; `aging_seconds` and "
                    "`aging_max_priority`: priority aging; `fairness_weights`: the turns per "
                    "round of the keys named (docs/how-to/fairness.md); a bad "
                    "value is a 400 naming the field, and nothing changes. "
                    "Workers see the change within a second. The queue must exist (see pause). "
                    "An empty body changes nothing. Needs change_queuesetting (the admin's "
                    "permission for queue settings), not change_job.",
        request=QueueUpdateSerializer,
        examples=[OpenApiExample("limit", request_only=True, value={"concurrency_limit": 2}),
                  OpenApiExample("no limit", request_only=True, value={"concurrency_limit": None}),
                  OpenApiExample("fair, aging", request_only=True,
                                 value={"fair": True, "aging_seconds": 30}),
                  OpenApiExample("weights", request_only=True,
                                 value={"fair": True,
                                        "fairness_weights": {"tenant:big": 4, "tenant:*": 2}})],
        responses={200: _queue_response("The queue, as it is now."),
                   **errors(400, 401, 403, 404, 503)},
    )
    def partial_update(self, request, name=None):
        name = _queue_name(name)
        serializer = QueueUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data, actor = serializer.validated_data, request.user.get_username()
        # An empty patch changes nothing. Aging first: the one the service may refuse (the
        # weights are checked with the body), so that a refused body changes nothing.
        if "aging_seconds" in data or "aging_max_priority" in data:
            services.set_queue_aging(name, data.get("aging_seconds"),
                                     aging_max_priority=data.get("aging_max_priority"),
                                     actor=actor)
        if "fairness_weights" in data:
            services.set_fairness_weights(name, data["fairness_weights"], actor=actor)
        if "concurrency_limit" in data:
            services.set_queue_limit(name, data["concurrency_limit"], actor=actor)
        if "fair" in data:
            services.set_queue_fairness(name, data["fair"], actor=actor)
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
        services.pause_queue(name, actor=request.user.get_username())
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
        services.resume_queue(name, actor=request.user.get_username())
        return Response(QueueSerializer(selectors.queue_get(name)).data)
