"""Durable steps: `ctx.step(name, fn)` runs `fn` once per job and records its result, so that a
later attempt of the job (after a crash of its worker) gets the result back without running
`fn` again; a step that raises records nothing; step results follow the result rules."""
import signal

import pytest
from django.db import connection
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import LeaseLost
from django_pg_jobqueue.models import Job, JobStep
from django_pg_jobqueue.testing import drain
from tests.handlers import workflow_handlers  # noqa: F401  (registers the handlers in this process)
from tests.services.test_dependency_results import WORKER_ENV
from tests.utils import spawn_workers, stop_workers, wait_until_jobs


@pytest.fixture
def step_effects():
    """A table the steps' side effects write a row each to: the ground truth of what ran."""
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE step_effects (job_id bigint, step text, attempt int)")
    yield
    with connection.cursor() as cur:
        cur.execute("DROP TABLE step_effects")


def _effects(job_id):
    with connection.cursor() as cur:
        cur.execute("SELECT step, attempt FROM step_effects WHERE job_id = %s ORDER BY step",
                    [job_id])
        return cur.fetchall()


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_handler_killed_after_two_steps_resumes_without_running_them_again(step_effects):
    job = services.enqueue("three_steps", {"die_after": 2})
    victim = spawn_workers("--threads", "2", env=WORKER_ENV)
    try:
        victim.wait(30)  # the handler kills its own worker process after step 2
    finally:
        if victim.poll() is None:
            victim.kill()
    assert victim.returncode == -signal.SIGKILL
    assert _effects(job.id) == [("charge", 1), ("reserve", 1)]
    survivor = spawn_workers("--threads", "2", env=WORKER_ENV)
    try:
        wait_until_jobs("succeeded", pk=job.pk, timeout=40,
                        message="the next attempt after the lease expired")
    finally:
        stop_workers(survivor)
    finished = Job.objects.get(pk=job.pk)
    assert finished.attempts == 2
    assert _effects(job.id) == [("charge", 1), ("reserve", 1), ("ship", 2)]
    assert finished.result == ["reserve done in attempt 1", "charge done in attempt 1",
                               "ship done in attempt 2"]
    assert list(JobStep.objects.filter(job_id=job.pk).values_list("name", "attempt")) == [
        ("reserve", 1), ("charge", 1), ("ship", 2)]


@pytest.mark.django_db
def test_a_step_that_raises_records_nothing_and_runs_again_next_attempt(custom_handler):
    calls = []

    def flaky_charge(n):
        calls.append(n)
        if len(calls) == 1:
            raise RuntimeError("gateway timeout")
        return {"charged": n}

    custom_handler("charge", lambda ctx, payload: ctx.step("charge", flaky_charge, 5),
                   max_attempts=2)
    job = services.enqueue("charge", {})
    drain(include_scheduled=True)
    assert calls == [5, 5]
    done = Job.objects.get(pk=job.pk)
    assert (done.status, done.result, done.attempts) == ("succeeded", {"charged": 5}, 2)
    assert JobStep.objects.filter(job_id=job.pk).count() == 1


@pytest.mark.django_db
def test_a_step_name_is_one_step_per_job(custom_handler):
    def twice(ctx, payload):
        ctx.step("a", lambda: 1)
        ctx.step("a", lambda: 2)

    custom_handler("twice", twice, max_attempts=1)
    job = services.enqueue("twice", {})
    drain()
    failed = Job.objects.get(pk=job.pk)
    assert failed.status == "failed" and "already ran in this job" in failed.last_error
    assert list(JobStep.objects.filter(job_id=job.pk).values_list("name", "result")) == [("a", 1)]


@pytest.mark.django_db
def test_a_step_result_follows_the_result_rules(custom_handler):
    custom_handler("big_step", lambda ctx, payload: ctx.step("fetch", lambda: "x" * 2000),
                   max_attempts=1)
    custom_handler("odd_step", lambda ctx, payload: ctx.step("fetch", lambda: object()),
                   max_attempts=1)
    big, odd = services.enqueue("big_step", {}), services.enqueue("odd_step", {})
    with override_settings(JOB_MAX_RESULT_BYTES=1000):
        drain()
    big, odd = Job.objects.get(pk=big.pk), Job.objects.get(pk=odd.pk)
    assert big.status == odd.status == "failed"
    assert "step 'fetch'" in big.last_error and "JOB_MAX_RESULT_BYTES (1000)" in big.last_error
    assert "step 'fetch'" in odd.last_error and "not JSON" in odd.last_error
    assert not JobStep.objects.filter(job_id__in=[big.pk, odd.pk]).exists()


@pytest.mark.django_db
def test_a_step_recorded_by_an_attempt_that_lost_its_lease_is_kept_and_it_stops():
    job = services.enqueue("three_steps", {})
    [claimed] = services.claim(worker_ids=["w"], job_ids=[job.id])
    with pytest.raises(LeaseLost):
        services.record_step(job.id, "00000000-0000-0000-0000-000000000000", worker_id="w",
                             name="charge", attempt=1, result_json='"charged"')
    # the side effect happened: its record stays, and the holder of the lease gets it back
    assert services.record_step(job.id, claimed.lease_token, worker_id="w", name="charge",
                                attempt=1, result_json='"again"') == "charged"


@pytest.mark.django_db
def test_deleting_or_pruning_a_job_deletes_its_steps(custom_handler):
    from django_pg_jobqueue.services.pruning import prune

    custom_handler("one_step", lambda ctx, payload: ctx.step("s", lambda: 1))
    first, second = services.enqueue("one_step", {}), services.enqueue("one_step", {})
    drain()
    assert JobStep.objects.count() == 2
    services.delete(first.id)
    assert list(JobStep.objects.values_list("job_id", flat=True)) == [second.id]
    Job.objects.filter(pk=second.pk).update(finished_at="2000-01-01T00:00:00Z")
    prune("1d", drop_partitions=False)
    assert not JobStep.objects.exists()
