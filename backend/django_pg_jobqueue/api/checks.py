"""System checks for a project that mounts the API (include("django_pg_jobqueue.api.urls")).

The API itself needs nothing in INSTALLED_APPS beyond django_pg_jobqueue: DRF, django-filter
and drf-spectacular work as libraries, and the API declares its own configuration. What does
need an app:
    E300  the docs pages load Swagger UI and ReDoc from drf-spectacular-sidecar's static
          files, which Django finds only when "drf_spectacular_sidecar" is installed;
    W301  without django.contrib.staticfiles nothing collects or serves those files.
Token authentication (`Authorization: Token <key>`) is on when "rest_framework.authtoken" is
installed, and off otherwise: a choice, not an error.

Imports only Django, so that a project without the `api` extra can run its checks.
"""
from django.apps import apps
from django.core import checks
from django.urls import URLResolver, get_resolver

APP_NAME = "django_pg_jobqueue_api"


def _mounts_the_api(patterns) -> bool:
    for pattern in patterns:
        if not isinstance(pattern, URLResolver):
            continue
        if pattern.app_name == APP_NAME:
            return True
        try:
            if _mounts_the_api(pattern.url_patterns):
                return True
        except Exception:  # noqa: BLE001, S112 - a broken include is Django's own check's to report
            continue
    return False


@checks.register(checks.Tags.urls)
def check_api_apps(app_configs=None, **kwargs):
    try:
        mounted = _mounts_the_api(get_resolver().url_patterns)
    except Exception:  # noqa: BLE001 - Django's URL check reports a URLconf that does not load
        return []
    if not mounted:
        return []
    problems = []
    if not apps.is_installed("drf_spectacular_sidecar"):
        problems.append(checks.Error(
            "The job queue API's docs pages (<prefix>docs/, <prefix>docs/redoc/) load Swagger UI "
            "and ReDoc from drf-spectacular-sidecar's static files, and Django finds them only "
            "when its app is installed.",
            hint='Add "drf_spectacular_sidecar" to INSTALLED_APPS.',
            id="django_pg_jobqueue.E300",
        ))
    if not apps.is_installed("django.contrib.staticfiles"):
        problems.append(checks.Warning(
            "The job queue API's docs pages link their scripts and styles under STATIC_URL, "
            "and without django.contrib.staticfiles nothing collects or serves them.",
            hint='Add "django.contrib.staticfiles" to INSTALLED_APPS, or serve '
                 "drf_spectacular_sidecar's and django_pg_jobqueue's static files yourself.",
            id="django_pg_jobqueue.W301",
        ))
    return problems
