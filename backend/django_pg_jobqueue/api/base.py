"""The base of every API view: the API's whole DRF configuration, declared on the views.

A host project mounts the API with `path("<prefix>/", include("django_pg_jobqueue.api.urls"))`
and needs no REST_FRAMEWORK (nor SPECTACULAR_SETTINGS) block for it: everything DRF would read
from those settings is declared here, per view. The other way round, nothing here changes the
host's own DRF views: they keep DRF's defaults, or the host's REST_FRAMEWORK.

    authentication   `Authorization: Token <key>` (only when rest_framework.authtoken is
                     installed), then Django's session (CSRF-checked writes)
    permissions      IsAuthenticated unless the view says otherwise (most use JobPermission)
    rendering        JSON only (DRF's JSONRenderer with its default options); a browser's
                     Accept header gets JSON too, `Accept: text/html` alone a 406
    parsing          StrictJSONParser only: a form or multipart POST is a 415
    pagination       generic views: JobPagination (?page=, ?page_size= up to 100, 25 by
                     default); plain views: none
    filtering        generic views: django-filter and ?ordering= (the job list sets its
                     own); plain views: none
    throttling       none unless the view says (job creation and login do)
    negotiation      JSONFirstContentNegotiation
    versioning       none
    errors           api.exceptions.exception_handler: one JSON error shape
    schema           drf-spectacular's AutoSchema
    other settings   api/drf_settings.py: DRF's defaults, never REST_FRAMEWORK (format
                     suffixes, ?format=, view names); the unauthenticated user is
                     AnonymousUser (JobQueueRequest)

Every API view derives from one of the classes at the bottom (JobQueueAPIView,
JobQueueViewSet, JobQueueGenericViewSet), or puts JobQueueAPIMixin first among its bases.
"""
from django.apps import apps
from django.contrib.auth.models import AnonymousUser
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.openapi import AutoSchema
from rest_framework import viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.metadata import SimpleMetadata
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from .. import conf, db
from .drf_settings import api_settings
from .exceptions import exception_handler
from .negotiation import JSONFirstContentNegotiation
from .pagination import JobPagination
from .parsers import StrictJSONParser


class JobQueueJSONRenderer(JSONRenderer):
    """DRF's JSON renderer with DRF's default options, whatever COMPACT_JSON, UNICODE_JSON or
    STRICT_JSON the host sets (DRF reads those into the class when it is imported)."""

    ensure_ascii = False
    compact = True
    strict = True


class JobQueueOrderingFilter(OrderingFilter):
    """`?ordering=`, whatever ORDERING_PARAM the host sets. A field the view does not order
    by is a 400 naming `ordering` and the fields it takes (DRF would drop it silently and
    answer in the default order); a blank one is the default."""

    ordering_param = "ordering"

    def get_ordering(self, request, queryset, view):
        raw = request.query_params.get(self.ordering_param)
        if raw:
            fields = [f.strip() for f in raw.split(",") if f.strip()]
            allowed = {name for name, _ in self.get_valid_fields(queryset, view, {"request": request})}
            bad = [f for f in fields if f.lstrip("-") not in allowed]
            if bad:
                raise ValidationError({self.ordering_param: [
                    f"cannot order by {', '.join(repr(b[:40]) for b in bad[:3])}; one or more "
                    f"of {', '.join(sorted(allowed))}, comma-separated, '-' for descending."]})
        return super().get_ordering(request, queryset, view)


class JobQueueRequest(Request):
    """DRF's request; an unauthenticated one is AnonymousUser with no token, whatever
    UNAUTHENTICATED_USER the host sets (views call `request.user.get_username()` and
    `is_authenticated` on it)."""

    def _not_authenticated(self):
        self._authenticator = None
        self.user = AnonymousUser()
        self.auth = None


def default_authentication_classes() -> list:
    """Token authentication when rest_framework.authtoken is installed, then the session."""
    if apps.is_installed("rest_framework.authtoken"):
        # Only with authtoken installed: the module reads its Token model.
        from .authentication import CachedTokenAuthentication

        return [CachedTokenAuthentication, SessionAuthentication]
    return [SessionAuthentication]


class _DefaultAuthenticationClasses:
    """`view.authentication_classes`, looked up when read: INSTALLED_APPS decides whether
    tokens are accepted. A view (or `as_view(authentication_classes=...)`) may set its own."""

    def __get__(self, instance, owner):
        return default_authentication_classes()


# The API's DRF configuration (see the module docstring); put it first among the bases.
# A comment, not a docstring: drf-spectacular would publish a docstring as the description of
# every operation of a view without its own.
class JobQueueAPIMixin:

    authentication_classes = _DefaultAuthenticationClasses()
    permission_classes = [IsAuthenticated]
    renderer_classes = [JobQueueJSONRenderer]
    parser_classes = [StrictJSONParser]
    # Lists are paginated and filtered in generic views only (JobQueueGenericViewSet): a plain
    # view's list (the job types, the queues) is whole, and its schema says so.
    pagination_class = None
    filter_backends = []
    throttle_classes = []
    content_negotiation_class = JSONFirstContentNegotiation
    versioning_class = None
    metadata_class = SimpleMetadata
    schema = AutoSchema()
    settings = api_settings

    # GET and HEAD read from JOB_READ_DATABASE, when one is set and fresh enough (db.reading);
    # a view that must read the primary (the health check) sets this False.
    reads_from_replica = True

    def get_exception_handler(self):
        return exception_handler

    def dispatch(self, request, *args, **kwargs):
        if (not self.reads_from_replica or request.method not in ("GET", "HEAD")
                or not conf.get().READ_DATABASE):
            return super().dispatch(request, *args, **kwargs)
        with db.reading() as target:
            response = super().dispatch(request, *args, **kwargs)
        if target.alias is not None and response.status_code == 503:
            # The replica may have gone in the second since it was checked: check again, and
            # if it is left aside now, answer this read from JOB_DATABASE.
            target = db.read_target(recheck=True)
            if target.alias is None:
                response = super().dispatch(request, *args, **kwargs)
        response["X-Job-Read-From"] = "replica" if target.alias else "primary"
        if target.lag is not None:
            response["X-Job-Read-Lag"] = f"{target.lag:.3f}"
        if target.reason:
            response["X-Job-Read-Fallback"] = target.reason
        return response

    def initialize_request(self, request, *args, **kwargs):
        request = super().initialize_request(request, *args, **kwargs)
        # The same object, with _not_authenticated pinned (see JobQueueRequest). After
        # super(): a viewset's initialize_request also sets `self.action`.
        request.__class__ = JobQueueRequest
        return request


class JobQueueAPIView(JobQueueAPIMixin, APIView):
    pass


class JobQueueViewSet(JobQueueAPIMixin, viewsets.ViewSet):
    pass


class JobQueueGenericViewSet(JobQueueAPIMixin, viewsets.GenericViewSet):
    pagination_class = JobPagination
    filter_backends = [DjangoFilterBackend, JobQueueOrderingFilter]
