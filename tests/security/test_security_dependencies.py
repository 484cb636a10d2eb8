"""What `after=` may name and how much of it: bounded per job and per batch (a batch names
few enough jobs that locking them stays short), every entry counted by the creation
throttle, and, from the API, only jobs the user may see: any other id is answered exactly as
one that does not exist."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import cancel, enqueue, enqueue_many
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, JobDependency, JobEvent

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
BULK = JOBS + "bulk/"


def _existing(n: int) -> list[int]:
    return [job.id for job in enqueue_many([{"type": "noop"}] * n)]


def _snapshot():
    return (sorted(Job.objects.values_list("id", "status", "has_dependants")),
            JobDependency.objects.count(), JobEvent.objects.count())


@override_settings(JOB_MAX_AFTER=3)
def test_enqueue_refuses_more_dependencies_per_job_than_the_bound():
    ids = _existing(4)
    before = _snapshot()
    with pytest.raises(InvalidJobArgument) as raised:
        enqueue("noop", after=ids)
    assert raised.value.argument == "after" and "JOB_MAX_AFTER" in str(raised.value)
    assert _snapshot() == before
    enqueue("noop", after=ids[:3] + ids[:3])  # repeats count once


@override_settings(JOB_MAX_AFTER_PER_BATCH=5)
def test_enqueue_many_refuses_more_distinct_dependencies_than_the_batch_bound():
    ids = _existing(6)
    before = _snapshot()
    items = [{"type": "noop", "after": ids[:3]}, {"type": "noop", "after": ids[2:5]},
             {"type": "noop", "after": ids[3:]}]  # the third brings the sixth distinct job
    with pytest.raises(InvalidJobArgument) as raised:
        enqueue_many(items)
    assert raised.value.argument == "after" and raised.value.index == 2
    assert "JOB_MAX_AFTER_PER_BATCH" in str(raised.value)
    assert _snapshot() == before
    # References to the batch's own jobs do not count.
    enqueue_many(items[:2] + [{"type": "noop", "after": [{"item": 0}, {"item": 1}]}])


@override_settings(JOB_MAX_AFTER=100, JOB_MAX_AFTER_PER_BATCH=1000, JOB_CREATE_RATE="100000/min")
def test_a_bulk_request_over_the_dependency_bounds_is_a_400_that_changes_nothing(operator_client):
    ids = _existing(1001)
    before = _snapshot()
    over_per_job = [{"type": "noop", "after": ids[:101], "after_failure": "run"}]
    response = operator_client.post(BULK, {"jobs": over_per_job}, format="json")
    assert response.status_code == 400, response.json()
    assert set(response.json()["errors"]["jobs"]["0"]) == {"after"}
    over_per_batch = [{"type": "noop", "after": ids[i:i + 100], "after_failure": "run"}
                      for i in range(0, 1001, 100)]  # 11 jobs, 1,001 distinct ids
    response = operator_client.post(BULK, {"jobs": over_per_batch}, format="json")
    assert response.status_code == 400, response.json()
    assert set(response.json()["errors"]["jobs"]) == {"10"}
    assert "JOB_MAX_AFTER_PER_BATCH" in response.json()["detail"]
    assert _snapshot() == before  # not a job, an edge, an event nor a has_dependants mark


@override_settings(JOB_CREATE_RATE="10/min")
def test_each_dependency_counts_against_the_create_rate(operator_client):
    ids = _existing(10)
    response = operator_client.post(JOBS, {"type": "noop", "after": ids[:7]}, format="json")
    assert response.status_code == 201  # 1 job + 7 dependencies = 8 of 10
    refused = operator_client.post(JOBS, {"type": "noop", "after": ids[:2]}, format="json")
    assert refused.status_code == 429  # 8 + 3 > 10
    assert operator_client.post(JOBS, {"type": "noop", "after": ids[:1]},
                                format="json").status_code == 201  # exactly 10
    too_many = operator_client.post(BULK, {"jobs": [{"type": "noop", "after": ids}]},
                                    format="json")
    assert too_many.status_code == 400  # 11: more than a whole period allows
    assert "dependencies" in too_many.json()["detail"]


@pytest.fixture
def producer_client(make_user, client_for):
    return client_for(make_user("producer-only", perms=["add_job"]))


def _answer(client, url, body):
    response = client.post(url, body, format="json")
    return response.status_code, response.json()


def test_an_api_user_who_may_not_see_jobs_cannot_tell_one_from_a_missing_one(producer_client):
    queued, cancelled = _existing(2)
    cancel(cancelled, actor="test")
    missing = cancelled + 1000
    before = _snapshot()
    for url, body in ((JOBS, lambda i: {"type": "noop", "after": [i]}),
                      (BULK, lambda i: {"jobs": [{"type": "noop"},
                                                 {"type": "noop", "after": [i]}]})):
        answers = [_answer(producer_client, url, body(i)) for i in (queued, cancelled, missing)]
        assert all(status == 400 for status, _ in answers), answers
        texts = [str(body).replace(str(i), "N")
                 for (_, body), i in zip(answers, (queued, cancelled, missing), strict=True)]
        assert texts[0] == texts[1] == texts[2], texts
        assert "does not exist" in texts[0]
    assert _snapshot() == before  # nor has_dependants on another user's job
    # The batch's own jobs it may still name.
    status, body = _answer(producer_client, BULK, {"jobs": [{"type": "noop"},
                                                            {"type": "noop",
                                                             "after": [{"item": 0}]}]})
    assert status == 201 and body["jobs"][1]["status"] == "waiting"


def test_an_api_user_who_may_see_jobs_and_python_callers_may_name_any(make_user, client_for):
    target = _existing(1)[0]
    viewer_producer = client_for(make_user("viewer-producer", perms=["add_job", "view_job"]))
    status, body = _answer(viewer_producer, JOBS, {"type": "noop", "after": [target]})
    assert status == 201 and body["status"] == "waiting"
    assert enqueue("noop", after=[target]).status == "waiting"
    with override_settings(JOB_API_PUBLIC_READ=True):
        producer = client_for(make_user("producer-public-read", perms=["add_job"]))
        assert _answer(producer, JOBS, {"type": "noop", "after": [target]})[0] == 201
