"""GET /api/v1/job-types/: the registered job types and their defaults."""
from rest_framework import serializers
from rest_framework.response import Response

from ... import catalogue
from ..base import JobQueueAPIView
from ..fields import JSONObjectField
from ..permissions import VIEW, JobPermission
from ..schema import errors, extend_schema


class JobTypeSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    queue = serializers.CharField()
    priority = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    timeout_seconds = serializers.IntegerField(allow_null=True)
    payload_example = JSONObjectField()
    creatable = serializers.BooleanField(
        help_text="Whether the API (and the dashboard's create form) may create jobs of this "
                  "type: JOB_API_CREATABLE_TYPES, or for django_task JOB_API_CREATABLE_TASKS.")


class JobTypeListView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="The registered job types and their defaults", tags=["jobs"],
        responses={200: JobTypeSerializer(many=True), **errors(401, 403)},
    )
    def get(self, request):
        return Response(JobTypeSerializer(catalogue.job_types(), many=True).data)
