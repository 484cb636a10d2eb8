"""What the API's views read where DRF reads REST_FRAMEWORK: DRF's own defaults, with the
API's choices, and never the host's REST_FRAMEWORK.

DRF's views and its content negotiation read their settings through `self.settings`
(`api_settings` by default): format suffixes, ?format=, view names and descriptions, the
exception handler. The API's views (api/base.py) and negotiation (api/negotiation.py) set
`settings` to the object below. The rest of what the global settings used to say is declared
on the views, renderer, request, filters and serializers themselves (see api/base.py).
"""
from rest_framework.settings import DEFAULTS, IMPORT_STRINGS, APISettings

VALUES = {
    **DEFAULTS,
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "django_pg_jobqueue.api.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["django_pg_jobqueue.api.base.JobQueueJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["django_pg_jobqueue.api.parsers.StrictJSONParser"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "django_pg_jobqueue.api.base.JobQueueOrderingFilter",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS":
        "django_pg_jobqueue.api.negotiation.JSONFirstContentNegotiation",
    "DEFAULT_PAGINATION_CLASS": "django_pg_jobqueue.api.pagination.JobPagination",
    "PAGE_SIZE": 25,
    "EXCEPTION_HANDLER": "django_pg_jobqueue.api.exceptions.exception_handler",
    "LIST_SERIALIZER_ERRORS_AS_DICT": True,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "UNAUTHENTICATED_TOKEN": None,
}


class _OwnSettings(APISettings):
    """DRF's settings object over VALUES: REST_FRAMEWORK is never read, nor reloaded."""

    @property
    def user_settings(self):
        return VALUES


api_settings = _OwnSettings(defaults=DEFAULTS, import_strings=IMPORT_STRINGS)
