"""The queue in a database of its own: JOB_DATABASE = "queue", with the router.

The suite's own settings have one database, so the driver test runs this module again in a
pytest subprocess with JOB_DATABASE_URL set: the demo settings then define the alias "queue"
(a second test database on the same server), set JOB_DATABASE = "queue" and add
django_pg_jobqueue.routers.JobQueueRouter. The application's models (auth, sessions,
tokens) stay on "default"; the queue's tables, its workers, enqueue, the Tasks backend, the
API, the admin and the metrics use "queue".
"""
import os
import signal
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connections, transaction

from django_pg_jobqueue import enqueue
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.tasks_compat import TaskResultStatus, task
from tests.utils import REPO, wait_until_jobs

INNER = "queue" in settings.DATABASES
inner = pytest.mark.skipif(
    not INNER, reason="runs in the subprocess of test_the_queue_runs_from_a_second_alias")


@task
def add(a, b):
    return a + b


def _url(alias: str) -> str:
    s = connections[alias].settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def _tables(alias: str) -> set[str]:
    with connections[alias].cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in cur.fetchall()}


@pytest.mark.skipif(INNER, reason="the driver runs outside the subprocess only")
@pytest.mark.e2e
def test_the_queue_runs_from_a_second_alias(db):
    name = connections["default"].settings_dict["NAME"]
    s = connections["default"].settings_dict
    env = {**os.environ,
           "TEST_DATABASE_NAME": f"{name}_alias_app",
           "JOB_DATABASE_URL": f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{name}_alias_queue",
           "JOB_TEST_DATABASE_NAME": f"{name}_alias_queue"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--create-db",
         "-o", "addopts=-ra --strict-markers -p no:cacheprovider", __file__],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    print(result.stdout[-3000:])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "skipped" in result.stdout  # the driver skips itself
    assert "failed" not in result.stdout


pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "queue"]) \
    if INNER else []


@inner
def test_the_queue_tables_live_in_the_queue_database_and_the_apps_in_default():
    queue, app = _tables("queue"), _tables("default")
    assert {"jobs", "job_events", "job_workers", "job_queue_settings"} <= queue
    assert not queue & {"auth_user", "django_session", "django_content_type"}
    assert "auth_user" in app and not app & {"jobs", "job_events"}
    assert settings.JOB_DATABASE == "queue"


@inner
def test_enqueue_is_part_of_a_transaction_on_the_queue_alias():
    with pytest.raises(RuntimeError):
        with transaction.atomic(using="queue"):
            enqueue("noop", {"rolled": "back"})
            raise RuntimeError("undo")
    assert not Job.objects.filter(payload__rolled="back").exists()
    with transaction.atomic(using="queue"):
        job = enqueue("noop", {"kept": True})
    assert Job.objects.using("queue").filter(pk=job.pk).exists()


@inner
def test_enqueue_is_not_part_of_a_transaction_on_the_default_alias():
    """What a separate database costs: the job commits on its own, whatever the caller's
    transaction on "default" does."""
    with pytest.raises(RuntimeError):
        with transaction.atomic(using="default"):
            enqueue("noop", {"outlives": "the rollback"})
            raise RuntimeError("undo")
    assert Job.objects.filter(payload__outlives="the rollback").exists()


@inner
def test_workers_api_admin_metrics_and_tasks_all_use_the_queue_alias(client):
    from django.contrib.auth import get_user_model

    job = enqueue("noop", {"from": "enqueue"})
    result = add.enqueue(2, 3)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "DATABASE_URL": _url("default"),
           "JOB_DATABASE_URL": _url("queue"),
           # this module too: the worker runs only tasks it has loaded or that live in an
           # installed app, and `tests` is none
           "JOB_EXTRA_HANDLER_MODULES": "django_pg_jobqueue.builtin_handlers,tests.system.test_database_alias"}
    worker = subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "run_job_workers", "--threads", "2"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_jobs("succeeded", count=2, timeout=60,
                        message="both jobs to succeed on the worker")
    finally:
        worker.send_signal(signal.SIGTERM)
        log = worker.communicate(timeout=30)[0]
    assert "Traceback" not in log, log
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5

    user = get_user_model().objects.create_superuser("admin", password="pw-for-tests-1")
    assert get_user_model().objects.using("default").filter(pk=user.pk).exists()
    client.force_login(user)
    page = client.get("/admin/django_pg_jobqueue/job/")
    assert page.status_code == 200 and f">{job.pk}<" in page.content.decode()
    listing = client.get("/api/v1/jobs/", HTTP_ACCEPT="application/json")
    assert listing.status_code == 200, listing.content
    assert {j["id"] for j in listing.json()["results"]} >= {job.pk, int(result.id)}
    detail = client.get(f"/api/v1/jobs/{job.pk}/events/", HTTP_ACCEPT="application/json")
    assert detail.status_code == 200
    health = client.get("/api/health/", HTTP_ACCEPT="application/json")
    assert health.status_code == 200 and health.json()["migrations"] == "ok", health.json()
    metrics = client.get("/metrics").content.decode()
    assert 'status="succeeded"' in metrics and 'queue="default"' in metrics
