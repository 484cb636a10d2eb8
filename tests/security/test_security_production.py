"""Production refuses to start while the demo account still opens with its published password,
with a weak SECRET_KEY, or with a debug variable it would not read.

Each case runs Django in a subprocess (settings are read once per process), with the helpers of
test_production_settings. The demo-user check needs a database: it runs against this test
database, committed (transactional_db), so that the subprocess sees the users."""
import pytest
from django.db import connection

from tests.unit.test_production_settings import GOOD_KEY, _dev_secret_key, production, run

DEMO_USERNAME, DEMO_PASSWORD = "demo", "demo-password"


def _database_url() -> str:
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{s['USER']}{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _check_deploy(**env):
    return run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
               **production(DATABASE_URL=_database_url(), **env))


@pytest.fixture
def demo_user(transactional_db):
    from django.contrib.auth import get_user_model

    # As `ensure_demo_user` makes it (in development), with the real password hasher.
    return get_user_model().objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD, is_staff=True)


def test_production_refuses_to_start_while_the_demo_user_can_log_in(demo_user):
    proc = _check_deploy()
    assert proc.returncode != 0
    assert "demo.E001" in proc.stderr
    assert "demo-password" in proc.stderr and "changepassword" in proc.stderr


def test_migrate_refuses_too_so_docker_compose_never_starts_gunicorn(demo_user):
    proc = run(["manage.py", "migrate", "--check"], **production(DATABASE_URL=_database_url()))
    assert proc.returncode != 0
    assert "demo.E001" in proc.stderr


def test_production_starts_once_the_demo_password_is_changed(demo_user):
    demo_user.set_password("a-new-long-operator-password-7")
    demo_user.save()
    proc = _check_deploy()
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_production_starts_once_the_demo_user_is_deactivated(demo_user):
    demo_user.is_active = False
    demo_user.save()
    assert _check_deploy().returncode == 0


def test_development_keeps_the_demo_user(demo_user):
    proc = run(["manage.py", "check"], DATABASE_URL=_database_url())
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("secret_key", [
    "x" * 64,                                        # one character
    "ab" * 40,                                       # few distinct characters
    "password" * 8,                                  # long, but a repeated word
    "correct-horse-battery-staple-" * 3,             # a repeated phrase
    "django-insecure-" + GOOD_KEY,                   # Django's startproject key
    "dev",                                           # the development key, even lengthened
], ids=["one-char", "two-chars", "repeated-word", "repeated-phrase", "django-insecure", "dev-key"])
def test_production_refuses_a_weak_secret_key(secret_key):
    if secret_key == "dev":
        secret_key = _dev_secret_key() + GOOD_KEY
    proc = run(["manage.py", "check"], **production(SECRET_KEY=secret_key))
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr and "SECRET_KEY" in proc.stderr
    assert "token_urlsafe" in proc.stderr  # says how to make a good one


def test_production_accepts_generated_keys():
    import secrets

    for key in (secrets.token_urlsafe(50), secrets.token_hex(32)):
        proc = run(["manage.py", "check"], **production(SECRET_KEY=key))
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("value", ["false", "true", "0"])
def test_the_other_debug_variable_is_refused_loudly(value):
    # DEBUG is the one name; DJANGO_DEBUG used to be ignored without a word.
    for env in (production(DJANGO_DEBUG=value), {"DJANGO_DEBUG": value}):
        proc = run(["manage.py", "check"], **env)
        assert proc.returncode != 0
        assert "DJANGO_DEBUG" in proc.stderr and "DEBUG" in proc.stderr
