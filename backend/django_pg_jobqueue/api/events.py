"""GET /api/v1/events/: every job's events after a cursor (and the shapes of an event and of
a page of them, which a job's own events, GET jobs/{id}/events/, share)."""
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.response import Response

from .. import selectors
from ..models import JobEvent
from .base import JobQueueAPIView
from .fields import EVENT_KIND_CHOICES, STATUS_CHOICES, JobQueueModelSerializer, JSONObjectField
from .permissions import VIEW, JobPermission
from .schema import errors, extend_schema
from .shared_fields import SharedFieldsMixin


class EventSerializer(SharedFieldsMixin, JobQueueModelSerializer):
    """One event; `job_type` and `job_status` (the job's status now) save the UI a lookup."""

    job_id = serializers.IntegerField()
    job_type = serializers.CharField(source="job.type")
    job_status = serializers.ChoiceField(source="job.status", choices=STATUS_CHOICES)
    kind = serializers.ChoiceField(choices=EVENT_KIND_CHOICES)
    data = JSONObjectField()

    class Meta:
        model = JobEvent
        fields = ["id", "job_id", "job_type", "job_status", "kind", "attempt", "worker_id",
                  "message", "data", "created_at"]
        read_only_fields = fields


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    has_more = serializers.BooleanField(help_text="More events follow: poll again at once.")
    next_after = serializers.IntegerField(allow_null=True,
                                          help_text="Pass as `after` in the next poll.")


class EventFeedQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1,
                                     help_text="An event id: only later events. Omit to start from the latest.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100,
                                     help_text="At most this many events (1..500, default 100).")


# The event that ends an attempt carries its start (the claim writes no event of its own):
# data.started_at, data.wait_seconds (due -> started), data.lease_token; worker_id ran it.
EVENT_EXAMPLE = {
    "id": 1001, "job_id": 42, "job_type": "email_send", "job_status": "succeeded",
    "kind": "succeeded", "attempt": 1, "worker_id": "host-4242-0", "message": "",
    "data": {"lease_token": "0b7c5b1e-4f7e-4a57-9d0e-2f1c3f1a9c11", "run_seconds": 0.012,
             "started_at": "2026-01-01T12:00:01.250000+00:00", "wait_seconds": 0.25},
    "created_at": "2026-01-01T12:00:01Z",
}


def events_query(request) -> dict:
    query = EventFeedQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


EVENT_PARAMS = [
    OpenApiParameter("after", {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                     description="An event id: return only later events (the cursor). Omit it "
                                 "to start from the latest events."),
    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
                     description="At most this many events."),
]


class EventFeedView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Every job's events after a cursor, oldest first", tags=["events"],
        description="Poll with `after=<next_after of the previous answer>`. Without `after`, "
                    "the latest `limit` events. Each row carries the job's type and its "
                    "current status. A job's start is no event of its own: the event that "
                    "ends an attempt carries it (`data.started_at`, `data.wait_seconds`, "
                    "`data.lease_token`, and `worker_id`, the worker that ran it); history "
                    "written before keeps its `claimed` events.",
        parameters=EVENT_PARAMS,
        responses={200: OpenApiResponse(EventPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [EVENT_EXAMPLE], "has_more": True, "next_after": 1001})]),
            **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        page = selectors.events_feed(**events_query(request))
        return Response(EventPageSerializer(page).data)
