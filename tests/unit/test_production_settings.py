"""Production settings (DJANGO_ENV=production): `check --deploy` is clean, unsafe configurations
refuse to start, and the secure defaults reach real responses. Each case runs Django in a
subprocess, since settings are read once per process from the environment."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETTINGS = REPO / "backend" / "config" / "settings.py"
GOOD_KEY = "k" * 20 + "-production-test-secret-0123456789abcdefghijklmnopqrstuvwxyz"
# Never connected to: `check --deploy` and these requests need no database. Setting it also
# keeps the embedded PostgreSQL from starting.
NO_DATABASE = "postgres://nobody@127.0.0.1:1/none"

# Prints what the production process ended up with, and how it answers plain and proxied HTTPS.
PROBE = r"""
import json, os, sys
sys.path.insert(0, "backend")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.conf import settings as s
from django.test import Client
plain = Client(HTTP_HOST="jobs.example.com").get("/api/v1/auth/csrf/")
proxied = Client(HTTP_HOST="jobs.example.com", HTTP_X_FORWARDED_PROTO="https").get("/api/v1/auth/csrf/")
print(json.dumps({
    "DEBUG": s.DEBUG,
    "SESSION_COOKIE_SECURE": s.SESSION_COOKIE_SECURE,
    "CSRF_COOKIE_SECURE": s.CSRF_COOKIE_SECURE,
    "SECURE_SSL_REDIRECT": s.SECURE_SSL_REDIRECT,
    "SECURE_HSTS_SECONDS": s.SECURE_HSTS_SECONDS,
    "staticfiles": s.STORAGES["staticfiles"]["BACKEND"],
    "middleware": s.MIDDLEWARE,
    "log_stream": s.LOGGING["handlers"]["console"].get("stream"),
    "plain": [plain.status_code, plain.get("Location")],
    "proxied": [proxied.status_code, proxied.get("Strict-Transport-Security"),
                {k: bool(v["secure"]) for k, v in proxied.cookies.items()}],
}))
"""


def run(args: list[str], **env_vars: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "SECURE_", "JOB_")) and k not in
           ("SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "DATABASE_URL")}
    # Empty values mean "use the default", and win over any developer's .env (read without
    # overwriting what the environment already has).
    env.update({"DJANGO_ENV": "", "SECRET_KEY": "", "DEBUG": "", "ALLOWED_HOSTS": "",
                "SECURE_SSL_REDIRECT": "", "SECURE_HSTS_SECONDS": "", "DATABASE_URL": NO_DATABASE})
    env.update(env_vars)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def production(**env_vars: str) -> dict[str, str]:
    return {"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "DEBUG": "false",
            "ALLOWED_HOSTS": "jobs.example.com", **env_vars}


def test_check_deploy_passes_clean_in_production():
    proc = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **production())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout


def _dev_secret_key() -> str:
    match = re.search(r'^_DEV_SECRET_KEY = "([^"]+)"', SETTINGS.read_text(), re.M)
    assert match, "settings.py should name its development key _DEV_SECRET_KEY"
    return match.group(1)


@pytest.mark.parametrize("secret_key", ["", "dev", "too-short-for-production"],
                         ids=["unset", "development-key", "short"])
def test_production_refuses_to_start_without_a_real_secret_key(secret_key):
    key = _dev_secret_key() if secret_key == "dev" else secret_key
    proc = run(["manage.py", "check"], **production(SECRET_KEY=key))
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr and "SECRET_KEY" in proc.stderr


def test_production_refuses_to_start_with_debug_on():
    proc = run(["manage.py", "check"], **production(DEBUG="true"))
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr and "DEBUG" in proc.stderr


def test_production_refuses_to_start_without_allowed_hosts():
    proc = run(["manage.py", "check"], **production(ALLOWED_HOSTS=""))
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr and "ALLOWED_HOSTS" in proc.stderr


def test_production_redirects_to_https_and_sends_secure_cookies_and_hsts():
    proc = run(["-c", PROBE], **production())
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["DEBUG"] is False
    assert got["SESSION_COOKIE_SECURE"] and got["CSRF_COOKIE_SECURE"]
    assert got["SECURE_HSTS_SECONDS"] >= 31536000
    assert "whitenoise" in got["staticfiles"].lower()
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in got["middleware"]
    assert got["log_stream"] == "ext://sys.stdout"
    # Plain HTTP is sent to HTTPS; behind the proxy (X-Forwarded-Proto: https) the page is served
    # with HSTS, and the CSRF cookie it sets is Secure.
    assert got["plain"] == [301, "https://jobs.example.com/api/v1/auth/csrf/"]
    status, hsts, cookies = got["proxied"]
    assert status == 200
    assert hsts and hsts.startswith("max-age=31536000")
    assert cookies.get("csrftoken") is True


def test_production_can_turn_the_https_redirect_off_for_a_plain_http_setup():
    proc = run(["-c", PROBE], **production(SECURE_SSL_REDIRECT="false"))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["plain"][0] == 200


def test_development_is_unaffected_by_the_production_checks():
    proc = run(["-c", PROBE.replace('"jobs.example.com"', '"localhost"')])
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["DEBUG"] is True
    assert got["SESSION_COOKIE_SECURE"] is False and got["SECURE_SSL_REDIRECT"] is False
    assert got["plain"][0] == 200


HOSTS_PROBE = r"""
import json, os, sys
sys.path.insert(0, "backend")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.conf import settings as s
from django.test import Client
print(json.dumps({"ALLOWED_HOSTS": s.ALLOWED_HOSTS, **{
    host: Client(HTTP_HOST=host).get("/api/v1/auth/csrf/").status_code
    for host in ("evil.example", "localhost:8000", "127.0.0.1", "jobs.lan")}}))
"""


@pytest.mark.parametrize(("allowed", "jobs_lan"), [("", 400), ("jobs.lan", 200)])
def test_development_answers_only_loopback_names_and_those_the_environment_adds(allowed, jobs_lan):
    """The Host header reaches absolute URLs (the API's pagination links): an arbitrary one
    is refused, not echoed into a `next` link."""
    proc = run(["-c", HOSTS_PROBE], ALLOWED_HOSTS=allowed)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["evil.example"] == 400
    assert out["localhost:8000"] == out["127.0.0.1"] == 200
    assert out["jobs.lan"] == jobs_lan
