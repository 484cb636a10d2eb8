"""The dashboard's page: the built app's index.html, with the runtime config it needs.

``npm run build`` (``make ui``; building the wheel does it) writes the app into the
django_pg_jobqueue app's static files, ``django_pg_jobqueue/static/django_pg_jobqueue/dashboard/``
(``index.html`` and ``assets/``), where Django's app-directories finder and collectstatic find
it with no setting of the host's. This view answers that index.html, changed in two ways at
render time:

- its asset URLs go through Django's ``static()``, so they follow the host's STATIC_URL and
  storage (whitenoise, ManifestStaticFilesStorage's hashed names, S3, a CDN...);
- it carries a JSON island, ``<script type="application/json" id="jobqueue-config">``, with the
  router's basename (the prefix this view is mounted at), the API's v1 base (wherever the host
  mounted ``django_pg_jobqueue.api.urls``), the API docs and admin URLs, and the CSRF cookie
  and header names, and how people log in (``passwordLogin``: the dashboard's own form,
  JOB_API_PASSWORD_LOGIN; otherwise ``loginUrl``, the host's LOGIN_URL). It is data, not
  code: a Content-Security-Policy without 'unsafe-inline' allows it. frontend/src/config.ts
  reads it.

The page is served with the app's Content-Security-Policy (security.content_security_policy):
scripts and styles from the site (or STATIC_URL's origin) only, no inline script or style.

When the API is not mounted, or the app is not built (a source checkout without ``make ui``),
the page says what to do instead.
"""
import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import urljoin

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url
from django.templatetags.static import static
from django.urls import NoReverseMatch, Resolver404, get_script_prefix, resolve, reverse
from django.utils.encoding import escape_uri_path
from django.utils.html import escape, format_html, json_script
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe

from .. import conf
from ..security import content_security_policy

logger = logging.getLogger(__name__)

#: Where the build lives among the static files, and in the app (the package's static/ dir:
#: the dashboard is no app of its own, so its files live in django_pg_jobqueue's).
STATIC_DIR = "django_pg_jobqueue/dashboard"
BUILD_DIR = Path(__file__).resolve().parent.parent / "static" / STATIC_DIR
#: The id of the JSON island; frontend/src/config.ts reads the same id.
CONFIG_ELEMENT_ID = "jobqueue-config"
API_NAMESPACE = "django_pg_jobqueue_api"
API_FEED = f"{API_NAMESPACE}:event-feed"  # <api prefix>v1/events/
API_INCLUDE_LINE = 'path("queue-api/", include("django_pg_jobqueue.api.urls")),'

# The built index.html is Vite's: <script type="module" src="./assets/..."> for the entry,
# <link rel="modulepreload" href="./assets/..."> for the chunks it imports, and
# <link rel="stylesheet" href="./assets/...">. Only these relative URLs are rewritten.
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
_RELATIVE_URL = re.compile(r'\b(src|href)="\./([^"]+)"')
_MODULEPRELOAD = re.compile(r'\brel="modulepreload"', re.IGNORECASE)
_ENTRY = re.compile(r'<script\b[^>]*\btype="module"[^>]*\bsrc="\./([^"]+)"', re.IGNORECASE)

_read_cache: dict[Path, tuple[tuple[int, int], str]] = {}


def built_index() -> str | None:
    """The built index.html, or None when there is none; re-read whenever the file changes."""
    index = BUILD_DIR / "index.html"
    try:
        stat = index.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _read_cache.get(index)
    if cached is None or cached[0] != key:
        cached = _read_cache[index] = (key, index.read_text(encoding="utf-8"))
    return cached[1]


def render_index(html: str, config: dict) -> str:
    """The built index.html with its asset URLs through static() and the config island."""
    entry = _ENTRY.search(html)
    entry_url = static(f"{STATIC_DIR}/{entry.group(1)}") if entry else None

    def asset_url(relative: str, preload: bool) -> str:
        if preload and entry_url:
            # The entry imports its chunks by URLs relative to its own, whatever name the
            # storage gave it (a manifest storage hashes the entry, not the names inside it):
            # preload exactly those URLs, or the browser would fetch every chunk twice.
            return urljoin(entry_url, posixpath.relpath(relative, posixpath.dirname(entry.group(1))))
        return static(f"{STATIC_DIR}/{relative}")

    def rewrite(tag: re.Match) -> str:
        preload = bool(_MODULEPRELOAD.search(tag.group(0)))
        return _RELATIVE_URL.sub(
            lambda m: f'{m.group(1)}="{escape(asset_url(m.group(2), preload))}"', tag.group(0))

    html = _TAG.sub(rewrite, html)
    island = json_script(config, CONFIG_ELEMENT_ID)
    head_end = html.lower().find("</head>")
    if head_end < 0:
        raise ValueError(f"{BUILD_DIR / 'index.html'} has no </head>: rebuild the dashboard")
    return f"{html[:head_end]}  {island}\n  {html[head_end:]}"


def mount_prefix(request) -> str:
    """The URL this view's include() is mounted at (with the script prefix), ending in "/"."""
    match = request.resolver_match
    outer = {k: v for k, v in match.kwargs.items() if k != "path"}
    if match.namespace:
        try:
            return reverse(f"{match.namespace}:index", kwargs=outer or None)
        except NoReverseMatch:
            pass
    # Not reversible (the view routed by hand, an unusual prefix): what the path says.
    below = match.kwargs.get("path", "")
    return escape_uri_path(request.path[: len(request.path) - len(below)] if below else request.path)


def _reverse_or_none(name: str) -> str | None:
    try:
        return reverse(name)
    except NoReverseMatch:
        return None


def api_base() -> str | None:
    """The API's v1 base, from where the host mounted django_pg_jobqueue.api.urls; or None."""
    feed = _reverse_or_none(API_FEED)
    if feed is None or not feed.endswith("/events/"):
        return None
    return feed[: -len("events/")]


def csrf_header_name() -> str:
    """The HTTP header for Django's CSRF_HEADER_NAME (the WSGI key, HTTP_X_CSRFTOKEN)."""
    meta_key = settings.CSRF_HEADER_NAME
    if meta_key == "HTTP_X_CSRFTOKEN":
        return "X-CSRFToken"
    return meta_key.removeprefix("HTTP_").replace("_", "-")


def login_url() -> str | None:
    """Where people log in to the host: LOGIN_URL (a path, a URL or a URL name) when it
    names a page of another site or one of this URLconf; else the admin's login (a
    startproject's LOGIN_URL, /accounts/login/, answers nothing); else None."""
    try:
        url = str(resolve_url(settings.LOGIN_URL))
    except NoReverseMatch:
        url = ""
    if url.startswith(("http://", "https://")):
        return url
    if url.startswith("/") and not url.startswith("//"):
        path = "/" + url.split("?")[0].removeprefix(get_script_prefix())
        try:
            if resolve(path).func is not dashboard:  # a dashboard at the root answers all
                return url
        except Resolver404:
            pass
    return _reverse_or_none("admin:login")


def runtime_config(request, api: str) -> dict:
    readable_cookie = not (settings.CSRF_USE_SESSIONS or settings.CSRF_COOKIE_HTTPONLY)
    return {
        # Off (the library's default): the dashboard sends people to the host's own login
        # (LOGIN_URL, with ?next= back here) instead of its password form.
        "passwordLogin": conf.get().API_PASSWORD_LOGIN,
        "loginUrl": login_url(),
        "basename": mount_prefix(request),
        "apiBase": api,
        "apiDocsUrl": _reverse_or_none(f"{API_NAMESPACE}:swagger-ui"),
        "adminUrl": _reverse_or_none("admin:index"),
        "csrfCookieName": settings.CSRF_COOKIE_NAME if readable_cookie else None,
        "csrfHeaderName": csrf_header_name(),
    }


_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Job queue dashboard: {}</title></head>
<body>
<h1>{}</h1>
{}
</body>
</html>
"""


def _problem_page(title: str, body: str, status: int) -> HttpResponse:
    return HttpResponse(format_html(_PAGE, title, title, body), status=status,
                        content_type="text/html; charset=utf-8")


def _api_missing(prefix: str) -> HttpResponse:
    logger.error("the dashboard at %s needs the API: add %s to your urlpatterns",
                 prefix, API_INCLUDE_LINE)
    return _problem_page("the API is not mounted", format_html(
        "<p>The dashboard at <code>{}</code> talks to the job queue's REST API, and the API is "
        "not in your URLconf (no URL named <code>{}</code>).</p>"
        "<p>Add this line to your project's <code>urlpatterns</code> (next to the dashboard's "
        "<code>include()</code>; any prefix of its own will do):</p><pre>{}</pre>"
        "<p>The API needs the <code>api</code> extra: "
        "<code>pip install 'django-pg-jobqueue[api]'</code>.</p>",
        prefix, API_FEED, API_INCLUDE_LINE), status=500)


def _api_swallowed(prefix: str, api: str) -> HttpResponse:
    logger.error("the dashboard's include() at %s comes before the API's at %s and hides it",
                 prefix, api)
    return _problem_page("the dashboard hides the API", format_html(
        "<p>The API is mounted at <code>{}</code>, under the dashboard's prefix <code>{}</code>, "
        "and the dashboard's <code>include()</code> comes first in your <code>urlpatterns</code>, "
        "so it answers the API's URLs too.</p>"
        "<p>Move the API's <code>include(\"django_pg_jobqueue.api.urls\")</code> line above the "
        "dashboard's <code>include(\"django_pg_jobqueue.dashboard.urls\")</code>.</p>",
        api, prefix), status=500)


def _not_built() -> HttpResponse:
    logger.error("the dashboard is not built: %s is missing; run `make ui`", BUILD_DIR / "index.html")
    return _problem_page("the dashboard is not built", format_html(
        "<p>This is a source checkout and its dashboard has not been built: "
        "<code>{}</code> is missing.</p>"
        "<p>Build it with <code>make ui</code> (or <code>cd frontend &amp;&amp; npm ci &amp;&amp; "
        "npm run build</code>), then reload this page. Installed packages (wheels) always "
        "include the built dashboard.</p>",
        f"{STATIC_DIR}/index.html"), status=503)


@require_safe
@never_cache
@ensure_csrf_cookie
@content_security_policy
def dashboard(request, path: str = "", **kwargs):
    """The single-page app, for its index and for every client route below it."""
    prefix = mount_prefix(request)
    api = api_base()
    if api is None:
        return _api_missing(prefix)
    if api.startswith(prefix):
        try:
            below_script = (api + "events/").removeprefix(get_script_prefix())
            swallowed = resolve("/" + below_script).func is dashboard
        except Resolver404:
            swallowed = False
        if swallowed:
            return _api_swallowed(prefix, api)
    html = built_index()
    if html is None:
        return _not_built()
    return HttpResponse(render_index(html, runtime_config(request, api)),
                        content_type="text/html; charset=utf-8")
