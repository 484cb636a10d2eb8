"""The API is self-contained: mounted at any prefix in any project, it behaves as documented
with no REST_FRAMEWORK or SPECTACULAR_SETTINGS in the host's settings, and the host's own DRF
views keep DRF's defaults (or the host's REST_FRAMEWORK): neither side's settings reach the
other.

This module is also the URLconf of its tests (@pytest.mark.urls): the API under a prefix that
is not /api/, next to two plain host DRF views with no settings of their own.
"""
import base64
import json
import os
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import modify_settings, override_settings
from django.urls import include, path, reverse
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.test import APIClient
from rest_framework.views import APIView

from django_pg_jobqueue import services
from django_pg_jobqueue.api.checks import check_api_apps
from django_pg_jobqueue.models import Job

REPO = Path(__file__).resolve().parents[2]
PREFIX = "/jq/api/"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


# --- The host: two DRF views with no settings of their own --------------------------------
class HostJobSerializer(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = ["id", "type"]


class HostJobList(generics.ListAPIView):
    queryset = Job.objects.order_by("id")
    serializer_class = HostJobSerializer


class HostEcho(APIView):
    def get(self, request):
        return Response({"user": request.user.get_username() or None})

    def post(self, request):
        return Response({"data": dict(request.data.items())})


urlpatterns = [
    path("jq/api/", include("django_pg_jobqueue.api.urls")),
    path("host/jobs/", HostJobList.as_view()),
    path("host/echo/", HostEcho.as_view()),
]

pytestmark = pytest.mark.urls(__name__)

# A host whose REST_FRAMEWORK differs from DRF's defaults in every way that could reach the API.
HOST_REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 2,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.BrowsableAPIRenderer",
                                 "rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.FormParser"],
    "DEFAULT_FILTER_BACKENDS": ["rest_framework.filters.SearchFilter"],
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"anon": "1/day"},
    "DEFAULT_VERSIONING_CLASS": "rest_framework.versioning.QueryParameterVersioning",
    "ALLOWED_VERSIONS": ["9"],
    "DEFAULT_SCHEMA_CLASS": "rest_framework.schemas.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "rest_framework.views.exception_handler",
    "NON_FIELD_ERRORS_KEY": "__all__",
    "LIST_SERIALIZER_ERRORS_AS_DICT": False,
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%d/%m/%Y",
    "COERCE_BIGINT_TO_STRING": True,
    "COMPACT_JSON": False,
    "UNICODE_JSON": False,
    "ORDERING_PARAM": "sort",
    "URL_FORMAT_OVERRIDE": "fmt",
    "SCHEMA_COERCE_PATH_PK": False,
}
HOST_SPECTACULAR_SETTINGS = {
    "TITLE": "The host's API", "VERSION": "9", "COMPONENT_SPLIT_REQUEST": False,
    "POSTPROCESSING_HOOKS": [], "SCHEMA_PATH_PREFIX": "/host", "ENUM_NAME_OVERRIDES": {},
}


@pytest.fixture(autouse=True)
def _no_rest_framework_settings(settings):
    """The host settings: no REST_FRAMEWORK, no SPECTACULAR_SETTINGS."""
    for name in ("REST_FRAMEWORK", "SPECTACULAR_SETTINGS"):
        if hasattr(settings, name):
            delattr(settings, name)


@pytest.fixture
def jobs(db):
    return [services.enqueue("noop", {"n": n}) for n in range(30)]


def _json(response):
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    return json.loads(response.content)


# --- The API under the prefix, with no REST_FRAMEWORK ----------------------------------------
def test_reverse_finds_the_api_under_the_host_prefix_in_its_namespace():
    assert reverse("django_pg_jobqueue_api:event-feed") == f"{PREFIX}v1/events/"
    assert reverse("django_pg_jobqueue_api:job-detail", kwargs={"id": 7}) == f"{PREFIX}v1/jobs/7/"
    assert reverse("django_pg_jobqueue_api:swagger-ui") == f"{PREFIX}docs/"


def test_the_job_list_is_paginated_by_the_api_itself(jobs, operator_client):
    body = _json(operator_client.get(f"{PREFIX}v1/jobs/"))
    assert body["count"] == 30
    assert len(body["results"]) == 25
    assert body["next"] == f"http://testserver{PREFIX}v1/jobs/?page=2"
    assert [j["id"] for j in body["results"]] == sorted((j.id for j in jobs), reverse=True)[:25]
    page = _json(operator_client.get(f"{PREFIX}v1/jobs/?page=2&page_size=3&ordering=id"))
    assert [j["id"] for j in page["results"]] == [j.id for j in jobs[3:6]]


def test_errors_keep_the_api_shape(db, operator_client, client_for):
    missing = operator_client.get(f"{PREFIX}v1/jobs/999999999/")
    assert missing.status_code == 404
    assert _json(missing) == {"code": "not_found", "detail": "job 999999999 not found"}

    invalid = operator_client.post(f"{PREFIX}v1/jobs/", {"type": "noop", "priority": 1000},
                                format="json")
    assert invalid.status_code == 400
    body = _json(invalid)
    assert body["code"] == "invalid"
    assert set(body["errors"]) == {"priority"}
    assert body["detail"].startswith("priority: ")

    bulk = operator_client.post(f"{PREFIX}v1/jobs/bulk/", {"jobs": [{"type": "noop"}, {"type": 5}]},
                             format="json")
    assert bulk.status_code == 400
    assert list(_json(bulk)["errors"]["jobs"]) == ["1"]  # only the bad item, by index

    anonymous = client_for(None).get(f"{PREFIX}v1/jobs/")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == "Token"
    assert _json(anonymous)["code"] == "not_authenticated"


def test_a_browser_gets_json_not_an_error_page(jobs, operator_client):
    response = operator_client.get(f"{PREFIX}v1/jobs/", HTTP_ACCEPT=BROWSER_ACCEPT)
    assert response.status_code == 200
    assert _json(response)["count"] == 30
    only_html = operator_client.get(f"{PREFIX}v1/jobs/", HTTP_ACCEPT="text/html")
    assert only_html.status_code == 406
    assert _json(only_html)["code"] == "not_acceptable"


def test_the_api_takes_json_bodies_only(db, operator_client):
    response = operator_client.post(f"{PREFIX}v1/jobs/", {"type": "noop"})  # multipart form
    assert response.status_code == 415
    assert _json(response)["code"] == "unsupported_media_type"
    assert not Job.objects.exists()


def test_the_api_takes_tokens_and_sessions_but_not_basic_auth(db, operator, make_user):
    basic = APIClient()
    credentials = base64.b64encode(b"operator:pw-for-tests-1").decode()
    basic.credentials(HTTP_AUTHORIZATION=f"Basic {credentials}")
    assert basic.get(f"{PREFIX}v1/auth/me/").status_code == 401

    session = APIClient()
    session.force_login(operator)
    assert _json(session.get(f"{PREFIX}v1/auth/me/"))["username"] == "operator"


def test_without_the_authtoken_app_the_api_takes_sessions_only(db, operator):
    with modify_settings(INSTALLED_APPS={"remove": ["rest_framework.authtoken"]}):
        anonymous = APIClient().get(f"{PREFIX}v1/auth/me/")
        session = APIClient()
        session.force_login(operator)
        me = session.get(f"{PREFIX}v1/auth/me/")
        schema = json.loads(APIClient().get(f"{PREFIX}schema/?format=json").content)
    # No authentication scheme sends a challenge, so DRF answers 403 (still "not_authenticated").
    assert anonymous.status_code == 403
    assert _json(anonymous)["code"] == "not_authenticated"
    assert _json(me)["username"] == "operator"
    assert set(schema["components"]["securitySchemes"]) == {"cookieAuth"}


def test_the_schema_describes_the_api_under_its_prefix_and_nothing_of_the_host(db):
    response = APIClient().get(f"{PREFIX}schema/?format=json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["info"]["title"] == "Job queue API"
    assert schema["paths"], schema
    assert all(p.startswith(PREFIX) for p in schema["paths"]), list(schema["paths"])
    assert f"{PREFIX}v1/jobs/{{id}}/" in schema["paths"]
    assert "JobStatusEnum" in schema["components"]["schemas"]
    assert "JobCreateRequest" in schema["components"]["schemas"]  # COMPONENT_SPLIT_REQUEST
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])
    yaml = APIClient().get(f"{PREFIX}schema/", HTTP_ACCEPT=BROWSER_ACCEPT)
    assert yaml.status_code == 200
    assert yaml["Content-Type"].startswith("application/vnd.oai.openapi")


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and attrs.get("src"):
            self.urls.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.urls.append(attrs["href"])


@pytest.mark.parametrize("page", ["docs/", "docs/redoc/"])
def test_the_docs_pages_load_their_assets_from_static_files_never_a_cdn(db, page):
    response = APIClient().get(PREFIX + page, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert f"{PREFIX}schema/" in html
    assert "http://" not in html and "https://" not in html
    parser = _Assets()
    parser.feed(html)
    assert any(u.endswith(".js") for u in parser.urls), parser.urls
    for url in parser.urls:
        assert url.startswith(settings.STATIC_URL), url
        assert finders.find(url.removeprefix(settings.STATIC_URL)), f"{url} is not a static file"


def test_a_host_mounting_the_api_without_the_sidecar_app_is_told_what_to_add():
    assert check_api_apps() == []
    with modify_settings(INSTALLED_APPS={"remove": ["drf_spectacular_sidecar"]}):
        problems = check_api_apps()
    assert [p.id for p in problems] == ["django_pg_jobqueue.E300"]
    assert '"drf_spectacular_sidecar"' in problems[0].hint


@pytest.mark.urls("django.contrib.auth.urls")  # a URLconf without the API
def test_a_project_that_does_not_mount_the_api_needs_no_api_apps():
    with modify_settings(INSTALLED_APPS={"remove": ["drf_spectacular_sidecar"]}):
        assert check_api_apps() == []


# --- The host's own DRF views keep DRF's defaults ----------------------------------------------
def test_the_host_view_parses_form_posts_and_allows_anonymous_users(db):
    client = APIClient()
    assert _json(client.post("/host/echo/", {"a": "1"})) == {"data": {"a": "1"}}  # multipart
    urlencoded = client.post("/host/echo/", "a=2", content_type="application/x-www-form-urlencoded")
    assert _json(urlencoded) == {"data": {"a": "2"}}
    assert _json(client.get("/host/echo/")) == {"user": None}


def test_the_host_view_takes_basic_auth(db, make_user):
    make_user("host-user", password="host-pw-1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"host-user:host-pw-1").decode())
    assert _json(client.get("/host/echo/")) == {"user": "host-user"}


def test_the_host_list_is_not_paginated(jobs):
    body = _json(APIClient().get("/host/jobs/"))
    assert isinstance(body, list)
    assert len(body) == 30


@modify_settings(INSTALLED_APPS={"append": "rest_framework"})  # DRF's templates, for the host
def test_the_host_view_renders_the_browsable_api(jobs):
    response = APIClient().get("/host/jobs/", HTTP_ACCEPT=BROWSER_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"Django REST framework" in response.content


# --- A host REST_FRAMEWORK that differs changes nothing of the API -----------------------------
def _api_responses(operator_client, anonymous, job_id) -> list:
    calls = [
        lambda: operator_client.get(f"{PREFIX}v1/jobs/"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/?page=2&page_size=4&ordering=id"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/?status=queued&search={job_id}"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/{job_id}/"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/{job_id}/events/"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/?format=api"),
        lambda: operator_client.get(f"{PREFIX}v1/jobs/", HTTP_ACCEPT=BROWSER_ACCEPT),
        lambda: operator_client.get(f"{PREFIX}v1/queues/"),
        lambda: operator_client.get(f"{PREFIX}v1/job-types/"),
        lambda: operator_client.get(f"{PREFIX}v1/auth/me/"),
        lambda: operator_client.options(f"{PREFIX}v1/jobs/"),
        lambda: operator_client.post(f"{PREFIX}v1/jobs/", [], format="json"),
        lambda: operator_client.post(f"{PREFIX}v1/jobs/", {"type": "noop"}),
        lambda: operator_client.post(f"{PREFIX}v1/jobs/bulk/", {"jobs": "x"}, format="json"),
        lambda: operator_client.post(f"{PREFIX}v1/jobs/bulk/",
                                  {"jobs": [{"type": "noop"}, {"type": "nope"}]}, format="json"),
        lambda: anonymous.get(f"{PREFIX}v1/jobs/"),
        lambda: anonymous.get(f"{PREFIX}v1/jobs/"),
        lambda: anonymous.post(f"{PREFIX}v1/auth/logout/"),
        lambda: anonymous.get(f"{PREFIX}health/"),
    ]
    out = []
    for call in calls:
        response = call()
        out.append((response.status_code, response.get("Content-Type"),
                    response.get("WWW-Authenticate"), response.content))
    return out


def test_a_different_host_rest_framework_changes_no_api_response(jobs, operator_client, client_for):
    anonymous = client_for(None)
    job_id = jobs[0].id
    own = _api_responses(operator_client, anonymous, job_id)
    assert [status for status, *_ in own] == [
        200, 200, 200, 200, 200, 404, 200, 200, 200, 200, 200, 400, 415, 400, 400, 401, 401,
        204, 200]
    with override_settings(REST_FRAMEWORK=HOST_REST_FRAMEWORK,
                           SPECTACULAR_SETTINGS=HOST_SPECTACULAR_SETTINGS):
        hosted = _api_responses(operator_client, anonymous, job_id)
        schema = APIClient().get(f"{PREFIX}schema/")
    for call, (mine, theirs) in enumerate(zip(own, hosted, strict=True)):
        assert mine == theirs, call
    non_field = json.loads(own[11][3])
    assert list(non_field["errors"]) == ["non_field_errors"]
    assert list(json.loads(own[13][3])["errors"]["jobs"]) == ["non_field_errors"]
    assert schema.status_code == 200
    assert b"title: Job queue API" in schema.content


_HOST_PROCESS = textwrap.dedent("""
    import json, django
    django.setup()
    from django.test import Client
    from django_pg_jobqueue.api.openapi import render_schema
    client = Client()
    out = {"schema": render_schema().decode(), "responses": []}
    for method, url, kwargs in [
        ("get", "/api/v1/jobs/", {"HTTP_ACCEPT": %(accept)r}),
        ("get", "/api/v1/jobs/", {}),
        ("get", "/api/v1/jobs/?format=api", {}),
        ("post", "/api/v1/auth/login/", {"data": {"username": "a", "password": "b"}}),
        ("get", "/api/v1/auth/csrf/", {}),
    ]:
        r = getattr(client, method)(url, **kwargs)
        out["responses"].append([r.status_code, r["Content-Type"], r.content.decode()])
    docs = client.get("/api/docs/")
    out["docs"] = [docs.status_code, docs.content.decode()]
    print(json.dumps(out))
""") % {"accept": BROWSER_ACCEPT}


def test_a_host_with_its_own_drf_settings_from_the_start_gets_the_same_api(tmp_path):
    """In a process whose REST_FRAMEWORK and SPECTACULAR_SETTINGS differ from the first import
    on (DRF reads some of them into its classes then): the same schema, the same JSON."""
    (tmp_path / "host_settings.py").write_text(
        "from config.settings import *  # noqa\n"
        f"REST_FRAMEWORK = {HOST_REST_FRAMEWORK!r}\n"
        f"SPECTACULAR_SETTINGS = {HOST_SPECTACULAR_SETTINGS!r}\n"
        "INSTALLED_APPS = [*INSTALLED_APPS, 'rest_framework', 'drf_spectacular']\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "host_settings",
           "ALLOWED_HOSTS": "testserver",  # the test client's host (pytest adds it in-process)
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "backend"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", _HOST_PROCESS], env=env, cwd=REPO, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["schema"] == (REPO / "frontend" / "openapi.yaml").read_text()
    responses = out["responses"]
    unauthenticated = '{"code":"not_authenticated","detail":"Authentication credentials were not provided."}'
    assert responses[0] == [401, "application/json", unauthenticated]
    assert responses[1] == [401, "application/json", unauthenticated]  # no host throttle
    assert responses[2][:2] == [404, "application/json"]
    assert responses[3] == [415, "application/json", json.dumps(
        {"code": "unsupported_media_type",
         "detail": 'Unsupported media type "multipart/form-data; boundary=BoUnDaRyStRiNg" '
                   "in request."}, separators=(",", ":"))]
    assert responses[4][:2] == [200, "application/json"]
    status, html = out["docs"]
    assert status == 200
    assert f"{settings.STATIC_URL}drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html


@pytest.mark.parametrize(("method", "path"), [
    ("post", "v1/jobs"), ("put", "v1/jobs"), ("delete", "v1/nonexistent/"),
    ("patch", "v1/nonexistent/"), ("post", "nonexistent"), ("get", "v1/nonexistent/"),
    ("options", "v1/nope/"),
])
def test_an_unknown_path_under_the_prefix_is_a_json_404_for_every_method(
        db, operator, method, path):
    from rest_framework.authtoken.models import Token

    client = APIClient(enforce_csrf_checks=True)  # as a browser's or a script's request is
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=operator).key}")
    response = getattr(client, method)(PREFIX + path, {"type": "noop"}, format="json")
    assert response.status_code == 404, response.content[:200]
    body = _json(response)
    assert body["code"] == "not_found"
    assert body["detail"].startswith(f"no API endpoint at {PREFIX}{path}")
    assert not Job.objects.exists()


def test_a_read_of_a_known_path_without_its_slash_is_sent_to_it(db, operator_client):
    response = operator_client.get(PREFIX + "v1/jobs", {"status": "queued"})
    assert response.status_code == 301
    assert response["Location"] == PREFIX + "v1/jobs/?status=queued"
