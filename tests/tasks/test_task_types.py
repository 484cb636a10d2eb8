"""Django tasks as first-class job types: a task's jobs are typed by the task's module path, so
lists, the type filter, the job-types endpoint, metrics and per-type concurrency limits speak
of `myapp.tasks.notify_customer`, not `django_task`; the API's rules for creating tasks and
the worker's import rules stay as they were."""
import importlib
import sys

import pytest
from django.db import connection
from django.test import override_settings

from django_pg_jobqueue import services, testing
from django_pg_jobqueue.metrics import snapshot
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.registry import registry
from django_pg_jobqueue.tasks_compat import TaskResultStatus

MODULE = "tests.handlers.tasks_with_options"
WELCOME = f"{MODULE}.send_welcome"
LIMITED = "tests.handlers.tasks_with_limits"
ALONE = f"{LIMITED}.one_at_a_time"


@pytest.fixture
def tasks():
    sys.modules.pop(MODULE, None)
    yield importlib.import_module(MODULE)
    sys.modules.pop(MODULE, None)


@pytest.fixture
def limited():
    sys.modules.pop(LIMITED, None)
    yield importlib.import_module(LIMITED)
    sys.modules.pop(LIMITED, None)
    registry.set_type_limit(ALONE, None)


@pytest.mark.django_db(transaction=True)
def test_a_tasks_jobs_are_listed_and_counted_under_its_path(tasks, operator_client):
    result = tasks.send_welcome.enqueue(7)
    other = tasks.double.enqueue(2)
    job = Job.objects.get(pk=int(result.id))
    assert job.type == WELCOME
    listed = operator_client.get("/api/v1/jobs/", {"type": WELCOME}).json()
    assert [j["id"] for j in listed["results"]] == [job.pk]
    assert testing.drain().succeeded == 2
    assert tasks.send_welcome.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert tasks.double.get_result(other.id).return_value == 4
    snap = snapshot()
    assert snap.processed[(WELCOME, "succeeded")] == 1
    assert snap.processed[(f"{MODULE}.double", "succeeded")] == 1
    assert ("django_task", "succeeded") not in snap.processed


@pytest.mark.django_db
def test_the_job_types_endpoint_lists_each_task_by_its_path(tasks, operator_client):
    types = {t["name"]: t for t in operator_client.get("/api/v1/job-types/").json()}
    assert types[WELCOME]["max_attempts"] == 5 and types[WELCOME]["timeout_seconds"] == 30
    assert types[WELCOME]["creatable"] is False
    assert types[WELCOME]["payload_example"]["task"] == WELCOME


@pytest.mark.django_db
def test_the_api_creates_a_listed_task_by_its_path_and_nothing_else(tasks, operator_client):
    payload = {"task": WELCOME, "args": [1], "kwargs": {}, "backend": "default"}
    refused = operator_client.post("/api/v1/jobs/", {"type": WELCOME, "payload": payload},
                                   format="json")
    assert refused.status_code == 400, refused.content  # not in JOB_API_CREATABLE_TASKS
    with override_settings(JOB_API_CREATABLE_TASKS=[WELCOME]):
        by_path = operator_client.post("/api/v1/jobs/", {"type": WELCOME, "payload": payload},
                                       format="json")
        assert by_path.status_code == 201, by_path.content
        assert by_path.json()["type"] == WELCOME
        # the way clients said it before: django_task with the task in the payload
        legacy = operator_client.post("/api/v1/jobs/", {"type": "django_task", "payload": payload},
                                      format="json")
        assert legacy.status_code == 201 and legacy.json()["type"] == WELCOME
        # a listed task cannot be run under another task's type
        other = {**payload, "task": f"{MODULE}.double"}
        mismatch = operator_client.post("/api/v1/jobs/", {"type": WELCOME, "payload": other},
                                        format="json")
        assert mismatch.status_code == 400, mismatch.content
        types = {t["name"]: t for t in operator_client.get("/api/v1/job-types/").json()}
        assert types[WELCOME]["creatable"] is True


@pytest.mark.django_db(transaction=True)
def test_a_task_concurrency_limit_holds_in_the_claim(limited):
    for n in range(3):
        limited.one_at_a_time.enqueue(n)
    assert registry.type_limits()[ALONE] == 1
    claimed = services.claim(worker_ids=["w1", "w2", "w3"])
    assert [c.type for c in claimed] == [ALONE]


@pytest.mark.django_db(transaction=True)
def test_a_task_job_typed_django_task_from_before_still_runs(tasks):
    result = tasks.send_welcome.enqueue(3)
    Job.objects.filter(pk=int(result.id)).update(type="django_task")
    assert testing.drain().succeeded == 1
    assert tasks.send_welcome.get_result(result.id).return_value == {"welcomed": 3}


@pytest.mark.django_db(transaction=True)
def test_the_migration_types_finished_task_jobs_by_path_and_leaves_queued_ones(tasks):
    migration = importlib.import_module("django_pg_jobqueue.migrations.0009_retry_policies")
    done = Job.objects.get(pk=int(tasks.send_welcome.enqueue(1).id))
    testing.drain()
    queued = Job.objects.get(pk=int(tasks.send_welcome.enqueue(2).id))
    Job.objects.filter(pk__in=[done.pk, queued.pk]).update(type="django_task")
    with connection.cursor() as cur:
        cur.execute(migration.TASK_JOBS_TYPED_BY_PATH)
    assert Job.objects.get(pk=done.pk).type == WELCOME
    assert Job.objects.get(pk=queued.pk).type == "django_task"
    with connection.cursor() as cur:
        cur.execute(migration.TASK_JOBS_TYPED_DJANGO_TASK)
    assert Job.objects.get(pk=done.pk).type == "django_task"


@pytest.mark.django_db
def test_assert_enqueued_of_django_task_still_finds_a_tasks_job(tasks):
    tasks.send_welcome.enqueue(5)
    [by_path] = testing.assert_enqueued(type=WELCOME)
    [legacy] = testing.assert_enqueued(type="django_task", payload_subset={"task": WELCOME})
    assert by_path.pk == legacy.pk
