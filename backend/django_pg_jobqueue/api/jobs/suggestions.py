"""GET /api/v1/jobs/suggestions/: the distinct queues, types or concurrency keys that start
with a prefix, for the dashboard's filter bar."""
from rest_framework import serializers
from rest_framework.response import Response

from ... import selectors
from ...states import MAX_CONCURRENCY_KEY_LENGTH
from ..base import JobQueueAPIView
from ..fields import StrictSerializer
from ..idempotency import key_scope
from ..permissions import VIEW, JobPermission
from ..schema import errors, extend_schema


class JobSuggestionsQuerySerializer(StrictSerializer):
    field = serializers.ChoiceField(
        choices=list(selectors.SUGGESTION_FIELDS),
        help_text="What to suggest: queue, type or concurrency_key.")
    prefix = serializers.CharField(
        required=False, default="", allow_blank=True, trim_whitespace=False,
        max_length=MAX_CONCURRENCY_KEY_LENGTH,
        help_text="The values start with this text (case-sensitive); empty: the first ones.")
    limit = serializers.IntegerField(
        required=False, default=selectors.SUGGESTIONS_DEFAULT_LIMIT, min_value=1,
        max_value=selectors.SUGGESTIONS_MAX_LIMIT, help_text="At most this many values.")


class JobSuggestionsSerializer(serializers.Serializer):
    field = serializers.CharField()
    prefix = serializers.CharField(allow_blank=True)
    values = serializers.ListField(
        child=serializers.CharField(),
        help_text="Distinct values in the jobs kept, in order (at most `limit`).")


class JobSuggestionsView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Distinct queues, types or concurrency keys by prefix", tags=["jobs"],
        operation_id="v1_jobs_suggestions_retrieve",
        description="For a filter's autocompletion: the distinct values of `field` among the "
                    "jobs kept that start with `prefix`, in order, at most `limit` (10; 50 at "
                    "most). Each value is one probe of the field's index, so the answer costs "
                    "the same however many jobs there are; a walk past values without the "
                    "prefix stops after 10 probes per value asked for, so under a database "
                    "collation other than C a value may be missed. Concurrency keys are the "
                    "ones given from Python and your own (as you sent them), never another API "
                    "user's.",
        parameters=[JobSuggestionsQuerySerializer],
        responses={200: JobSuggestionsSerializer, **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        query = JobSuggestionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        field, prefix = query.validated_data["field"], query.validated_data["prefix"]
        values = selectors.distinct_values(
            field, prefix=prefix, limit=query.validated_data["limit"],
            key_scope=key_scope(request.user) if request.user.is_authenticated else "")
        return Response(JobSuggestionsSerializer(
            {"field": field, "prefix": prefix, "values": values}).data)
