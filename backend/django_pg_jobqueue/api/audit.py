"""GET /api/v1/audit/: the audit log, the operator actions newest first (who cancelled,
retried, edited, ran now, deleted, paused or resumed what, and when), paginated, filtered by
actor, action and target. Read-only: the services write it (services/audit_log.py). Needs
view_auditlogentry, which JOB_API_PUBLIC_READ does not open: who did what is not a job's
public state."""
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import mixins, serializers

from .. import selectors
from ..states import AuditTarget, OperatorAction
from .base import JobQueueGenericViewSet
from .fields import ISODateTimeField, JSONObjectField
from .permissions import VIEW_AUDIT_LOG, JobPermission
from .schema import errors, extend_schema


class AuditLogEntrySerializer(serializers.Serializer):
    """One operator action."""

    id = serializers.IntegerField()
    at = ISODateTimeField(help_text="When: the time of the transaction that did it.")
    actor = serializers.CharField(help_text='Who: the user\'s name ("" : code that named no one).')
    action = serializers.ChoiceField(choices=list(OperatorAction), help_text=(
        "What: the service's name (cancel, retry, rerun, run_now, edit, delete, pause_queue, "
        "resume_queue, set_queue_limit, run_schedule, pause_schedule, resume_schedule)."))
    target_kind = serializers.ChoiceField(choices=list(AuditTarget))
    target = serializers.CharField(help_text="A job's id, a queue's or a schedule's name.")
    data = JSONObjectField(help_text=(
        "What changed: a queue's `paused` or `concurrency_limit` as [old, new], an edited "
        "job's `priority` or `available_at` as [old, new], a cancelled job's `status` before, "
        "a re-run's `copy`, a run-now schedule's `job`, a deleted job's `events`, a bulk "
        "retry's `bulk` and `filter`."))


class AuditLogQuerySerializer(serializers.Serializer):
    actor = serializers.CharField(required=False, allow_blank=True, max_length=150)
    action = serializers.ChoiceField(required=False, choices=list(OperatorAction))
    target_kind = serializers.ChoiceField(required=False, choices=list(AuditTarget))
    target = serializers.CharField(required=False, max_length=200)


AUDIT_PARAMS = [
    OpenApiParameter("actor", str, description='Exactly this user\'s actions ("" : code\'s).'),
    OpenApiParameter("action", str, enum=list(OperatorAction), description="Only this action."),
    OpenApiParameter("target_kind", str, enum=list(AuditTarget),
                     description="Only actions on jobs, on queues or on schedules."),
    OpenApiParameter("target", str, description=(
        "Only actions on this target (a job's id, a queue's or a schedule's name; with "
        "`target_kind` to tell a queue from a schedule of the same name).")),
]


class AuditLogViewSet(mixins.ListModelMixin, JobQueueGenericViewSet):
    permission_classes = [JobPermission]
    job_permission = VIEW_AUDIT_LOG
    serializer_class = AuditLogEntrySerializer

    def get_queryset(self):
        query = AuditLogQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return selectors.audit_log(**query.validated_data)

    @extend_schema(
        summary="The audit log: operator actions, newest first", tags=["audit"],
        operation_id="v1_audit_list", parameters=AUDIT_PARAMS,
        description="Every action an operator took through the API, the admin, the dashboard "
                    "or the Python API that changed something: who (`actor`), what "
                    "(`action`), on what (`target_kind`, `target`), when (`at`) and with what "
                    "(`data`). Each is recorded in the transaction that did it. Filters are "
                    "exact and combine. Paginated (`page`, `page_size`). Needs "
                    "view_auditlogentry (superusers have it; JOB_API_PUBLIC_READ does not "
                    "open it).",
        responses={200: OpenApiResponse(AuditLogEntrySerializer(many=True), examples=[
            OpenApiExample("audit log", response_only=True, value={
                "count": 2, "next": None, "previous": None, "results": [
                    {"id": 8, "at": "2026-01-01T02:10:00Z", "actor": "alice",
                     "action": "set_queue_limit", "target_kind": "queue",
                     "target": "reports", "data": {"concurrency_limit": [None, 2]}},
                    {"id": 7, "at": "2026-01-01T02:09:00Z", "actor": "alice",
                     "action": "cancel", "target_kind": "job", "target": "42",
                     "data": {"status": "queued"}}]})]),
            **errors(400, 401, 403, 404, 503)},
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)
