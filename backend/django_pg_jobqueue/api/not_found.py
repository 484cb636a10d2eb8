"""The API's answer for any path under its prefix that names no endpoint: a JSON 404 in the
API's error shape, for every method.

The last route of api/urls.py. It is csrf_exempt because it changes nothing: without that,
Django's CSRF middleware answered a write to an unknown path (`POST .../v1/jobs` without its
slash, `DELETE .../v1/nonexistent/`) with its HTML "CSRF verification failed" 403 before any
view ran. A read of a known path without its slash is sent to it (301), as APPEND_SLASH
would do; a write is not (a redirect would drop its body), and the 404 says to add the slash.
"""
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def api_not_found(request, path=""):
    if not request.path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(request.path + "/", getattr(request, "urlconf", None))
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    detail = f"no API endpoint at {request.path}"
    if not request.path.endswith("/"):
        detail += " (API paths end with a slash)"
    return JsonResponse({"code": "not_found", "detail": detail}, status=404)
