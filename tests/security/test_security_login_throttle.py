"""Password guessing is limited per real client, in a cache shared by every process, on the
API's login and on the admin's.

The limit is JOB_LOGIN_RATE (30/min by default) attempts per client address; the address is
REMOTE_ADDR unless JOB_TRUSTED_PROXY_COUNT says how many proxies in front append to
X-Forwarded-For. A client's own X-Forwarded-For is never believed by default."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core import checks
from django.test import Client, override_settings

from django_pg_jobqueue import security

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
LOGIN = "/api/v1/auth/login/"
ADMIN_LOGIN = "/admin/login/"
LIMIT = 30  # JOB_LOGIN_RATE's default: 30/min
FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # A wrong password costs a full PBKDF2 run (even for an unknown user, against timing
    # attacks): ~0.5 s per attempt on a busy machine, and these tests make hundreds.
    settings.PASSWORD_HASHERS = FAST_HASHER


def _api_attempt(client: Client, **extra):
    return client.post(LOGIN, json.dumps({"username": "ops", "password": "wrong-guess"}),
                       content_type="application/json", **extra)


def _admin_attempt(client: Client, **extra):
    return client.post(ADMIN_LOGIN, {"username": "ops", "password": "wrong-guess",
                                     "next": "/admin/"}, **extra)


def test_a_client_varying_its_own_x_forwarded_for_is_still_throttled():
    client = Client(REMOTE_ADDR="198.51.100.10")
    statuses = [_api_attempt(client, HTTP_X_FORWARDED_FOR=f"10.0.{i // 250}.{i % 250}").status_code
                for i in range(LIMIT + 10)]
    assert statuses[:LIMIT] == [400] * LIMIT  # wrong password, counted
    assert statuses[LIMIT:] == [429] * 10


def test_the_throttled_answer_says_when_to_come_back():
    client = Client(REMOTE_ADDR="198.51.100.11")
    for _ in range(LIMIT):
        _api_attempt(client)
    throttled = _api_attempt(client)
    assert throttled.status_code == 429
    assert throttled.json()["code"] == "throttled"
    assert 1 <= int(throttled["Retry-After"]) <= 60


def test_each_client_address_has_its_own_budget():
    for _ in range(LIMIT):
        _api_attempt(Client(REMOTE_ADDR="198.51.100.12"))
    assert _api_attempt(Client(REMOTE_ADDR="198.51.100.12")).status_code == 429
    assert _api_attempt(Client(REMOTE_ADDR="198.51.100.13")).status_code == 400


@override_settings(JOB_TRUSTED_PROXY_COUNT=1)
def test_behind_one_trusted_proxy_the_address_it_appended_is_the_client():
    proxy = Client(REMOTE_ADDR="10.1.1.1")  # every request arrives from the proxy
    # The client controls everything left of what the proxy appended: varying it is no escape.
    statuses = [_api_attempt(proxy, HTTP_X_FORWARDED_FOR=f"1.2.3.{i}, 203.0.113.7").status_code
                for i in range(LIMIT + 1)]
    assert statuses[-1] == 429 and statuses.count(429) == 1
    # Another client behind the same proxy is counted on its own.
    assert _api_attempt(proxy, HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 400


def test_ipv6_clients_are_counted_by_their_64_bit_prefix():
    # One host holds a whole /64: rotating within it is no escape.
    statuses = [_api_attempt(Client(REMOTE_ADDR=f"2001:db8:1:2::{i:x}")).status_code
                for i in range(1, LIMIT + 2)]
    assert statuses[-1] == 429
    assert _api_attempt(Client(REMOTE_ADDR="2001:db8:1:3::1")).status_code == 400


def test_the_admin_login_is_throttled_too():
    client = Client(REMOTE_ADDR="198.51.100.20")
    statuses = [_admin_attempt(client).status_code for _ in range(LIMIT + 2)]
    assert statuses[:LIMIT] == [200] * LIMIT  # the form again, with its error
    assert statuses[LIMIT:] == [429, 429]
    throttled = _admin_attempt(client)
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert b"Too many login attempts" in throttled.content
    assert client.get(ADMIN_LOGIN).status_code == 200  # the form itself is not counted


def test_the_api_and_the_admin_share_one_budget_per_client():
    client = Client(REMOTE_ADDR="198.51.100.21")
    for _ in range(LIMIT // 2):
        _api_attempt(client)
    for _ in range(LIMIT - LIMIT // 2):
        assert _admin_attempt(client).status_code == 200
    assert _admin_attempt(client).status_code == 429
    assert _api_attempt(client).status_code == 429


def test_a_good_password_is_refused_too_once_the_budget_is_spent(make_user):
    make_user("ops", password="the-right-one-1")
    client = Client(REMOTE_ADDR="198.51.100.22")
    for _ in range(LIMIT):
        _api_attempt(client)
    right = client.post(LOGIN, json.dumps({"username": "ops", "password": "the-right-one-1"}),
                        content_type="application/json")
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session


@override_settings(JOB_LOGIN_RATE="3/min")
def test_the_rate_is_a_setting():
    client = Client(REMOTE_ADDR="198.51.100.23")
    assert [_api_attempt(client).status_code for _ in range(4)] == [400, 400, 400, 429]


# A separate Python process, as gunicorn's workers are: Django's test client against the real
# database of DATABASE_URL (never the test database), a client address of its own per run.
ATTEMPTS_IN_ANOTHER_PROCESS = r"""
import json, os, sys
sys.path.insert(0, "backend")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from django.test.utils import override_settings
override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]).enable()
call_command("createcachetable")
client = Client(REMOTE_ADDR=sys.argv[1])
statuses = []
for i in range(int(sys.argv[2])):
    if sys.argv[3] == "admin":
        r = client.post("/admin/login/", {"username": "ops", "password": "wrong-guess"})
    else:
        r = client.post("/api/v1/auth/login/", json.dumps({"username": "ops", "password": "wrong"}),
                        content_type="application/json")
    statuses.append(r.status_code)
print(json.dumps(statuses))
"""


def _attempts_in_another_process(address: str, count: int, endpoint: str) -> list[int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOB_")}
    env["ALLOWED_HOSTS"] = "testserver"  # the test client's host (pytest adds it in-process)
    proc = subprocess.run([sys.executable, "-c", ATTEMPTS_IN_ANOTHER_PROCESS, address,
                           str(count), endpoint], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_processes_share_one_count_through_the_database_cache():
    # A documentation address of its own per run (2001:db8::/32), so that runs never share one.
    address = f"2001:db8:{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}::1"
    first = _attempts_in_another_process(address, 20, "api")
    second = _attempts_in_another_process(address, 20, "admin")
    assert first == [400] * 20
    assert second == [200] * (LIMIT - 20) + [429] * (40 - LIMIT)


# -- configuration checks ---------------------------------------------------------------------

def test_the_demo_project_counts_in_a_shared_database_cache(settings):
    from django.core.cache import caches
    from django.core.cache.backends.db import DatabaseCache

    assert isinstance(caches[settings.JOB_THROTTLE_CACHE], DatabaseCache)
    assert security.check_throttle_cache() == []


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
                   JOB_THROTTLE_CACHE="default")
def test_check_deploy_warns_that_a_local_memory_cache_counts_per_process():
    [warning] = security.check_throttle_cache()
    assert warning.level == checks.WARNING
    assert warning.id == "django_pg_jobqueue.W043"
    assert "per process" in warning.msg and "JOB_THROTTLE_CACHE" in warning.msg


@override_settings(JOB_THROTTLE_CACHE="nowhere")
def test_a_throttle_cache_alias_missing_from_caches_is_a_check_error():
    from django_pg_jobqueue import conf

    errors = [e for e in conf.check_settings() if e.obj == "JOB_THROTTLE_CACHE"]
    assert len(errors) == 1 and "CACHES" in errors[0].msg


def test_a_dummy_cache_is_refused_by_check_deploy():
    with override_settings(CACHES={"default": {
            "BACKEND": "django.core.cache.backends.dummy.DummyCache"}}, JOB_THROTTLE_CACHE="default"):
        [problem] = security.check_throttle_cache()
    assert problem.level == checks.ERROR and "counts nothing" in problem.msg


def test_migrate_creates_the_cache_table_in_a_fresh_database():
    # `migrate` alone, as `make run` and docker-compose run it (Django's test database gets
    # cache tables from create_test_db, which would hide a missing step).
    import psycopg
    from django.db import connection

    s = connection.settings_dict
    name = f"wt_cache_{uuid.uuid4().hex[:8]}"
    admin = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = admin.rsplit("/", 1)[0] + f"/{name}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOB_")}
        env["DATABASE_URL"] = url
        proc = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT to_regclass('jobqueue_cache')").fetchone()[0] == "jobqueue_cache"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_client_address_follows_job_trusted_proxy_count_not_drfs_num_proxies(settings, rf):
    """The API guide names the one setting the throttles read: DRF's NUM_PROXIES changes
    nothing."""
    request = rf.get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR="203.0.113.7, 10.0.0.8")
    settings.REST_FRAMEWORK = {**getattr(settings, "REST_FRAMEWORK", {}), "NUM_PROXIES": 1}
    assert security.client_address(request) == "10.0.0.9"
    with override_settings(JOB_TRUSTED_PROXY_COUNT=2):
        assert security.client_address(request) == "203.0.113.7"
    guide = (REPO / "docs" / "how-to" / "api.md").read_text()
    assert "JOB_TRUSTED_PROXY_COUNT" in guide
    assert "uses it to find the client's address" not in guide
