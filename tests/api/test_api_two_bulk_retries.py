"""The API's two ways to retry many jobs differ on purpose (docs/how-to/api.md, "Two ways to
retry many jobs"): POST jobs/retry/ is the dead letter's retry, by what a failure was, all the
given ids in one statement; POST jobs/actions/ with `retry` is the single-job retry applied
to each job of a selection by the job list's filters, each refusal reported."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db

RETRY = "/api/v1/jobs/retry/"
ACTIONS = "/api/v1/jobs/actions/"


@pytest.fixture
def operator(make_user, client_for):
    return client_for(make_user("retrier", perms=["view_job", "change_job"]))


def _failed(job) -> None:
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job.id])
    services.fail(claimed.id, claimed.lease_token, worker_id="w", error="boom", permanent=True)


def _chain():
    """A failed job and the job enqueued after it, cancelled by its failure."""
    first = services.enqueue("noop", max_attempts=1)
    then = services.enqueue("noop", after=[first.id])
    _failed(first)
    return first.id, then.id


def _status(*ids) -> list[str]:
    return [Job.objects.get(pk=job_id).status for job_id in ids]


def test_ids_are_retried_together_by_the_dead_letter_and_one_by_one_by_the_actions(operator):
    first, then = _chain()
    response = operator.post(RETRY, {"ids": [then, first]}, format="json")
    # One statement: the job and the job it waits for come back together, in any order.
    assert response.json() == {"retried": 2, "not_retried": []}
    assert _status(first, then) == ["queued", "waiting"]

    first, then = _chain()
    response = operator.post(ACTIONS, {"action": "retry", "ids": [then, first]}, format="json")
    # Each job through services.retry, in the order given: the dependant comes first, while
    # the job it waits for is still failed, and is refused with the reason.
    body = response.json()
    assert (body["done"], body["refused_count"]) == (1, 1)
    assert body["refused"][0]["id"] == then
    assert body["refused"][0]["reason"] == "invalid_transition"
    assert _status(first, then) == ["queued", "cancelled"]


def test_the_dead_letter_takes_failed_jobs_only_and_the_actions_any_status_they_may_retry(
        operator):
    failed_job = services.enqueue("noop", max_attempts=1)
    _failed(failed_job)
    cancelled_job = services.enqueue("noop")
    services.cancel(cancelled_job.id)

    assert operator.post(RETRY, {"all": True}, format="json").json() == {
        "retried": 1, "not_retried": []}
    assert _status(failed_job.id, cancelled_job.id) == ["queued", "cancelled"]

    body = operator.post(ACTIONS, {"action": "retry", "all": True}, format="json").json()
    # Every job: the cancelled one is retried, the queued one refused and listed.
    assert body["done"] == 1
    assert [(r["id"], r["reason"], r["status"]) for r in body["refused"]] == [
        (failed_job.id, "invalid_transition", "queued")]
    assert _status(cancelled_job.id) == ["queued"]


def test_the_dead_letters_retry_by_filter_marks_its_events_as_bulk_and_the_actions_do_not(
        operator):
    by_filter, by_action = (services.enqueue(t, max_attempts=1) for t in ("noop", "sleep"))
    _failed(by_filter)
    _failed(by_action)

    operator.post(RETRY, {"type": "noop"}, format="json")
    operator.post(ACTIONS, {"action": "retry", "filter": {"type": "sleep"}}, format="json")

    bulk, single = (JobEvent.objects.get(job_id=job.id, kind="retried")
                    for job in (by_filter, by_action))
    assert (bulk.data, bulk.message) == ({"bulk": True}, "retried from failed (bulk) by retrier")
    assert (single.data, single.message) == ({}, "retried from failed by retrier")
