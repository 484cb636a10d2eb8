"""GET /api/v1/events/: every job's events after a cursor, from every database of JOB_SHARDS
(merged.events_feed); and the shapes of an event and of a page of them, which a job's own
events, GET jobs/{id}/events/, share."""
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from .. import keyset, merged
from ..models import JobEvent
from .base import JobQueueAPIView
from .fields import EVENT_KIND_CHOICES, STATUS_CHOICES, JobQueueModelSerializer, JSONObjectField
from .permissions import VIEW, JobPermission
from .schema import errors, extend_schema
from .shards import OmitNullShardsMixin, ShardStateSerializer
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


class FeedEventSerializer(EventSerializer):
    """One event of the feed of every job: its `shard` with it, since event ids are unique
    within one database only (`shard` and `id` name an event; a job's id names its shard)."""

    shard = serializers.CharField(help_text=(
        "The alias of the database that holds the event: JOB_DATABASE's, or a shard's of "
        "JOB_SHARDS."))

    class Meta(EventSerializer.Meta):
        fields = [*EventSerializer.Meta.fields, "shard"]
        read_only_fields = fields


class FeedPageSerializer(OmitNullShardsMixin, serializers.Serializer):
    results = FeedEventSerializer(many=True)
    has_more = serializers.BooleanField(help_text="More events follow: poll again at once.")
    next_after = serializers.IntegerField(allow_null=True, help_text=(
        "JOB_DATABASE's cursor, an event id: pass it as `after` to follow JOB_DATABASE's "
        "events alone, as before shards (null: none of its events read yet)."))
    next_cursor = serializers.CharField(help_text=(
        "Pass as `cursor` in the next poll: every database's position (opaque)."))
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "With JOB_SHARDS only: each database and whether it answered; the events of one that "
        "did not come in a later poll, none skipped."))


class EventFeedQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1,
                                     help_text="An event id: only later events. Omit to start from the latest.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100,
                                     help_text="At most this many events (1..500, default 100).")


class FeedQuerySerializer(EventFeedQuerySerializer):
    cursor = serializers.CharField(required=False, max_length=8000, help_text=(
        "The `next_cursor` of the previous answer: only later events, of every database."))

    def validate(self, attrs):
        if "cursor" in attrs and "after" in attrs:
            raise serializers.ValidationError({"cursor": [
                "give cursor (every database's position) or after (an event id of "
                "JOB_DATABASE), not both."]})
        return attrs


# The event that ends an attempt carries its start (the claim writes no event of its own):
# data.started_at, data.wait_seconds (due -> started), data.lease_token; worker_id ran it.
EVENT_EXAMPLE = {
    "id": 1001, "job_id": 42, "job_type": "email_send", "job_status": "succeeded",
    "kind": "succeeded", "attempt": 1, "worker_id": "host-4242-0", "message": "",
    "data": {"lease_token": "0b7c5b1e-4f7e-4a57-9d0e-2f1c3f1a9c11", "run_seconds": 0.012,
             "started_at": "2026-01-01T12:00:01.250000+00:00", "wait_seconds": 0.25},
    "created_at": "2026-01-01T12:00:01Z",
}
FEED_CURSOR_EXAMPLE = keyset.encode_feed({"default": (7301, 1001)})


def events_query(request) -> dict:
    query = EventFeedQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


LIMIT_PARAM = OpenApiParameter(
    "limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
    description="At most this many events.")
EVENT_PARAMS = [
    OpenApiParameter("after", {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                     description="An event id: return only later events (the cursor). Omit it "
                                 "to start from the latest events."),
    LIMIT_PARAM,
]


class EventFeedView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Every job's events after a cursor, oldest first", tags=["events"],
        description="Poll with `cursor=<next_cursor of the previous answer>`. Without a "
                    "cursor, the latest `limit` events. Each row carries the job's type, its "
                    "current status and its database (`shard`). A job's start is no event "
                    "of its own: the event that ends an attempt carries it "
                    "(`data.started_at`, `data.wait_seconds`, `data.lease_token`, and "
                    "`worker_id`, the worker that ran it); history written before keeps its "
                    "`claimed` events. With JOB_SHARDS, every "
                    "database's events, merged by time, each database's in its commit "
                    "order: across polls none is skipped or shown twice, whatever the "
                    "writers do; `shards` says which database answered, and the events of "
                    "one that did not come once it is back. `after=<next_after>` (an event "
                    "id, the cursor before shards) still follows JOB_DATABASE's events alone.",
        parameters=[
            OpenApiParameter("cursor", str, description=(
                "The `next_cursor` of the previous answer: only later events, of every "
                "database (opaque; one the feed did not give is a 400 naming `cursor`). "
                "Omit it to start from the latest events.")),
            OpenApiParameter("after", {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                             description=(
                                 "An event id of JOB_DATABASE (`next_after`): only its later "
                                 "events, JOB_DATABASE's alone (the cursor of before shards). "
                                 "Not with `cursor`.")),
            LIMIT_PARAM],
        responses={200: OpenApiResponse(FeedPageSerializer, examples=[OpenApiExample(
            "page", response_only=True,
            value={"results": [{**EVENT_EXAMPLE, "shard": "default"}], "has_more": True,
                   "next_after": 1001, "next_cursor": FEED_CURSOR_EXAMPLE})]),
            **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        query = FeedQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            page = merged.events_feed(**query.validated_data)
        except keyset.BadCursor as error:
            raise ValidationError({"cursor": [f"{error}."]}) from None
        return Response(FeedPageSerializer(page).data)
