"""Routes: the admin (its login throttled), the API (/api/), /metrics, and the dashboard at /.

The dashboard is the library's own view (django_pg_jobqueue.dashboard.urls), mounted here at
the site root as a host project mounts it at any prefix: its page at /, the same page for every
client route below it (a reload of /jobs/42 works), its assets from the static files. Unknown
paths under api/ get a JSON 404, never the dashboard's page.
"""
from django.contrib import admin
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, include, path, re_path, resolve

from django_pg_jobqueue.metrics import metrics_view
from django_pg_jobqueue.security import throttle_login


def api_not_found(request, path=""):
    # /api/v1/jobs (no slash) -> /api/v1/jobs/ for reads, as APPEND_SLASH would do.
    if not request.path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    detail = f"no API endpoint at {request.path}"
    if not request.path.endswith("/"):
        detail += " (API paths end with a slash)"
    return JsonResponse({"code": "not_found", "detail": detail}, status=404)


urlpatterns = [
    # The admin's login counts against the same per-client budget as the API's (JOB_LOGIN_RATE):
    # this path comes before admin.site.urls, so it answers /admin/login/ (a host does the same).
    path("admin/login/", throttle_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/", include("django_pg_jobqueue.api.urls")),
    path("metrics", metrics_view, name="metrics"),
    re_path(r"^api(?:/(?P<path>.*))?$", api_not_found),
    # At the root, the dashboard would answer every path: leave admin (APPEND_SLASH sends
    # /admin to /admin/), static/ and metrics/ to their 404s. Under a prefix of its own, a plain
    # path("queue/", include("django_pg_jobqueue.dashboard.urls")) is all it takes.
    re_path(r"^(?!admin$|static/|metrics/)", include("django_pg_jobqueue.dashboard.urls")),
]
