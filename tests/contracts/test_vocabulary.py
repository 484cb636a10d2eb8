"""One vocabulary: the same thing has the same name wherever a job is described.

enqueue()'s arguments, the keys of an enqueue_many() item and the fields of POST /api/v1/jobs/
are one set of names; @handler, @task_options, QueueTask.using, @periodic, the context and the
test helpers use the same words for the same things; durations end in `_seconds`.
"""
import inspect

import pytest
from django.test import override_settings

from django_pg_jobqueue import (
    aenqueue,
    enqueue,
    enqueue_many,
    handler,
    task_options,
    testing,
)
from django_pg_jobqueue.api.jobs.enqueue import JobCreateSerializer
from django_pg_jobqueue.context import JobContext
from django_pg_jobqueue.exceptions import JobArgumentTypeError
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.periodic import periodic
from django_pg_jobqueue.tasks_backend import QueueTask

ENQUEUE_NAMES = set(inspect.signature(enqueue).parameters)
# One value of each of enqueue()'s arguments, valid in Python and as JSON.
ONE_OF_EACH = {"type": "noop", "payload": {"n": 1}, "priority": 3, "queue": "vocabulary",
               "run_at": None, "delay_seconds": 30, "idempotency_key": "vocabulary-1",
               "max_attempts": 2, "timeout_seconds": 7,
               "retry_policy": {"delays_seconds": [1, 5]}, "unique": {"key": "vocabulary"},
               "after": [], "after_failure": "cancel", "concurrency_key": "customer:42",
               "concurrency_key_limit": 1, "fairness_key": "tenant:a", "expires_at": None,
               "expires_in_seconds": 3600,
               # each refused beside unique (tests/services/test_enqueue_policies.py)
               "debounce": None, "throttle": None}


def _keywords(func) -> set[str]:
    return {name for name, p in inspect.signature(func).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def test_enqueue_its_batch_items_and_the_rest_api_take_the_same_names():
    assert ENQUEUE_NAMES == set(ONE_OF_EACH)
    assert set(JobCreateSerializer().fields) == ENQUEUE_NAMES


def test_aenqueue_takes_exactly_enqueues_arguments():
    assert inspect.signature(aenqueue).parameters == inspect.signature(enqueue).parameters


@pytest.mark.django_db
@override_settings(JOB_API_MAX_PRIORITY=100)  # ONE_OF_EACH's priority, above the API's default
def test_a_batch_item_and_an_api_body_accept_every_argument_of_enqueue(operator_client):
    [from_python] = enqueue_many([ONE_OF_EACH])
    body = {**ONE_OF_EACH, "idempotency_key": "vocabulary-2"}
    response = operator_client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.json()
    from_api = Job.objects.get(pk=response.json()["id"])
    for job in (from_python, from_api):
        assert (job.priority, job.queue, job.max_attempts, job.timeout_seconds) == (3, "vocabulary", 2, 7)
        assert 29 < (job.available_at - job.created_at).total_seconds() <= 31


@pytest.mark.django_db
@pytest.mark.parametrize("old_name", ["delay", "timeout", "job_type"])
def test_the_old_names_are_refused_everywhere_naming_the_argument(old_name, operator_client):
    with pytest.raises(JobArgumentTypeError) as caught:
        enqueue_many([{"type": "noop", old_name: 5}])
    assert caught.value.argument == old_name
    with pytest.raises(TypeError, match=old_name):
        enqueue("noop", **{old_name: 5})
    response = operator_client.post("/api/v1/jobs/", {"type": "noop", old_name: 5}, format="json")
    assert response.status_code == 400 and old_name in response.json()["errors"], response.json()


def test_the_per_type_and_per_task_options_are_enqueues_words():
    queue_options = {"priority", "queue", "max_attempts", "timeout_seconds", "idempotency_key",
                     "retry_policy"}
    assert _keywords(handler) - {"name", "concurrency", "description", "payload_example",
                                 "chunk_size", "chunk_wait_seconds"} \
        <= queue_options & ENQUEUE_NAMES
    # `concurrency` is a per-type (and per-task) limit, not one job's: @handler's word; so is
    # how many of the type's jobs one call takes (a chunk handler's chunk_size, its wait).
    assert _keywords(task_options) - {"concurrency"} <= ENQUEUE_NAMES
    # QueueTask.using: Django's own words (queue_name, run_after, backend) plus enqueue()'s.
    django_words = {"self", "priority", "queue_name", "run_after", "backend"}
    assert _keywords(QueueTask.using) - django_words <= ENQUEUE_NAMES
    periodic_words = {"cron", "timezone", "name", "args", "kwargs"}
    assert _keywords(periodic) - periodic_words <= ENQUEUE_NAMES


def test_the_context_and_the_test_helpers_name_a_job_as_enqueue_does():
    assert {"type", "queue", "max_attempts"} <= _keywords(JobContext)
    for helper in (testing.enqueued_jobs, testing.assert_enqueued, testing.assert_not_enqueued,
                   testing.crash_mid_handler):
        assert "type" in _keywords(helper) and "job_type" not in _keywords(helper)


def test_every_duration_is_named_in_seconds():
    names = (ENQUEUE_NAMES | _keywords(handler) | _keywords(task_options)
             | _keywords(QueueTask.using) | _keywords(periodic) | set(JobCreateSerializer().fields))
    durations = {n for n in names if "timeout" in n or "delay" in n}
    assert durations == {"timeout_seconds", "delay_seconds"}
