"""The API's routes. A project mounts them at any prefix, with no REST_FRAMEWORK or
SPECTACULAR_SETTINGS of its own needed (see api/base.py and docs/how-to/api.md):

    path("api/", include("django_pg_jobqueue.api.urls")),

URL names are in the `django_pg_jobqueue_api` namespace: reverse("django_pg_jobqueue_api:job-list").
"""
from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from .audit import AuditLogViewSet
from .auth import CsrfView, LoginView, LogoutView, MeView
from .batches import BatchViewSet
from .events import EventFeedView
from .health import HealthView
from .jobs.actions import JobActionsView
from .jobs.suggestions import JobSuggestionsView
from .jobs.types import JobTypeListView
from .jobs.views import JobViewSet
from .metrics import LatencyView, MetricsView, ThroughputView
from .not_found import api_not_found
from .openapi import RedocView, SchemaView, SwaggerUIView
from .queues import QueueViewSet
from .rate_limits import RateLimitViewSet
from .schedules import ScheduleViewSet
from .workers import (
    LostWorkerListView,
    WorkerListView,
    WorkerOverrideListView,
    WorkerOverrideView,
)

# The dashboard finds the API wherever the host mounts it by reversing these names.
app_name = "django_pg_jobqueue_api"

router = SimpleRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("queues", QueueViewSet, basename="queue")
router.register("audit", AuditLogViewSet, basename="audit")
router.register("rate-limits", RateLimitViewSet, basename="rate-limit")
router.register("batches", BatchViewSet, basename="batch")


def schedule(method: str, action: str):
    """One route of ScheduleViewSet: one method, one action (named as a router would, for
    DRF's OPTIONS answer: "Schedule List", "Schedule Run" ...)."""
    return ScheduleViewSet.as_view({method: action}, suffix=action.capitalize())


v1 = [
    # Before the router's routes, whose `jobs/{id}/` would take `jobs/actions/`.
    path("jobs/actions/", JobActionsView.as_view(), name="job-actions"),
    path("jobs/suggestions/", JobSuggestionsView.as_view(), name="job-suggestions"),
    *router.urls,
    path("events/", EventFeedView.as_view(), name="event-feed"),
    path("job-types/", JobTypeListView.as_view(), name="job-types"),
    path("schedules/", schedule("get", "list"), name="schedules"),
    path("workers/", WorkerListView.as_view(), name="workers"),
    path("workers/lost/", LostWorkerListView.as_view(), name="workers-lost"),
    path("workers/overrides/", WorkerOverrideListView.as_view(), name="worker-overrides"),
    path("workers/hosts/<str:hostname>/queues/<str:queue>/", WorkerOverrideView.as_view(),
         name="worker-override"),
    path("schedules/<str:name>/run/", schedule("post", "run"), name="schedule-run"),
    path("schedules/<str:name>/pause/", schedule("post", "pause"), name="schedule-pause"),
    path("schedules/<str:name>/resume/", schedule("post", "resume"), name="schedule-resume"),
    path("schedules/<str:name>/ticks/", schedule("get", "ticks"), name="schedule-ticks"),
    path("metrics/", MetricsView.as_view(), name="api-metrics"),
    path("metrics/throughput/", ThroughputView.as_view(), name="api-throughput"),
    path("metrics/latency/", LatencyView.as_view(), name="api-latency"),
    path("auth/csrf/", CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", LoginView.as_view(), name="auth-login"),
    path("auth/logout/", LogoutView.as_view(), name="auth-logout"),
    path("auth/me/", MeView.as_view(), name="auth-me"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("health/", HealthView.as_view(), name="health"),
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", SwaggerUIView.as_view(), name="swagger-ui"),
    path("docs/redoc/", RedocView.as_view(), name="redoc"),
    # Last: any other path under the API's prefix, whatever the method, is a JSON 404.
    re_path(r"^(?P<path>.*)$", api_not_found, name="not-found"),
]
