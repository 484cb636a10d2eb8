"""Routes: the admin (its login throttled), the API (/api/), /metrics, and the dashboard at /.

The dashboard is the library's own view (django_pg_jobqueue.dashboard.urls), mounted here at
the site root as a host project mounts it at any prefix: its page at /, the same page for every
client route below it (a reload of /jobs/42 works), its assets from the static files. Unknown
paths under api/ get a JSON 404, never the dashboard's page.
"""
from django.contrib import admin
from django.urls import include, path, re_path

from django_pg_jobqueue.api.not_found import api_not_found
from django_pg_jobqueue.metrics import metrics_view
from django_pg_jobqueue.security import throttle_login

urlpatterns = [
    # The admin's login counts against the same per-client budget as the API's (JOB_LOGIN_RATE):
    # this path comes before admin.site.urls, so it answers /admin/login/ (a host does the same).
    path("admin/login/", throttle_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/", include("django_pg_jobqueue.api.urls")),
    path("metrics", metrics_view, name="metrics"),
    re_path(r"^api$", api_not_found),  # under api/, the API's own last route answers
    # At the root, the dashboard would answer every path: leave admin (APPEND_SLASH sends
    # /admin to /admin/), static/ and metrics/ to their 404s. Under a prefix of its own, a plain
    # path("queue/", include("django_pg_jobqueue.dashboard.urls")) is all it takes.
    re_path(r"^(?!admin$|static/|metrics/)", include("django_pg_jobqueue.dashboard.urls")),
]
