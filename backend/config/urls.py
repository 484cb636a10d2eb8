"""Routes: the admin, the API (/api/), and the dashboard (a single-page app) for the rest.

The built dashboard (frontend/dist, `make ui`) is served by whitenoise from WHITENOISE_ROOT:
its files at their paths and index.html at `/`. Any other path not under api/, admin/,
static/ or metrics is a client-side route: it gets index.html too, so that a reload of
/jobs/42 works. Unknown paths under api/ get a JSON 404, never an HTML page.
"""
from django.conf import settings
from django.contrib import admin
from django.http import FileResponse, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, include, path, re_path, resolve
from django.views.decorators.cache import never_cache

from django_pg_jobqueue.metrics import metrics_view

_NO_UI = """<!doctype html><html><head><meta charset="utf-8"><title>Job queue</title></head>
<body style="font-family:system-ui;margin:3rem;max-width:40rem">
<h1>Job queue</h1>
<p>The dashboard is not built yet: run <code>make ui</code> (or <code>make run</code>).</p>
<p>Meanwhile: <a href="/api/docs/">API docs</a> · <a href="/admin/">admin</a> ·
<a href="/api/health/">health</a></p></body></html>"""


@never_cache
def spa_index(request, path=""):
    index = settings.FRONTEND_DIST / "index.html"
    if index.is_file():
        return FileResponse(index.open("rb"), content_type="text/html; charset=utf-8")
    return HttpResponse(_NO_UI, status=200 if path == "" else 404)


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
    path("admin/", admin.site.urls),
    path("api/", include("django_pg_jobqueue.api.urls")),
    path("metrics", metrics_view, name="metrics"),
    re_path(r"^api(?:/(?P<path>.*))?$", api_not_found),
    re_path(r"^(?!api(?:/|$)|admin(?:/|$)|static/|metrics(?:/|$))(?P<path>.*)$", spa_index),
]
