"""The API's routes, mounted at /api/ by config/urls.py."""
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from . import views

# The dashboard finds the API wherever the host mounts it by reversing these names.
app_name = "django_pg_jobqueue_api"

router = SimpleRouter()
router.register("jobs", views.JobViewSet, basename="job")
router.register("queues", views.QueueViewSet, basename="queue")

v1 = [
    *router.urls,
    path("events/", views.EventFeedView.as_view(), name="event-feed"),
    path("job-types/", views.JobTypeListView.as_view(), name="job-types"),
    path("schedules/", views.ScheduleListView.as_view(), name="schedules"),
    path("metrics/", views.MetricsView.as_view(), name="api-metrics"),
    path("auth/csrf/", views.CsrfView.as_view(), name="auth-csrf"),
    path("auth/login/", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout/", views.LogoutView.as_view(), name="auth-logout"),
    path("auth/me/", views.MeView.as_view(), name="auth-me"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("health/", views.HealthView.as_view(), name="health"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name=f"{app_name}:schema"), name="swagger-ui"),
]
