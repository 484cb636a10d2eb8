"""The API's OpenAPI schema and its docs pages, with the API's own drf-spectacular settings.

    <prefix>schema/        the OpenAPI 3 schema (YAML; JSON with ?format=json or Accept)
    <prefix>docs/          Swagger UI
    <prefix>docs/redoc/    ReDoc

The schema describes this API's views only (whatever else the host's URLconf holds), at the
prefix the host mounted them at, with SETTINGS below: no SPECTACULAR_SETTINGS in the host's
settings is read for it, and the host's own schema (if it has one) is not changed by it.
The docs pages load Swagger UI and ReDoc from drf-spectacular-sidecar's static files (under
STATIC_URL; "drf_spectacular_sidecar" must be in INSTALLED_APPS, check django_pg_jobqueue.E300),
never from a CDN, and need no template settings. Both pages send a Content-Security-Policy
(security.content_security_policy): scripts from the site only, no inline script.

`make schema` writes frontend/openapi.yaml with the same generator:
    manage.py spectacular --generator-class django_pg_jobqueue.api.openapi.SchemaGenerator
"""
import threading

from django.conf import settings as django_settings
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.templatetags.static import static
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views import View
from drf_spectacular import generators, plumbing
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.settings import SPECTACULAR_DEFAULTS, patched_settings
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from ..security import content_security_policy
from .base import JobQueueAPIMixin, JobQueueAPIView

TITLE = "Job queue API"

# drf-spectacular's defaults, with the API's choices. Every key is applied while the schema is
# generated, so that none of the host's SPECTACULAR_SETTINGS reaches it. (SERVE_* keys belong
# to drf-spectacular's own views, which the API does not use.)
SETTINGS = {
    **{key: value for key, value in SPECTACULAR_DEFAULTS.items()
       if not key.startswith("SERVE_") and key != "DEFAULT_GENERATOR_CLASS"},
    "TITLE": TITLE,
    "DESCRIPTION": "A PostgreSQL job queue for Django: enqueue, inspect, cancel and retry jobs.",
    "VERSION": "1.0.0",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "django_pg_jobqueue.api.fields.STATUS_CHOICES",
        "EventKindEnum": "django_pg_jobqueue.api.fields.EVENT_KIND_CHOICES",
        "HealthStatusEnum": ["ok", "unavailable"],
        "AfterFailureEnum": "django_pg_jobqueue.states.AFTER_FAILURE_CHOICES",
    },
    "TAGS": [
        {"name": "jobs", "description": "Enqueue, list, inspect, cancel and retry jobs."},
        {"name": "events", "description": "Cursor feeds of job events, for polling."},
        {"name": "queues", "description": "Pause, resume and limit named queues."},
        {"name": "schedules", "description": "Periodic jobs and their next runs."},
        {"name": "metrics", "description": "Queue figures for dashboards."},
        {"name": "auth", "description": "Session login for the UI; scripts use `Authorization: Token <key>`."},
        {"name": "health", "description": "Readiness for load balancers."},
    ],
}

# drf-spectacular's settings are one global object, patched for the time of a generation;
# one generation at a time, so that two never restore each other's patches.
_generating = threading.RLock()


class _APIEndpoints(generators.EndpointEnumerator):
    """The URLconf's endpoints served by this API's views (JobQueueAPIMixin), and no others."""

    def should_include_endpoint(self, path, callback):
        cls = getattr(callback, "cls", None)
        return (isinstance(cls, type) and issubclass(cls, JobQueueAPIMixin)
                and super().should_include_endpoint(path, callback))


class SchemaGenerator(generators.SchemaGenerator):
    """drf-spectacular's generator over this API's views, with SETTINGS."""

    endpoint_inspector_cls = _APIEndpoints

    def get_schema(self, request=None, public=False):
        with _generating, patched_settings(SETTINGS):
            # ENUM_NAME_OVERRIDES are read once per language and cached; not across settings.
            plumbing._load_enum_name_overrides.cache_clear()
            try:
                return super().get_schema(request=request, public=public)
            finally:
                plumbing._load_enum_name_overrides.cache_clear()


class SchemaView(JobQueueAPIView):
    """The OpenAPI schema, open to anyone (it is the same for every user)."""

    authentication_classes = []
    permission_classes = [AllowAny]
    renderer_classes = [OpenApiYamlRenderer, OpenApiYamlRenderer2, OpenApiJsonRenderer,
                        OpenApiJsonRenderer2]
    schema = None  # not itself in the schema

    def get(self, request, *args, **kwargs):
        schema = SchemaGenerator().get_schema(request=request, public=True)
        suffix = request.accepted_renderer.format
        return Response(schema, headers={
            "Content-Disposition": f'inline; filename="{TITLE}.{suffix}"'})


def _sidecar(path: str) -> str:
    return static(f"drf_spectacular_sidecar/{path}")


def _schema_url(request) -> str:
    namespace = request.resolver_match.namespace if request.resolver_match else ""
    return reverse(f"{namespace}:schema" if namespace else "schema")


# The head both pages open with (str.format: {title}).
_PAGE_START = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
"""

_SWAGGER_PAGE = _PAGE_START + """<link rel="icon" type="image/png" href="{favicon}">
<link rel="stylesheet" href="{css}">
<link rel="stylesheet" href="{page_css}">
</head>
<body>
<div id="swagger-ui" data-schema-url="{schema_url}" data-csrf-header="{csrf_header}"
     data-csrf-token="{csrf_token}"></div>
<script src="{bundle}"></script>
<script src="{init}"></script>
</body>
</html>
"""

_REDOC_PAGE = _PAGE_START + """<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<redoc spec-url="{schema_url}"></redoc>
<script src="{init}"></script>
<script src="{bundle}"></script>
</body>
</html>
"""


def _csrf_header_name() -> str:
    """CSRF_HEADER_NAME as a header (HTTP_X_CSRFTOKEN -> X-CSRFTOKEN)."""
    name = django_settings.CSRF_HEADER_NAME
    return name.removeprefix("HTTP_").replace("_", "-")


@method_decorator(content_security_policy, name="dispatch")
class SwaggerUIView(View):
    """Swagger UI over the schema. "Try it out" sends the session cookie and, on writes, the
    CSRF token; "Authorize" takes `Token <key>`. Served with the app's Content-Security-Policy
    (security.py): scripts and styles from the site only."""

    http_method_names = ["get", "head"]

    def get(self, request, *args, **kwargs):
        page = format_html(
            _SWAGGER_PAGE, title=f"{TITLE} (Swagger UI)",
            favicon=_sidecar("swagger-ui-dist/favicon-32x32.png"),
            css=_sidecar("swagger-ui-dist/swagger-ui.css"),
            page_css=static("django_pg_jobqueue/api/swagger.css"),
            bundle=_sidecar("swagger-ui-dist/swagger-ui-bundle.js"),
            init=static("django_pg_jobqueue/api/swagger-init.js"),
            schema_url=_schema_url(request), csrf_header=_csrf_header_name(),
            csrf_token=get_token(request),
        )
        return HttpResponse(page, content_type="text/html; charset=utf-8")


@method_decorator(content_security_policy(inline_styles=True, workers=True), name="dispatch")
class RedocView(View):
    """ReDoc over the schema (read-only). Its policy allows inline styles (ReDoc injects its
    own, styled-components) and blob: workers (its search index), never inline scripts."""

    http_method_names = ["get", "head"]

    def get(self, request, *args, **kwargs):
        page = format_html(
            _REDOC_PAGE, title=f"{TITLE} (ReDoc)", schema_url=_schema_url(request),
            bundle=_sidecar("redoc/bundles/redoc.standalone.js"),
            init=static("django_pg_jobqueue/api/redoc-init.js"),
        )
        return HttpResponse(page, content_type="text/html; charset=utf-8")



class SchemaWarnings(Exception):
    """drf-spectacular warned (or erred) while generating the schema."""


def render_schema(*, fmt: str = "yaml", validate: bool = False, fail_on_warn: bool = False,
                  urlconf: str | None = None) -> bytes:
    """The schema as the API serves it at <prefix>schema/ (YAML, or JSON with fmt="json"), for
    the URLconf (ROOT_URLCONF by default). `validate`: check it against the OpenAPI 3 JSON
    Schema (ValueError if it does not conform). `fail_on_warn`: SchemaWarnings if
    drf-spectacular warned; its warnings are printed to stderr as it finds them."""
    if fmt not in ("yaml", "json"):
        raise ValueError(f"fmt must be 'yaml' or 'json', not {fmt!r}")
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator(urlconf=urlconf).get_schema(request=None, public=True)
    if fail_on_warn and GENERATOR_STATS:
        GENERATOR_STATS.emit_summary()
        raise SchemaWarnings("drf-spectacular warned while generating the schema (see above)")
    if validate:
        try:
            validate_schema(schema)
        except Exception as exc:  # noqa: BLE001 - jsonschema's error, whatever its class
            raise ValueError(f"the schema does not conform to OpenAPI 3: {exc}") from None
    renderer = OpenApiYamlRenderer() if fmt == "yaml" else OpenApiJsonRenderer()
    return renderer.render(schema, renderer_context={})
