"""/api/v1/batches/{id}/: a batch's progress (its members counted by outcome, its callbacks),
and its cancel; the batch's shape beside them. Batches are created from Python
(`enqueue_batch`); the members are jobs (`GET jobs/?batch=<id>`)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from .. import selectors, services
from ..states import BATCH_CALLBACKS
from .base import JobQueueViewSet
from .fields import ISODateTimeField
from .permissions import CHANGE, VIEW, JobPermission
from .schema import errors, extend_schema

BATCH_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH,
                            description="The batch id; one that is not a positive integer is "
                                        "a 404.")


class BatchSerializer(serializers.Serializer):
    """A batch's progress: its members counted by outcome, and its callbacks."""

    id = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Its members (the jobs its enqueue created).")
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="Members that failed for good.")
    cancelled = serializers.IntegerField()
    done = serializers.IntegerField(help_text="Finished members: succeeded + failed + cancelled.")
    running = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Members not started yet: queued or waiting.")
    finished = serializers.BooleanField(help_text=(
        "Every member finished and the callbacks were enqueued (exactly once). The counts "
        "are then those of that moment; a member retried later does not change them."))
    created_at = ISODateTimeField()
    finished_at = ISODateTimeField(allow_null=True)
    cancelled_at = ISODateTimeField(allow_null=True, help_text=(
        "When the batch was cancelled (its pending members cancelled), or null."))
    callbacks = serializers.ListField(
        child=serializers.ChoiceField(choices=list(BATCH_CALLBACKS)),
        help_text="The callbacks the batch has.")
    callback_jobs = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Once finished: the job id of each callback enqueued, by name.")
    pass_results = serializers.BooleanField(
        help_text="Whether the callbacks are given the members' results.")


_BATCH_EXAMPLE = {
    "id": 7, "total": 1000, "succeeded": 640, "failed": 1, "cancelled": 0, "done": 641,
    "running": 12, "pending": 347, "finished": False, "created_at": "2026-12-05T03:00:00Z",
    "finished_at": None, "cancelled_at": None, "callbacks": ["on_complete", "on_failure"],
    "callback_jobs": {}, "pass_results": False}


class BatchViewSet(JobQueueViewSet):
    """A batch's progress and its cancel: `selectors.batch_progress`, `services.cancel_batch`."""

    permission_classes = [JobPermission]
    job_permissions = {"retrieve": VIEW, "cancel": CHANGE}
    lookup_field = "id"  # the path's parameter, as jobs/{id}/ (a malformed id: the view's 404)
    lookup_value_regex = "[^/]+"

    @extend_schema(
        summary="A batch's progress", tags=["batches"], parameters=[BATCH_ID],
        description="Its members counted by outcome (succeeded, failed, cancelled, done) and "
                    "by what is left (running, pending), read from the members while it runs; "
                    "whether it finished, and then the callbacks it enqueued. Its members: "
                    "GET jobs/?batch=<id>.",
        responses={200: OpenApiResponse(BatchSerializer, examples=[OpenApiExample(
            "batch", response_only=True, value=_BATCH_EXAMPLE)]),
            **errors(401, 403, 404, 503)},
    )
    def retrieve(self, request, id=None):
        return Response(BatchSerializer(selectors.batch_progress(id)).data)

    @extend_schema(
        summary="Cancel a batch", tags=["batches"], request=None, parameters=[BATCH_ID],
        description="Its pending members (queued or waiting) are cancelled at once, with the "
                    "jobs that wait for them; running members go on (cancel them one by one "
                    "to stop them). Once those finish, the batch finishes with on_failure and "
                    "on_complete. Cancelling a finished or cancelled batch changes nothing.",
        responses={200: OpenApiResponse(BatchSerializer, description="The batch, as it is now."),
                   **errors(401, 403, 404, 503)},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, id=None):
        services.cancel_batch(id, actor=request.user.get_username())
        return Response(BatchSerializer(selectors.batch_progress(id)).data)
