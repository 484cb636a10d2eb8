"""GET /api/health/: liveness and readiness, for load balancers."""
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from .. import selectors
from .base import JobQueueAPIView
from .schema import extend_schema


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.CharField()
    migrations = serializers.CharField()


class HealthView(JobQueueAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    reads_from_replica = False  # the health of the database that takes the writes

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
