"""Editing a job that has not started: its priority and run time (services.edit), and "run now"
for a delayed one (services.run_now; POST /api/v1/jobs/{id}/run_now/, PATCH /api/v1/jobs/{id}/,
the bulk action `run_now`): only while queued or waiting, checked as enqueue() checks, each
change recorded in an `edited` event, never landing on a job a worker already claimed."""
import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import (
    InvalidJobArgument,
    InvalidTransition,
    JobArgumentTypeError,
    JobNotFound,
)
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.states import Status
from tests.utils import finish_job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def test_edit_changes_priority_and_run_time_and_records_what_changed():
    job = services.enqueue("noop", priority=1, delay_seconds=3600)
    later = timezone.now() + timedelta(hours=2)
    edited = services.edit(job.id, priority=7, run_at=later, actor="ada")
    assert (edited.priority, edited.available_at) == (7, later)
    event = JobEvent.objects.get(job=job, kind="edited")
    assert event.data["priority"] == [1, 7]
    assert event.data["actor"] == "ada" and "by ada" in event.message
    old, new = event.data["available_at"]
    assert new.startswith(later.astimezone(timezone.UTC).strftime("%Y-%m-%dT%H:%M"))
    assert old != new


def test_an_edit_that_changes_nothing_records_nothing():
    job = services.enqueue("noop", priority=3)
    services.edit(job.id, priority=3)
    assert not JobEvent.objects.filter(job=job, kind="edited").exists()


def test_run_now_makes_a_delayed_job_claimable_at_once():
    job = services.enqueue("noop", delay_seconds=3600)
    assert services.claim(worker_ids=["test-1-0"]) == []
    services.run_now(job.id, actor="ops")
    claimed = services.claim(worker_ids=["test-1-0"])
    assert [c.id for c in claimed] == [job.id]
    assert JobEvent.objects.filter(job=job, kind="edited").count() == 1


def test_run_now_leaves_a_due_job_as_it_is():
    job = services.enqueue("noop")
    before = Job.objects.get(pk=job.id).available_at
    services.run_now(job.id)
    assert Job.objects.get(pk=job.id).available_at == before
    assert not JobEvent.objects.filter(job=job, kind="edited").exists()


@pytest.mark.parametrize("final", [Status.SUCCEEDED, Status.FAILED, Status.CANCELLED])
def test_a_finished_job_is_not_edited(final):
    job = services.enqueue("noop")
    if final == Status.CANCELLED:
        services.cancel(job.id)
    else:
        finish_job(job.id, final)
    with pytest.raises(InvalidTransition, match=f"cannot edit job {job.id}: it is {final}"):
        services.edit(job.id, priority=5)
    with pytest.raises(InvalidTransition, match="cannot run_now"):
        services.run_now(job.id)


def test_a_running_job_is_not_edited():
    job = services.enqueue("noop", priority=0)
    services.claim(worker_ids=["test-1-0"])
    with pytest.raises(InvalidTransition, match="it is running"):
        services.edit(job.id, priority=5)
    assert Job.objects.get(pk=job.id).priority == 0


def test_an_unknown_job_is_not_found():
    with pytest.raises(JobNotFound):
        services.edit(10**12, priority=1)
    with pytest.raises(JobNotFound):
        services.run_now("nope")


@pytest.mark.parametrize(("kwargs", "error", "argument"), [
    ({}, InvalidJobArgument, "priority"),
    ({"priority": "high"}, JobArgumentTypeError, "priority"),
    ({"priority": 101}, InvalidJobArgument, "priority"),
    ({"run_at": "tomorrow"}, JobArgumentTypeError, "run_at"),
    ({"run_at": timezone.now().replace(tzinfo=None)}, InvalidJobArgument, "run_at"),
])
def test_bad_arguments_name_the_argument_and_change_nothing(kwargs, error, argument):
    job = services.enqueue("noop", priority=2)
    with pytest.raises(error) as caught:
        services.edit(job.id, **kwargs)
    assert caught.value.argument == argument
    assert Job.objects.get(pk=job.id).priority == 2
    assert not JobEvent.objects.filter(job=job, kind="edited").exists()


def test_api_patch_edits_a_queued_job(operator_client):
    job = services.enqueue("noop", delay_seconds=3600)
    response = operator_client.patch(f"{JOBS}{job.id}/", {"priority": -5}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["priority"] == -5
    assert JobEvent.objects.get(job=job, kind="edited").data["actor"] == "operator"


def test_api_patch_refuses_what_python_refuses(operator_client):
    job = services.enqueue("noop")
    empty = operator_client.patch(f"{JOBS}{job.id}/", {}, format="json")
    assert empty.status_code == 400 and "priority" in empty.json()["detail"]
    unknown = operator_client.patch(f"{JOBS}{job.id}/", {"payload": {}}, format="json")
    assert unknown.status_code == 400 and "payload" in unknown.json()["errors"]
    above = operator_client.patch(f"{JOBS}{job.id}/", {"priority": 50}, format="json")
    assert above.status_code == 400 and "JOB_API_MAX_PRIORITY" in str(above.json())
    far = (timezone.now() + timedelta(days=400)).isoformat()
    too_late = operator_client.patch(f"{JOBS}{job.id}/", {"run_at": far}, format="json")
    assert too_late.status_code == 400 and "JOB_API_MAX_DELAY_SECONDS" in str(too_late.json())
    assert not JobEvent.objects.filter(job=job, kind="edited").exists()


@override_settings(JOB_API_MAX_PRIORITY=100)
def test_api_patch_within_the_operator_bounds(operator_client):
    job = services.enqueue("noop")
    assert operator_client.patch(f"{JOBS}{job.id}/", {"priority": 50},
                                 format="json").status_code == 200


def test_api_edit_and_run_now_answer_409_for_a_finished_job(operator_client):
    job = services.enqueue("noop")
    finish_job(job.id, Status.SUCCEEDED)
    patched = operator_client.patch(f"{JOBS}{job.id}/", {"priority": -1}, format="json")
    assert patched.status_code == 409 and patched.json()["status"] == "succeeded"
    assert operator_client.post(f"{JOBS}{job.id}/run_now/").status_code == 409


def test_api_run_now_and_the_bulk_action(operator_client):
    one, two = (services.enqueue("noop", delay_seconds=3600) for _ in range(2))
    assert operator_client.post(f"{JOBS}{one.id}/run_now/").json()["id"] == one.id
    bulk = operator_client.post(f"{JOBS}actions/", {"action": "run_now", "ids": [two.id]},
                                format="json")
    assert bulk.status_code == 200, bulk.content
    assert Job.objects.filter(pk__in=[one.id, two.id],
                              available_at__lte=timezone.now()).count() == 2


def test_a_viewer_may_not_edit(client_for, viewer):
    job = services.enqueue("noop", priority=1)
    client = client_for(viewer)
    assert client.patch(f"{JOBS}{job.id}/", {"priority": 0}, format="json").status_code == 403
    assert client.post(f"{JOBS}{job.id}/run_now/").status_code == 403
    assert Job.objects.get(pk=job.id).priority == 1


@pytest.mark.django_db(transaction=True)
def test_an_edit_racing_the_claims_never_lands_on_a_claimed_job():
    """Edits and claims in two threads over the same jobs: each job is claimed exactly once,
    and every `edited` event comes before its job's claim (its attempt says so)."""
    jobs = [services.enqueue("noop", priority=0).id for _ in range(60)]
    claimed: list[int] = []
    refused = []

    def claimer():
        try:
            while len(claimed) < len(jobs):
                claimed.extend(c.id for c in services.claim(worker_ids=["race-1-0"]))
        finally:
            close_old_connections()

    def editor():
        try:
            for job_id in jobs:
                try:
                    services.edit(job_id, priority=5)
                except InvalidTransition:
                    refused.append(job_id)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=claimer), threading.Thread(target=editor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claimed) == sorted(jobs)  # each once, none lost
    # The claim writes no event (its start stays on the row): an edit that landed before the
    # claim recorded attempt 0, one after it would have recorded the claim's attempt 1.
    for job_id in jobs:
        edits = list(JobEvent.objects.filter(job_id=job_id, kind="edited")
                     .values_list("attempt", flat=True))
        assert edits in ([0], []), (job_id, edits)
        assert (edits == []) == (job_id in refused)
    assert set(Job.objects.filter(pk__in=jobs).values_list("status", "attempts")) \
        == {("running", 1)}
