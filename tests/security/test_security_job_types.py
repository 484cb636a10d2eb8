"""The job API creates only what the host opened to it (JOB_API_CREATABLE_TYPES and
JOB_API_CREATABLE_TASKS), and the worker resolves a Django task's path without importing
arbitrary modules."""
import sys
import textwrap

import pytest
from django.tasks import task
from django.test import override_settings

from django_pg_jobqueue import enqueue, services
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.testing import drain

JOBS = "/api/v1/jobs/"
BULK = "/api/v1/jobs/bulk/"
TYPES = "/api/v1/job-types/"

pytestmark = pytest.mark.django_db


@task
def creatable_task(n):
    return n * 2


@task
def other_task():
    return "ran"


TASK_PATH = creatable_task.module_path


def _task_payload(path, **extra):
    return {"task": path, "args": [21], "kwargs": {}, "backend": "default", **extra}


@override_settings(JOB_API_CREATABLE_TYPES=[])
def test_by_default_the_api_creates_no_job_and_writes_nothing(operator_client):
    response = operator_client.post(JOBS, {"type": "noop"}, format="json")
    assert response.status_code == 400, response.content
    assert "cannot be created through the API" in response.json()["errors"]["type"][0]
    assert not Job.objects.exists()


@override_settings(JOB_API_CREATABLE_TYPES=["noop"])
def test_a_type_not_listed_is_refused_and_a_listed_one_is_created(operator_client):
    refused = operator_client.post(JOBS, {"type": "email_send"}, format="json")
    assert refused.status_code == 400
    assert "JOB_API_CREATABLE_TYPES" in refused.json()["errors"]["type"][0]
    assert not Job.objects.exists()
    created = operator_client.post(JOBS, {"type": "noop"}, format="json")
    assert created.status_code == 201, created.content


@override_settings(JOB_API_CREATABLE_TYPES=["noop"])
def test_a_bulk_with_one_type_not_listed_creates_nothing(operator_client):
    response = operator_client.post(BULK, {"jobs": [{"type": "noop"}, {"type": "email_send"}]},
                                    format="json")
    assert response.status_code == 400
    assert "type" in response.json()["errors"]["jobs"]["1"]
    assert not Job.objects.exists()


def test_the_api_cannot_create_a_django_task_by_default(operator_client):
    for path in (TASK_PATH, "os.system"):
        response = operator_client.post(
            JOBS, {"type": "django_task", "payload": _task_payload(path)}, format="json")
        assert response.status_code == 400, response.content
        assert "JOB_API_CREATABLE_TASKS" in response.json()["errors"]["type"][0]
    assert not Job.objects.exists()


@override_settings(JOB_API_CREATABLE_TASKS=[TASK_PATH])
def test_only_the_listed_tasks_can_be_created_through_the_api(operator_client):
    for path in (other_task.module_path, "os.system", None):
        response = operator_client.post(
            JOBS, {"type": "django_task", "payload": _task_payload(path)}, format="json")
        assert response.status_code == 400, response.content
        assert "JOB_API_CREATABLE_TASKS" in response.json()["errors"]["payload"][0]
    assert not Job.objects.exists()
    created = operator_client.post(
        JOBS, {"type": "django_task", "payload": _task_payload(TASK_PATH)}, format="json")
    assert created.status_code == 201, created.content
    drain()
    job = Job.objects.get(pk=created.json()["id"])
    assert job.status == "succeeded" and job.result == 42


def test_enqueue_from_python_still_creates_any_registered_type():
    with override_settings(JOB_API_CREATABLE_TYPES=[]):
        job = enqueue("email_send", {"to": "a@example.com"})
        other = other_task.enqueue()
    assert Job.objects.filter(pk=job.pk).exists()
    assert Job.objects.filter(pk=int(other.id), type=other_task.module_path).exists()


@override_settings(JOB_API_CREATABLE_TYPES=["noop"])
def test_job_types_say_which_types_the_api_may_create(client_for, viewer):
    types = {t["name"]: t for t in client_for(viewer).get(TYPES).json()}
    assert types["noop"]["creatable"] is True
    assert types["email_send"]["creatable"] is False
    assert types["django_task"]["creatable"] is False


def test_the_service_refuses_for_the_api_and_names_the_argument():
    from django_pg_jobqueue.exceptions import NotCreatable

    with override_settings(JOB_API_CREATABLE_TYPES=[]), pytest.raises(NotCreatable) as caught:
        services.enqueue_or_get("noop", from_api=True)
    assert caught.value.argument == "type"
    assert not Job.objects.exists()


@override_settings(JOB_API_CREATABLE_TYPES=["noop", "email_send"])
def test_the_service_refuses_an_unknown_type_for_the_api_listing_what_it_may_create():
    """The type is checked once, by the service: the API's 400 on `type` is its message."""
    from django_pg_jobqueue.exceptions import UnknownJobType

    with pytest.raises(UnknownJobType) as caught:
        services.enqueue_or_get("nope", from_api=True)
    assert caught.value.argument == "type"
    head, _, listed = caught.value.detail.partition("; types the API may create: ")
    assert head == "unknown job type 'nope'"
    assert set(listed.rstrip(".").split(", ")) == {"noop", "email_send"}
    with pytest.raises(UnknownJobType) as from_python:
        services.enqueue("nope")  # a Python caller is told only that the type is unknown
    assert from_python.value.detail == "unknown job type 'nope'"


@override_settings(JOB_API_CREATABLE_TYPES=["noop"])
def test_an_unknown_type_in_a_bulk_is_a_400_on_that_items_type(operator_client):
    response = operator_client.post(BULK, {"jobs": [{"type": "noop"}, {"type": "nope"}]},
                                    format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["errors"]["jobs"]["1"]["type"] == [
        "unknown job type 'nope'; types the API may create: noop."]
    assert not Job.objects.exists()


@override_settings(JOB_API_CREATABLE_TYPES=["django_task"])
def test_the_check_refuses_django_task_in_the_creatable_types():
    from django_pg_jobqueue.conf import check_settings

    errors = {e.id: e.msg for e in check_settings()}
    assert "JOB_API_CREATABLE_TASKS" in errors["django_pg_jobqueue.E051"]


# -- the worker: no import of arbitrary modules --------------------------------------------
@pytest.fixture
def side_effect_module(tmp_path, monkeypatch):
    """A module outside every installed app whose import leaves a mark."""
    name = "jobqueue_import_side_effect"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(tmp_path / "imported")!r}).write_text("yes")
        def run(*args, **kwargs):
            pathlib.Path({str(tmp_path / "called")!r}).write_text("yes")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, tmp_path
    sys.modules.pop(name, None)


def test_the_worker_never_imports_a_task_path_outside_the_registered_tasks(side_effect_module):
    name, where = side_effect_module
    job = enqueue("django_task", {"task": f"{name}.run", "args": [], "kwargs": {},
                                  "backend": "default"})
    drain()
    job.refresh_from_db()
    assert not (where / "imported").exists(), "the worker imported a module it was handed"
    assert name not in sys.modules
    assert job.status == "failed" and job.attempts == 1  # permanently, not retried
    assert "not a registered task" in job.last_error


def test_the_worker_refuses_a_callable_that_is_not_a_task(transactional_db):
    job = enqueue("django_task", {"task": "os.system", "args": ["true"], "kwargs": {},
                                  "backend": "default"})
    drain()
    job.refresh_from_db()
    assert job.status == "failed" and job.attempts == 1
    assert "not a registered task" in job.last_error


def test_the_worker_still_runs_a_registered_task(transactional_db):
    result = creatable_task.enqueue(4)
    drain()
    job = Job.objects.get(pk=int(result.id))
    assert job.status == "succeeded" and job.result == 8


@override_settings(JOB_API_CREATABLE_TASKS=[TASK_PATH])
def test_a_creatable_task_posted_by_its_path_is_told_how_to_name_it_not_called_unknown(
        operator_client):
    response = operator_client.post(JOBS, {"type": TASK_PATH, "payload": {"args": [21]}},
                                    format="json")
    assert response.status_code == 400, response.content
    message = response.json()["errors"]["payload"][0]
    assert "unknown" not in message and f"'task': '{TASK_PATH}'" in message
    assert not Job.objects.exists()


@override_settings(JOB_API_CREATABLE_TASKS=[TASK_PATH])
def test_a_task_job_without_a_backend_names_what_is_missing():
    from django_pg_jobqueue.exceptions import InvalidJobArgument

    with pytest.raises(InvalidJobArgument, match=r"payload\['backend'\] is required"):
        services.enqueue_or_get("django_task", {"task": TASK_PATH, "args": [21]}, from_api=True)
    assert not Job.objects.exists()
