"""What the transaction-pooler mode and JOB_DATABASE demand of the settings (no PgBouncer
needed), and the router's answers."""
import pytest
from django.conf import settings
from django.test import override_settings

from django_pg_jobqueue import conf
from django_pg_jobqueue.routers import JobQueueRouter

DIRECT = "postgres://postgres@127.0.0.1:5432/app"


@pytest.fixture
def no_server_side_cursors(monkeypatch):
    monkeypatch.setitem(settings.DATABASES["default"], "DISABLE_SERVER_SIDE_CURSORS", True)


def ids():
    return {e.id: e for e in conf.check_settings()}


def test_the_pooler_mode_with_its_direct_listen_url_passes_the_check(no_server_side_cursors):
    with override_settings(JOB_TRANSACTION_POOLER=True, JOB_LISTEN_DATABASE_URL=DIRECT):
        assert ids() == {}
        c = conf.get()
    assert c.PREPARED_STATEMENTS is True and c.use_prepared_statements is False


def test_the_pooler_mode_without_a_listen_url_is_refused_unless_listen_is_off(
        no_server_side_cursors):
    with override_settings(JOB_TRANSACTION_POOLER=True):
        found = ids()
        assert set(found) == {"django_pg_jobqueue.E041"}
        assert "JOB_LISTEN_DATABASE_URL" in found["django_pg_jobqueue.E041"].msg
        assert "JOB_LISTEN_NOTIFY" in found["django_pg_jobqueue.E041"].msg
        with pytest.raises(Exception, match="JOB_LISTEN_DATABASE_URL"):
            conf.get()
    with override_settings(JOB_TRANSACTION_POOLER=True, JOB_LISTEN_NOTIFY=False):
        assert ids() == {}


def test_the_pooler_mode_needs_server_side_cursors_off():
    assert not settings.DATABASES["default"].get("DISABLE_SERVER_SIDE_CURSORS")
    with override_settings(JOB_TRANSACTION_POOLER=True, JOB_LISTEN_DATABASE_URL=DIRECT):
        found = ids()
    assert set(found) == {"django_pg_jobqueue.E040"}
    assert "DISABLE_SERVER_SIDE_CURSORS" in found["django_pg_jobqueue.E040"].msg


def test_the_pooler_mode_refuses_server_side_binding(no_server_side_cursors, monkeypatch):
    monkeypatch.setitem(settings.DATABASES["default"], "OPTIONS",
                        {**settings.DATABASES["default"].get("OPTIONS", {}),
                         "server_side_binding": True})
    with override_settings(JOB_TRANSACTION_POOLER=True, JOB_LISTEN_DATABASE_URL=DIRECT):
        found = ids()
    assert set(found) == {"django_pg_jobqueue.E040"}
    assert "server_side_binding" in found["django_pg_jobqueue.E040"].msg


@pytest.mark.parametrize("value", ["not a url at all = =", 5, None])
def test_a_listen_url_that_is_not_a_connection_string_is_refused(value):
    with override_settings(JOB_LISTEN_DATABASE_URL=value):
        assert set(ids()) == {"django_pg_jobqueue.E041"}


def test_job_database_must_name_an_alias_of_databases():
    with override_settings(JOB_DATABASE="nope"):
        found = ids()
    assert set(found) == {"django_pg_jobqueue.E042"}
    assert "'default'" in found["django_pg_jobqueue.E042"].msg


def test_the_router_sends_the_queue_to_its_alias_and_keeps_other_apps_out_of_it():
    from django.contrib.auth import get_user_model

    from django_pg_jobqueue.models import Job

    router, user = JobQueueRouter(), get_user_model()
    settings.DATABASES.setdefault("queue_test_alias", {})  # only for the rule's alias list
    try:
        with override_settings(JOB_DATABASE="queue_test_alias"):
            assert router.db_for_read(Job) == router.db_for_write(Job) == "queue_test_alias"
            assert router.db_for_read(user) is None  # the next router, or "default", decides
            assert router.allow_migrate("queue_test_alias", "django_pg_jobqueue") is True
            assert router.allow_migrate("default", "django_pg_jobqueue") is False
            assert router.allow_migrate("queue_test_alias", "auth") is False
            assert router.allow_migrate("default", "auth") is None
    finally:
        del settings.DATABASES["queue_test_alias"]
    # With the queue on "default" (the default), the router changes nothing.
    assert router.allow_migrate("default", "django_pg_jobqueue") is True
    assert router.allow_migrate("default", "auth") is None
