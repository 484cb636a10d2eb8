"""The dashboard's page, mounted by a host project at a prefix of its choice.

The host's URLconf here (this module's ``urlpatterns``) mounts the dashboard at /ops/queue/ and
the API at /ops/queue-api/: the page must tell the app both, and its assets must go through the
host's static files storage. Most tests render a small Vite-shaped build written to a temporary
directory, so they do not depend on `make ui`; one checks the real build when there is one.
"""
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import include, path, reverse

from django_pg_jobqueue.dashboard import views

urlpatterns = [
    path("ops/queue-api/", include("django_pg_jobqueue.api.urls")),
    path("ops/queue/", include("django_pg_jobqueue.dashboard.urls")),
]

mounted = pytest.mark.urls(__name__)


class UrlConf:
    """Another host's URLconf (ROOT_URLCONF may be any object with urlpatterns)."""

    def __init__(self, urlpatterns):
        self.urlpatterns = urlpatterns

VITE_INDEX = """<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <title>Job queue</title>
    <script type="module" crossorigin src="./assets/index-AbC123.js"></script>
    <link rel="modulepreload" crossorigin href="./assets/vendor-DeF456.js">
    <link rel="stylesheet" crossorigin href="./assets/index-GhI789.css">
  </head>
  <body>
    <div id="root"></div>
  </body>
</html>
"""


@pytest.fixture
def build(tmp_path, monkeypatch):
    """A built dashboard (index.html as Vite writes it) in a temporary directory."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text(VITE_INDEX)
    monkeypatch.setattr(views, "BUILD_DIR", tmp_path)
    return tmp_path


@pytest.fixture
def no_build(tmp_path, monkeypatch):
    """A source checkout where `make ui` has not run."""
    monkeypatch.setattr(views, "BUILD_DIR", tmp_path / "missing")


@pytest.fixture
def view_log(caplog):
    """What the view logs (the library's logger does not propagate to the root's capture)."""
    views.logger.addHandler(caplog.handler)
    yield caplog
    views.logger.removeHandler(caplog.handler)


class _Page(HTMLParser):
    """The page's scripts, stylesheet and preload URLs, and its config island."""

    def __init__(self, html):
        super().__init__()
        self.scripts, self.links, self.config_text = [], [], None
        self._in_config = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs)
            self._in_config = attrs.get("id") == views.CONFIG_ELEMENT_ID
        elif tag == "link" and attrs.get("rel") in ("stylesheet", "modulepreload"):
            self.links.append(attrs)

    def handle_data(self, data):
        if self._in_config:
            self.config_text = (self.config_text or "") + data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_config = False

    @property
    def config(self):
        assert self.config_text is not None, "the page has no config island"
        return json.loads(self.config_text)

    def url(self, rel):
        return next(link["href"] for link in self.links if link["rel"] == rel)

    @property
    def entry(self):
        return next(s["src"] for s in self.scripts if s.get("type") == "module")


def page(response):
    assert response["Content-Type"] == "text/html; charset=utf-8"
    return _Page(response.content.decode())


@mounted
def test_the_page_tells_the_app_its_prefix_and_the_api_base(client, build):
    response = client.get("/ops/queue/")
    assert response.status_code == 200
    config = page(response).config
    assert config["basename"] == "/ops/queue/"
    assert config["apiBase"] == "/ops/queue-api/v1/"
    assert config["apiDocsUrl"] == "/ops/queue-api/docs/"
    # This host mounts no admin: the app shows no link to it.
    assert config["adminUrl"] is None
    assert config["csrfCookieName"] == "csrftoken"
    assert config["csrfHeaderName"] == "X-CSRFToken"


@mounted
def test_the_api_base_is_where_the_api_really_answers(client, build, make_user):
    make_user("ops", perms=["view_job"])
    client.login(username="ops", password="pw-for-tests-1")
    api_base = page(client.get("/ops/queue/")).config["apiBase"]
    me = client.get(api_base + "auth/me/")
    assert me.status_code == 200
    assert me.json()["username"] == "ops"


@mounted
@pytest.mark.parametrize("route", ["jobs/42", "jobs/new", "failed", "login", "jobs"])
def test_a_reload_of_a_client_route_answers_the_same_page(client, build, route):
    index = client.get("/ops/queue/")
    response = client.get(f"/ops/queue/{route}", {"next": "/jobs/4"})
    assert response.status_code == 200
    assert page(response).config == page(index).config
    assert response.content == index.content


@mounted
def test_the_app_can_link_to_one_of_its_pages(build):
    assert reverse("django_pg_jobqueue_dashboard:index") == "/ops/queue/"
    assert (reverse("django_pg_jobqueue_dashboard:page", kwargs={"path": "jobs/42"})
            == "/ops/queue/jobs/42")


@mounted
def test_asset_urls_go_through_static(client, build, settings):
    settings.STATIC_URL = "https://cdn.example/assets-v2/"
    html = page(client.get("/ops/queue/jobs/7"))
    base = "https://cdn.example/assets-v2/django_pg_jobqueue/dashboard/assets/"
    assert html.entry == base + "index-AbC123.js"
    assert html.url("stylesheet") == base + "index-GhI789.css"
    assert html.url("modulepreload") == base + "vendor-DeF456.js"
    assert "./assets/" not in html.rawdata


@mounted
def test_a_manifest_storage_serves_the_hashed_entry_and_preloads_what_it_imports(
        client, build, settings, tmp_path):
    """ManifestStaticFilesStorage hashes the entry but not the chunk names inside it: the
    preloads must be the URLs the entry imports (next to it), or every chunk loads twice."""
    static_root = tmp_path / "collected"
    static_root.mkdir()
    prefix = "django_pg_jobqueue/dashboard/assets/"
    (static_root / "staticfiles.json").write_text(json.dumps({"version": "1.1", "hash": "x", "paths": {
        f"{prefix}index-AbC123.js": f"{prefix}index-AbC123.5f1e2d.js",
        f"{prefix}vendor-DeF456.js": f"{prefix}vendor-DeF456.77aa00.js",
        f"{prefix}index-GhI789.css": f"{prefix}index-GhI789.0c0c0c.css",
    }}))
    settings.STATIC_ROOT = static_root
    settings.STATIC_URL = "/static/"
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}}
    html = page(client.get("/ops/queue/"))
    assert html.entry == f"/static/{prefix}index-AbC123.5f1e2d.js"
    assert html.url("stylesheet") == f"/static/{prefix}index-GhI789.0c0c0c.css"
    assert html.url("modulepreload") == f"/static/{prefix}vendor-DeF456.js"


@mounted
def test_the_page_has_no_inline_script_a_csp_would_block(client, build):
    html = page(client.get("/ops/queue/"))
    for script in html.scripts:
        assert script.get("src") or script.get("type") == "application/json", script


def test_the_config_island_cannot_be_broken_out_of():
    hostile = "</script><script>alert(1)</script><!--"
    rendered = views.render_index(VITE_INDEX, {"basename": hostile})
    assert "<script>alert(1)" not in rendered
    assert _Page(rendered).config == {"basename": hostile}


@mounted
def test_the_page_sets_the_csrf_cookie_the_api_login_then_accepts(build, make_user):
    make_user("ops", perms=["view_job"])
    client = Client(enforce_csrf_checks=True)
    response = client.get("/ops/queue/login")
    config = page(response).config
    token = response.cookies[config["csrfCookieName"]].value
    api_base = config["apiBase"]
    refused = client.post(api_base + "auth/login/", {"username": "ops", "password": "pw-for-tests-1"},
                          content_type="application/json")
    assert refused.status_code == 403
    login = client.post(api_base + "auth/login/", {"username": "ops", "password": "pw-for-tests-1"},
                        content_type="application/json", headers={"X-CSRFToken": token})
    assert login.status_code == 200, login.content
    assert client.get(api_base + "auth/me/").json()["username"] == "ops"


@mounted
def test_the_page_names_the_hosts_csrf_cookie_and_header(client, build, settings):
    settings.CSRF_COOKIE_NAME = "host_csrf"
    settings.CSRF_HEADER_NAME = "HTTP_X_XSRF_TOKEN"
    config = page(client.get("/ops/queue/")).config
    assert config["csrfCookieName"] == "host_csrf"
    assert config["csrfHeaderName"] == "X-XSRF-TOKEN"


@mounted
@pytest.mark.parametrize("setting", ["CSRF_USE_SESSIONS", "CSRF_COOKIE_HTTPONLY"])
def test_no_csrf_cookie_name_when_the_page_cannot_read_the_cookie(client, build, settings, setting, db):
    setattr(settings, setting, True)
    assert page(client.get("/ops/queue/")).config["csrfCookieName"] is None


@mounted
def test_the_page_is_not_cached_and_takes_reads_only(client, build):
    response = client.get("/ops/queue/")
    assert "no-cache" in response["Cache-Control"]
    assert client.head("/ops/queue/jobs/3").status_code == 200
    assert client.post("/ops/queue/jobs/3").status_code == 405


@mounted
def test_a_rebuilt_ui_is_served_without_a_restart(client, build):
    first = page(client.get("/ops/queue/")).entry
    index = build / "index.html"
    index.write_text(index.read_text().replace("index-AbC123.js", "index-Rebuilt9.js"))
    assert page(client.get("/ops/queue/")).entry.endswith("/index-Rebuilt9.js")
    assert first.endswith("/index-AbC123.js")


def test_the_admin_link_is_where_the_host_mounted_the_admin(client, build, settings):
    settings.ROOT_URLCONF = UrlConf([
        path("backoffice/", admin.site.urls),
        path("api/", include("django_pg_jobqueue.api.urls")),
        path("", include("django_pg_jobqueue.dashboard.urls")),
    ])
    config = page(client.get("/jobs/1")).config
    assert config["adminUrl"] == "/backoffice/"
    assert config["basename"] == "/"
    assert config["apiBase"] == "/api/v1/"


def test_two_mounts_each_get_their_own_prefix(client, build, settings):
    dashboard = ("django_pg_jobqueue.dashboard.urls", "django_pg_jobqueue_dashboard")
    settings.ROOT_URLCONF = UrlConf([
        path("queue-api/", include("django_pg_jobqueue.api.urls")),
        path("team-a/queue/", include(dashboard, namespace="team-a")),
        path("team-b/queue/", include(dashboard, namespace="team-b")),
    ])
    assert page(client.get("/team-a/queue/jobs/1")).config["basename"] == "/team-a/queue/"
    assert page(client.get("/team-b/queue/failed")).config["basename"] == "/team-b/queue/"


def test_a_prefix_with_a_captured_part_is_its_own_basename(client, build, settings):
    settings.ROOT_URLCONF = UrlConf([
        path("queue-api/", include("django_pg_jobqueue.api.urls")),
        path("<slug:tenant>/queue/", include("django_pg_jobqueue.dashboard.urls")),
    ])
    assert page(client.get("/acme/queue/jobs/9")).config["basename"] == "/acme/queue/"


def test_without_the_api_the_page_says_which_include_is_missing(client, build, settings, view_log):
    settings.ROOT_URLCONF = UrlConf([
        path("ops/queue/", include("django_pg_jobqueue.dashboard.urls")),
    ])
    response = client.get("/ops/queue/jobs/1")
    assert response.status_code == 500
    text = response.content.decode()
    assert "the API is not mounted" in text
    assert 'path(&quot;queue-api/&quot;, include(&quot;django_pg_jobqueue.api.urls&quot;)),' in text
    assert "django-pg-jobqueue[api]" in text
    assert "<script" not in text
    assert 'include("django_pg_jobqueue.api.urls")' in view_log.text


def test_a_dashboard_include_that_hides_the_api_says_to_reorder(client, build, settings):
    settings.ROOT_URLCONF = UrlConf([
        path("queue/", include("django_pg_jobqueue.dashboard.urls")),
        path("queue/api/", include("django_pg_jobqueue.api.urls")),
    ])
    response = client.get("/queue/")
    assert response.status_code == 500
    assert "Move the API" in response.content.decode()
    # In the right order, the same two lines work.
    settings.ROOT_URLCONF = UrlConf(list(reversed(settings.ROOT_URLCONF.urlpatterns)))
    response = client.get("/queue/")
    assert response.status_code == 200
    assert page(response).config["apiBase"] == "/queue/api/v1/"


@mounted
def test_without_a_build_the_page_says_to_run_make_ui(client, no_build, view_log):
    response = client.get("/ops/queue/jobs/1")
    assert response.status_code == 503
    text = response.content.decode()
    assert "the dashboard is not built" in text
    assert "<code>make ui</code>" in text
    assert "django_pg_jobqueue/dashboard/index.html" in text
    assert "make ui" in view_log.text


def test_the_build_lives_where_djangos_static_finders_and_collectstatic_look():
    """In the app's own static/ dir: the host needs no STATICFILES_DIRS or extra app for it."""
    app_static = Path(apps.get_app_config("django_pg_jobqueue").path) / "static"
    assert views.BUILD_DIR == app_static / views.STATIC_DIR


@mounted
def test_the_real_build_references_files_it_contains(client):
    """The build `make ui` writes (and the wheel ships): every URL the page names exists."""
    if not (views.BUILD_DIR / "index.html").is_file():
        pytest.skip("the dashboard is not built (make ui)")
    assert Path(finders.find(f"{views.STATIC_DIR}/index.html")) == views.BUILD_DIR / "index.html"
    html = page(client.get("/ops/queue/"))
    static_base = "/static/django_pg_jobqueue/dashboard/"
    urls = [html.entry] + [link["href"] for link in html.links]
    assert len(urls) >= 3
    for url in urls:
        assert url.startswith(static_base), url
        assert (views.BUILD_DIR / url.removeprefix(static_base)).is_file(), url
        assert finders.find(url.removeprefix("/static/")), url
    assert html.config["basename"] == "/ops/queue/"
