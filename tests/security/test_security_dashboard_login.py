"""The dashboard's own password login is off unless the host turns it on
(JOB_API_PASSWORD_LOGIN): it logs in any user site-wide and bypasses a host's SSO or 2FA."""
import json
import re

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from django_pg_jobqueue.conf import default

LOGIN = "/api/v1/auth/login/"


@pytest.fixture
def csrf_client():
    client = APIClient(enforce_csrf_checks=True)
    token = client.get("/api/v1/auth/csrf/").json()["csrf_token"]
    client.credentials(HTTP_X_CSRFTOKEN=token)
    return client


def _alice_logs_in(make_user, csrf_client):
    """A user with a password posts it to the dashboard's login."""
    make_user("alice", password="pw-for-tests-1")
    return csrf_client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-1"},
                            format="json")


def test_the_password_login_is_off_by_default():
    assert default("JOB_API_PASSWORD_LOGIN") is False


@override_settings(JOB_API_PASSWORD_LOGIN=False)
def test_with_the_login_off_a_user_with_a_password_is_not_logged_in(make_user, csrf_client):
    response = _alice_logs_in(make_user, csrf_client)
    assert response.status_code == 404, response.content
    assert "JOB_API_PASSWORD_LOGIN" in response.json()["detail"]
    assert "sessionid" not in response.cookies
    assert csrf_client.get("/api/v1/auth/me/").status_code in (401, 403)


@override_settings(JOB_API_PASSWORD_LOGIN=True)
def test_with_the_login_on_the_password_starts_a_session(make_user, csrf_client):
    response = _alice_logs_in(make_user, csrf_client)
    assert response.status_code == 200, response.content
    assert csrf_client.get("/api/v1/auth/me/").json()["username"] == "alice"


def _page_config(client, monkeypatch) -> dict:
    from django_pg_jobqueue.dashboard import views

    monkeypatch.setattr(views, "built_index", lambda: "<html><head></head><body></body></html>")
    html = client.get("/").content.decode()
    island = re.search(r'<script id="jobqueue-config" type="application/json">(.*?)</script>',
                       html, re.S)
    return json.loads(island.group(1))


@override_settings(JOB_API_PASSWORD_LOGIN=False, LOGIN_URL="https://sso.example/login")
def test_with_the_login_off_the_dashboard_sends_people_to_the_hosts_login(client, monkeypatch):
    config = _page_config(client, monkeypatch)
    assert config["passwordLogin"] is False
    assert config["loginUrl"] == "https://sso.example/login"


@override_settings(JOB_API_PASSWORD_LOGIN=False, LOGIN_URL="/accounts/login/")
def test_a_login_url_that_answers_nothing_falls_back_to_the_admins_login(client, monkeypatch):
    assert _page_config(client, monkeypatch)["loginUrl"] == "/admin/login/"


@override_settings(JOB_API_PASSWORD_LOGIN=True)
def test_the_demo_page_offers_the_password_form_when_on(client, monkeypatch):
    assert _page_config(client, monkeypatch)["passwordLogin"] is True
