"""Retrying a job enqueued after others: while its dependencies have not all succeeded it goes
back to `waiting` (not `queued`) and is settled again, unblocked once they succeed; while one
it must not outlive is failed or cancelled, a retry of it alone is refused (retry that one
first, or both together); a retry of the whole chain at once runs it in order again."""
import pytest
from django.core.management import call_command

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import DependencyNotRetried
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services.bulk_retry import retry_ids

pytestmark = pytest.mark.django_db
JOBS = "/api/v1/jobs/"


def _run(job, *, fail=False):
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job.id])
    if fail:
        services.fail(claimed.id, claimed.lease_token, worker_id="w", error="boom", permanent=True)
    else:
        services.complete(claimed.id, claimed.lease_token, worker_id="w", result=None)


def _status(job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def _kinds(job) -> list[str]:
    return list(JobEvent.objects.filter(job_id=job.pk).order_by("id").values_list("kind", flat=True))


def test_a_retried_dependant_waits_again_and_runs_only_after_its_retried_dependency_succeeds():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a, fail=True)
    assert _status(b) == "cancelled"

    services.retry(a.id)
    retried = services.retry(b.id)

    assert retried.status == "waiting" and _status(b) == "waiting"
    assert _kinds(b)[-2:] == ["retried", "blocked"]
    blocked = JobEvent.objects.filter(job_id=b.id, kind="blocked").order_by("id").last()
    assert (blocked.message, blocked.data) == (f"waiting again for job {a.id}", {"after": [a.id]})
    assert [c.id for c in services.claim(worker_ids=["w1", "w2"])] == [a.id], "b is not claimed"
    a_now = Job.objects.get(pk=a.pk)
    services.complete(a.id, a_now.lease_token, worker_id="w1", result=None)
    assert _status(b) == "queued"
    assert _kinds(b)[-1] == "unblocked"
    call_command("audit_jobs")  # the history's transitions are all known ones


def test_a_retried_dependant_is_cancelled_again_if_its_dependency_fails_again():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a, fail=True)
    retry_ids([a.id, b.id])
    assert (_status(a), _status(b)) == ("queued", "waiting")
    _run(a, fail=True)
    assert _status(b) == "cancelled"
    assert JobEvent.objects.filter(job_id=b.id, kind="cancelled").count() == 2


def test_retrying_a_dependant_alone_while_its_dependency_is_failed_is_refused_and_changes_nothing():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a, fail=True)
    before = _kinds(b)
    with pytest.raises(DependencyNotRetried) as refused:
        services.retry(b.id)
    assert str(refused.value) == (f"cannot retry job {b.id}: job {a.id}, which it waits for, "
                                  f"failed; retry job {a.id} first, or both together")
    assert (_status(b), _kinds(b)) == ("cancelled", before)
    assert retry_ids([b.id]) == (0, [b.id])


def test_the_whole_chain_retried_at_once_runs_in_order_again():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    c = services.enqueue("noop", after=[b.id])
    _run(a, fail=True)
    assert (_status(b), _status(c)) == ("cancelled", "cancelled")
    assert retry_ids([c.id, b.id, a.id]) == (3, [])
    assert [_status(j) for j in (a, b, c)] == ["queued", "waiting", "waiting"]
    _run(a)
    assert (_status(b), _status(c)) == ("queued", "waiting")
    _run(b)
    assert _status(c) == "queued"


def test_a_dependant_whose_dependencies_succeeded_is_queued_as_before():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a)
    _run(b, fail=True)
    assert services.retry(b.id).status == "queued"
    assert _kinds(b)[-1] == "retried"


def test_an_operator_cancelled_waiting_job_retried_waits_for_its_still_running_dependency():
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    services.claim(worker_ids=["w"], job_ids=[a.id])
    services.cancel(b.id)
    assert services.retry(b.id).status == "waiting"  # before: queued, and it ran before a


def test_after_failure_run_dependants_may_be_retried_after_a_failure_and_wait_for_a_retried_one():
    a = services.enqueue("noop")
    cleanup = services.enqueue("noop", after=[a.id], after_failure="run")
    _run(a, fail=True)
    _run(cleanup, fail=True)
    assert services.retry(cleanup.id).status == "queued"  # a finished: nothing to wait for
    _run(cleanup, fail=True)
    retry_ids([a.id, cleanup.id])
    assert _status(cleanup) == "waiting"  # a runs again first


def test_the_api_refuses_the_retry_with_409_and_says_which_job_to_retry_first(make_user,
                                                                              client_for):
    api = client_for(make_user("ops", perms=["add_job", "view_job", "change_job"]))
    a = services.enqueue("noop")
    b = services.enqueue("noop", after=[a.id])
    _run(a, fail=True)
    response = api.post(f"{JOBS}{b.id}/retry/", {}, format="json")
    assert response.status_code == 409, response.json()
    assert f"retry job {a.id} first" in str(response.json())
    assert api.post(f"{JOBS}{a.id}/retry/", {}, format="json").status_code == 200
    answer = api.post(f"{JOBS}{b.id}/retry/", {}, format="json")
    assert answer.status_code == 200 and answer.json()["status"] == "waiting", answer.json()
