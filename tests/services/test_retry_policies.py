"""Retry policies per handler and per job: a list of delays, exponential, a function; give up
on some exceptions at once; a job's own policy wins over its type's. The delay and the
decision are written by the failure's single statement, on the database clock."""
import signal

import pytest
from django.test import override_settings
from django.utils.dateparse import parse_datetime

from django_pg_jobqueue import RetryPolicy, services, testing
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, JobEvent
from tests.handlers import retry_handlers
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, wait_until_jobs

POLL_SECONDS = 0.2  # the workers' JOB_POLL_INTERVAL_SECONDS: how late a due retry may start


def _events(job, kind):
    return list(JobEvent.objects.filter(job_id=job.pk, kind=kind).order_by("id"))


# --- what enqueue accepts (Python and the API alike) -------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("policy, wrong", [
    ({"delays_seconds": []}, "delays_seconds"),
    ({"delays_seconds": [1, -1]}, "delays_seconds"),
    ({"delays_seconds": [1], "factor": 2}, "factor"),
    ({"factor": 11}, "factor"),
    ({"jitter": 2}, "jitter"),
    ({"give_up_on": ["not a name!"]}, "give_up_on"),
    ({"function": "tests.handlers.retry_handlers.retry_after_attempt"}, "function"),
    ({"delay": 3}, "delay"),
    ("fast", ""),
])
def test_enqueue_refuses_a_retry_policy_it_could_not_follow(policy, wrong):
    with pytest.raises(InvalidJobArgument) as refused:
        services.enqueue("retry_listed_delays", {}, retry_policy=policy)
    assert refused.value.argument == "retry_policy"
    assert wrong in str(refused.value)
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_the_api_accepts_and_refuses_the_same_retry_policies(operator_client, settings):
    settings.JOB_API_CREATABLE_TYPES = ["retry_listed_delays"]
    bad = operator_client.post("/api/v1/jobs/", {
        "type": "retry_listed_delays", "retry_policy": {"function": "os.system"}}, format="json")
    assert bad.status_code == 400, bad.content
    assert "retry_policy" in bad.json()["errors"]
    good = operator_client.post("/api/v1/jobs/", {
        "type": "retry_listed_delays",
        "retry_policy": {"delays_seconds": [2, 4], "give_up_on": ["KeyError"]}}, format="json")
    assert good.status_code == 201, good.content
    job = Job.objects.get(pk=good.json()["id"])
    assert job.retry_policy == {"delays_seconds": [2.0, 4.0], "give_up_on": ["KeyError"]}
    many = operator_client.post("/api/v1/jobs/bulk/", {"jobs": [
        {"type": "retry_listed_delays", "retry_policy": {"delays_seconds": [7]}}]}, format="json")
    assert many.status_code == 201, many.content
    assert Job.objects.get(pk=many.json()["jobs"][0]["id"]).retry_policy == {"delays_seconds": [7.0]}


@pytest.mark.django_db
def test_enqueue_many_names_the_item_whose_retry_policy_is_refused():
    with pytest.raises(InvalidJobArgument) as refused:
        services.enqueue_many([{"type": "retry_listed_delays"},
                               {"type": "retry_listed_delays", "retry_policy": {"factor": 0}}])
    assert (refused.value.argument, refused.value.index) == ("retry_policy", 1)


def test_a_handler_with_a_policy_it_cannot_follow_is_refused_at_import():
    from django_pg_jobqueue.retries import InvalidRetryPolicy

    with pytest.raises(InvalidRetryPolicy, match="delays_seconds"):
        RetryPolicy(delays_seconds=[1, "soon"])


# --- the decision and the delay, in one run of the real executor ------------------------------
@pytest.mark.django_db(transaction=True)
def test_each_retry_waits_the_policys_delay_and_a_give_up_exception_fails_at_once():
    listed = services.enqueue("retry_listed_delays", {})
    declined = services.enqueue("retry_listed_delays", {"declined": True})
    testing.drain()
    assert [e.data["delay_seconds"] for e in _events(listed, "retry_scheduled")] == [1.0]
    declined.refresh_from_db()
    assert (declined.status, declined.attempts) == ("failed", 1)
    failed = _events(declined, "failed")[0]
    assert failed.data["reason"] == "retry_policy" and failed.data["permanent"] is True
    assert not _events(declined, "retry_scheduled")


@pytest.mark.django_db(transaction=True)
def test_a_function_policy_sets_the_delay_from_the_attempt():
    job = services.enqueue("retry_by_function", {})
    testing.drain(include_scheduled=True)
    assert [e.data["delay_seconds"] for e in _events(job, "retry_scheduled")] == [0.1, 0.2]


@pytest.mark.django_db(transaction=True)
def test_a_jobs_own_policy_replaces_its_types():
    job = services.enqueue("retry_listed_delays", {"declined": True},
                           retry_policy={"delays_seconds": [0.5], "retry_on": ["CardDeclined"]})
    testing.drain(include_scheduled=True)
    # the type gives up on CardDeclined; this job's own policy retries it, 0.5 s apart
    assert [e.data["delay_seconds"] for e in _events(job, "retry_scheduled")] == [0.5] * 3
    assert Job.objects.get(pk=job.pk).attempts == 4


@pytest.mark.django_db(transaction=True)
def test_retry_on_fails_any_other_exception_at_once():
    job = services.enqueue("retry_listed_delays", {}, retry_policy={"retry_on": ["KeyError"]})
    testing.drain()
    assert (Job.objects.get(pk=job.pk).status, Job.objects.get(pk=job.pk).attempts) == ("failed", 1)


@pytest.mark.django_db(transaction=True)
def test_an_exponential_policy_multiplies_by_its_factor_up_to_its_cap():
    job = services.enqueue("retry_listed_delays", {}, max_attempts=4, retry_policy={
        "base_seconds": 0.1, "factor": 3, "max_seconds": 0.5, "jitter": 0})
    testing.drain(include_scheduled=True)
    delays = [e.data["delay_seconds"] for e in _events(job, "retry_scheduled")]
    assert delays == [0.3, 0.5, 0.5]  # 0.1*3^1, 0.1*3^2 capped, ...


@pytest.mark.django_db(transaction=True)
def test_an_expired_lease_follows_the_jobs_own_policy():
    job = services.enqueue("retry_listed_delays", {}, retry_policy={"delays_seconds": [42]})
    testing.crash_mid_handler(job)
    testing.expire_lease(job)
    with override_settings(JOB_RETRY_JITTER=0):
        assert testing.run_reaper() == {"queued": 1}
    assert _events(job, "lease_expired")[0].data["delay_seconds"] == 42.0


@pytest.mark.django_db(transaction=True)
def test_the_job_detail_says_when_and_why_the_next_attempt_runs(operator_client):
    job = services.enqueue("retry_listed_delays", {})
    testing.drain()
    body = operator_client.get(f"/api/v1/jobs/{job.pk}/").json()
    job.refresh_from_db()
    assert body["next_attempt"]["attempt"] == 2 and body["next_attempt"]["max_attempts"] == 4
    assert body["next_attempt"]["after_error"] == "ValueError: attempt 1 fails"
    assert body["next_attempt"]["policy"].startswith("delays [1, 2, 3]; gives up on tests.handlers.retry_handlers.CardDeclined")
    assert body["next_attempt"]["at"] == body["available_at"]
    assert body["retry_policy"] is None and body["waiting_for_handler"] is False


# --- real worker processes ---------------------------------------------------------------------
@pytest.fixture
def retry_worker(transactional_db):
    proc = spawn_workers("--threads", "4", env={
        "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.retry_handlers",
        "JOB_POLL_INTERVAL_SECONDS": str(POLL_SECONDS), "JOB_POLL_JITTER_SECONDS": "0",
        "JOB_WORKER_LOG_LEVEL": "WARNING"})
    out = Output(proc)
    yield proc, out
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(30)


def test_a_worker_process_retries_at_the_listed_delays_gives_up_at_once_and_lets_a_job_override(
        retry_worker):
    proc, out = retry_worker
    listed = services.enqueue("retry_listed_delays", {})
    declined = services.enqueue("retry_listed_delays", {"declined": True})
    overridden = services.enqueue("retry_listed_delays", {}, max_attempts=3,
                                  retry_policy={"delays_seconds": [0.3]})
    ids = [listed.pk, declined.pk, overridden.pk]
    wait_until_jobs("failed", pk__in=ids, timeout=60, message="the three jobs to fail for good")
    # The listed delays, from the recorded times: each retry was scheduled at its delay and
    # claimed once it was due, at most a poll interval (and a loaded machine's slack) later.
    failures = _events(listed, "retry_scheduled")
    # Each attempt's start, carried by its outcome's event (the claim writes none).
    claims = [parse_datetime(e.data["started_at"]) for e in
              JobEvent.objects.filter(job_id=listed.pk, data__has_key="started_at").order_by("id")]
    assert [e.data["delay_seconds"] for e in failures] == retry_handlers.DELAYS
    for failure, delay, next_claim in zip(failures, retry_handlers.DELAYS, claims[1:], strict=True):
        waited = (next_claim - failure.created_at).total_seconds()
        assert delay <= waited < delay + POLL_SECONDS + 1.5, (delay, waited)
    assert Job.objects.get(pk=listed.pk).attempts == 4
    # The give-up exception: failed on attempt 1 of 4.
    assert Job.objects.get(pk=declined.pk).attempts == 1
    assert _events(declined, "failed")[0].data["reason"] == "retry_policy"
    # The job's own policy won: 0.3 s, not the type's 1 s then 2 s.
    assert [e.data["delay_seconds"] for e in _events(overridden, "retry_scheduled")] == [0.3, 0.3]
    assert proc.poll() is None, out.text()[-2000:]


