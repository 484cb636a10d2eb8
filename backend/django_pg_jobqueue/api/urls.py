"""The API's routes. A project mounts them at any prefix, with no REST_FRAMEWORK or
SPECTACULAR_SETTINGS of its own needed (see api/base.py and docs/how-to/api.md):

    path("api/", include("django_pg_jobqueue.api.urls")),

URL names are in the `django_pg_jobqueue_api` namespace: reverse("django_pg_jobqueue_api:job-list").
"""
from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from . import views
from .actions import JobActionsView
from .not_found import api_not_found
from .openapi import RedocView, SchemaView, SwaggerUIView
from .workers import WorkerListView

# The dashboard finds the API wherever the host mounts it by reversing these names.
app_name = "django_pg_jobqueue_api"

router = SimpleRouter()
router.register("jobs", views.JobViewSet, basename="job")
router.register("queues", views.QueueViewSet, basename="queue")

v1 = [
    # Before the router's routes, whose `jobs/{id}/` would take `jobs/actions/`.
    path("jobs/actions/", JobActionsView.as_view(), name="job-actions"),
    *router.urls,
    path("events/", views.EventFeedView.as_view(), name="event-feed"),
    path("job-types/", views.JobTypeListView.as_view(), name="job-types"),
    path("schedules/", views.ScheduleListView.as_view(), name="schedules"),
    path("workers/", WorkerListView.as_view(), name="workers"),
    path("schedules/<str:name>/run/", views.ScheduleRunView.as_view(), name="schedule-run"),
    path("schedules/<str:name>/pause/", views.SchedulePauseView.as_view(), name="schedule-pause"),
    path("schedules/<str:name>/resume/", views.ScheduleResumeView.as_view(),
         name="schedule-resume"),
    path("schedules/<str:name>/ticks/", views.ScheduleTicksView.as_view(), name="schedule-ticks"),
    path("metrics/", views.MetricsView.as_view(), name="api-metrics"),
    path("metrics/throughput/", views.ThroughputView.as_view(), name="api-throughput"),
    path("auth/csrf/", views.CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout/", views.LogoutView.as_view(), name="auth-logout"),
    path("auth/me/", views.MeView.as_view(), name="auth-me"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("health/", views.HealthView.as_view(), name="health"),
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", SwaggerUIView.as_view(), name="swagger-ui"),
    path("docs/redoc/", RedocView.as_view(), name="redoc"),
    # Last: any other path under the API's prefix, whatever the method, is a JSON 404.
    re_path(r"^(?P<path>.*)$", api_not_found, name="not-found"),
]
