"""An add_job user chooses a job's queue, priority, schedule and timeout only within the
operator's bounds (JOB_API_QUEUES, JOB_API_MAX_PRIORITY, JOB_API_MAX_DELAY_SECONDS,
JOB_API_MAX_TIMEOUT_SECONDS), whose library defaults are safe: no made-up queues (each one
label series of the anonymous /metrics), nothing ahead of the code's default-priority jobs,
nothing parked for years, no month-long timeouts. Beyond them: a 400 naming the field, from
one job or a bulk request, and nothing written. Python's enqueue() is not bounded by them."""
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import conf, services
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
DAY = 86400


def refused(client, fields: dict, field: str, *, words: str) -> None:
    """One job and a bulk request (the bad job second) are each a 400 naming `field`."""
    before = Job.objects.count()
    body = {"type": "noop", **fields}
    one = client.post(JOBS, body, format="json")
    assert one.status_code == 400, one.json()
    assert list(one.json()["errors"]) == [field] and words in one.json()["detail"]
    bulk = client.post(JOBS + "bulk/", {"jobs": [{"type": "noop"}, body]}, format="json")
    assert bulk.status_code == 400, bulk.json()
    assert field in bulk.json()["errors"]["jobs"]["1"]
    assert Job.objects.count() == before


def created(client, fields: dict) -> Job:
    response = client.post(JOBS, {"type": "noop", **fields}, format="json")
    assert response.status_code == 201, response.json()
    return Job.objects.get(pk=response.json()["id"])


def test_the_library_defaults_are_bounds():
    assert conf.default("JOB_API_QUEUES") is None  # a queue that exists
    assert conf.default("JOB_API_MAX_PRIORITY") == 0
    assert conf.default("JOB_API_MAX_DELAY_SECONDS") == 30 * DAY
    assert conf.default("JOB_API_MAX_TIMEOUT_SECONDS") == DAY


# -- queues ---------------------------------------------------------------------------------

def test_an_api_user_cannot_make_up_queues(operator_client):
    for name in ("q-0001", "made-up", "reports"):
        refused(operator_client, {"queue": name}, "queue", words="not a queue the API may")
    assert not Job.objects.exclude(queue="default").exists()
    services.enqueue("noop", queue="reports")  # Python may; the queue exists from then on
    assert created(operator_client, {"queue": "reports"}).queue == "reports"
    assert created(operator_client, {"queue": "default"}).queue == "default"  # noop's
    assert created(operator_client, {}).queue == "default"


def test_a_queue_a_handler_declares_is_open_before_its_first_job(operator_client, custom_handler):
    custom_handler("thumbnail", lambda payload: None, queue="media")
    with override_settings(JOB_API_CREATABLE_TYPES=["noop", "thumbnail"]):
        assert created(operator_client, {"queue": "media"}).queue == "media"


@override_settings(JOB_API_QUEUES=["reports"])
def test_with_a_list_only_those_queues_may_be_named(operator_client):
    services.enqueue("noop", queue="exports")
    assert created(operator_client, {"queue": "reports"}).queue == "reports"
    refused(operator_client, {"queue": "exports"}, "queue", words="JOB_API_QUEUES")
    refused(operator_client, {"queue": "default"}, "queue", words="JOB_API_QUEUES")
    assert created(operator_client, {}).queue == "default"  # the type's own queue


# -- priority -------------------------------------------------------------------------------

def test_an_api_user_cannot_go_ahead_of_the_codes_jobs(operator_client):
    refused(operator_client, {"priority": 100}, "priority", words="at most 0")
    refused(operator_client, {"priority": 1}, "priority", words="JOB_API_MAX_PRIORITY")
    assert created(operator_client, {"priority": 0}).priority == 0
    assert created(operator_client, {"priority": -100}).priority == -100
    assert services.enqueue("noop", priority=100).priority == 100


def test_a_types_own_priority_is_the_codes_choice(operator_client, custom_handler):
    custom_handler("urgent", lambda payload: None, priority=50)
    with override_settings(JOB_API_CREATABLE_TYPES=["noop", "urgent"]):
        response = operator_client.post(JOBS, {"type": "urgent"}, format="json")
    assert response.status_code == 201 and response.json()["priority"] == 50


@override_settings(JOB_API_MAX_PRIORITY=50)
def test_the_operator_sets_the_highest_priority(operator_client):
    assert created(operator_client, {"priority": 50}).priority == 50
    refused(operator_client, {"priority": 51}, "priority", words="at most 50")


# -- how far ahead ----------------------------------------------------------------------------

def test_an_api_user_cannot_park_jobs_for_years(operator_client):
    refused(operator_client, {"run_at": "9999-12-31T23:59:59Z"}, "run_at",
            words="JOB_API_MAX_DELAY_SECONDS")
    later = timezone.now() + timedelta(days=31)
    refused(operator_client, {"run_at": later.isoformat()}, "run_at", words="from now")
    refused(operator_client, {"delay_seconds": 30 * DAY + 1}, "delay_seconds",
            words="at most 2592000")
    soon = (timezone.now() + timedelta(days=29)).replace(microsecond=0)
    assert created(operator_client, {"run_at": soon.isoformat()}).available_at == soon
    assert created(operator_client, {"delay_seconds": 30 * DAY}).status == "queued"
    far = datetime(9999, 12, 31, tzinfo=UTC)
    assert services.enqueue("noop", run_at=far).available_at == far


@override_settings(JOB_API_MAX_DELAY_SECONDS=60)
def test_the_operator_sets_the_horizon(operator_client):
    assert created(operator_client, {"delay_seconds": 60}).status == "queued"
    refused(operator_client, {"delay_seconds": 61}, "delay_seconds", words="at most 60")


# -- timeouts -------------------------------------------------------------------------------

def test_an_api_user_cannot_give_a_job_a_month_to_run(operator_client):
    refused(operator_client, {"timeout_seconds": 30 * DAY}, "timeout_seconds",
            words="JOB_API_MAX_TIMEOUT_SECONDS")
    refused(operator_client, {"timeout_seconds": DAY + 1}, "timeout_seconds", words="at most 86400")
    assert created(operator_client, {"timeout_seconds": DAY}).timeout_seconds == DAY
    assert services.enqueue("noop", timeout_seconds=30 * DAY).timeout_seconds == 30 * DAY


@override_settings(JOB_API_MAX_TIMEOUT_SECONDS=3600)
def test_the_operator_sets_the_longest_timeout(operator_client):
    assert created(operator_client, {"timeout_seconds": 3600}).timeout_seconds == 3600
    refused(operator_client, {"timeout_seconds": 3601}, "timeout_seconds", words="at most 3600")


# -- settings -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value"), [
    ("API_QUEUES", "default,reports"), ("API_QUEUES", ["has space"]),
    ("API_MAX_PRIORITY", 101), ("API_MAX_PRIORITY", 1.5),
    ("API_MAX_DELAY_SECONDS", -1), ("API_MAX_TIMEOUT_SECONDS", 0),
    ("API_MAX_TIMEOUT_SECONDS", 31 * DAY),
])
def test_a_bad_bound_is_a_settings_error_naming_it(name, value):
    [problem] = conf.problems({name: value})
    assert f"JOB_{name}" in problem.message
