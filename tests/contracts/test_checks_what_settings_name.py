"""`manage.py check` looks at what the settings name, not only at their form: a database
cache whose table is missing (W401), TASKS naming this queue where Django has no Tasks
framework (E104), and creatable job types and tasks that do not exist (E402, E403)."""
import importlib.util

import django
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.test import override_settings

from django_pg_jobqueue import checks as jobqueue_checks

QUEUE_TASKS = {"default": {"BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend"}}
DATABASE_CACHE = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobqueue": {"BACKEND": "django.core.cache.backends.db.DatabaseCache",
                 "LOCATION": "jobqueue_cache"},
}


def ids(messages):
    return [m.id for m in messages]


# -- the database cache's table ------------------------------------------------------------------
@override_settings(CACHES=DATABASE_CACHE, JOB_THROTTLE_CACHE="jobqueue")
def test_a_missing_database_cache_table_is_a_warning_naming_createcachetable(db):
    assert ids(jobqueue_checks.check_cache_tables()) == []
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE jobqueue_cache")
    [warning] = jobqueue_checks.check_cache_tables()
    assert warning.id == "django_pg_jobqueue.W401"
    assert "'jobqueue_cache'" in warning.msg and "JOB_THROTTLE_CACHE" in warning.msg
    assert "createcachetable" in warning.hint
    # A warning, not an error: `migrate` (which runs the checks) is not stopped by it, and
    # `check` shows it.
    assert not warning.is_serious()
    call_command("check")


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
def test_without_a_database_cache_the_check_asks_the_database_nothing(
        db, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert jobqueue_checks.check_cache_tables() == []


@override_settings(CACHES=DATABASE_CACHE)
def test_a_database_the_check_cannot_reach_is_not_its_to_report():
    # No database access here (pytest-django refuses it, as an unreachable server would).
    assert jobqueue_checks.check_cache_tables() == []


# -- TASKS without a Tasks framework ------------------------------------------------------------
@pytest.fixture
def django_5_2_without_the_backport(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(django, "VERSION", (5, 2, 9, "final", 0))
    monkeypatch.setattr(django, "get_version", lambda *a: "5.2.9")
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "django_tasks" else find_spec(name, *a))


@override_settings(TASKS=QUEUE_TASKS)
def test_tasks_naming_this_queue_on_django_5_2_without_the_backport_is_an_error(
        django_5_2_without_the_backport):
    [error] = jobqueue_checks.check_tasks_framework()
    assert error.id == "django_pg_jobqueue.E104" and error.is_serious()
    assert "Django 5.2.9" in error.msg and "django-pg-jobqueue[tasks]" in error.hint


@override_settings(TASKS={"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}})
def test_tasks_naming_another_backend_is_not_this_queue_s_to_report(
        django_5_2_without_the_backport):
    assert jobqueue_checks.check_tasks_framework() == []


@override_settings(TASKS=QUEUE_TASKS)
def test_tasks_naming_this_queue_with_a_tasks_framework_is_fine():
    assert jobqueue_checks.check_tasks_framework() == []


# -- what the API may create --------------------------------------------------------------------
@override_settings(JOB_API_CREATABLE_TYPES=["noop", "no_such_type"])
def test_a_creatable_type_that_no_handler_registers_is_an_error():
    [error] = jobqueue_checks.check_creatable()
    assert error.id == "django_pg_jobqueue.E402" and "'no_such_type'" in error.msg
    assert "'noop'" in error.hint  # what is registered


@override_settings(JOB_API_CREATABLE_TASKS=[
    "tests.tasks.test_tasks_backend.add", "tests.no_such_module.add", "tests.tasks.test_tasks_backend.asyncio"])
def test_a_creatable_task_that_does_not_import_as_a_task_is_an_error():
    errors = jobqueue_checks.check_creatable()
    assert ids(errors) == ["django_pg_jobqueue.E403"] * 2
    by_path = {e.msg.split("lists ")[1].split(":")[0]: e.msg for e in errors}
    assert "does not import" in by_path["'tests.no_such_module.add'"]
    assert "not a Django task" in by_path["'tests.tasks.test_tasks_backend.asyncio'"]


@override_settings(JOB_API_CREATABLE_TYPES="noop,email_send", JOB_API_CREATABLE_TASKS="a.b")
def test_a_malformed_list_is_left_to_the_settings_check():
    assert jobqueue_checks.check_creatable() == []


def test_the_checks_run_with_manage_py_check():
    with override_settings(JOB_API_CREATABLE_TYPES=["no_such_type"]):
        with pytest.raises(SystemCheckError, match="django_pg_jobqueue.E402"):
            call_command("check")
