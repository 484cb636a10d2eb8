"""JOB_CREATE_RATE counts jobs, not requests: a bulk request of n jobs spends n of the
window, so splitting work into bulk requests buys no extra jobs."""
import pytest
from django.test import override_settings

from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

BULK = "/api/v1/jobs/bulk/"


def _bulk(client, n: int):
    return client.post(BULK, {"jobs": [{"type": "noop"}] * n}, format="json")


@override_settings(JOB_CREATE_RATE="10/min")
def test_every_job_of_a_bulk_request_counts_against_the_create_rate(operator_client):
    assert _bulk(operator_client, 8).status_code == 201
    refused = _bulk(operator_client, 3)  # 8 + 3 > 10
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    assert 1 <= int(refused["Retry-After"]) <= 61  # the period, plus at most one slice of it
    assert Job.objects.count() == 8
    assert _bulk(operator_client, 2).status_code == 201  # exactly 10
    assert operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code == 429
    assert Job.objects.count() == 10


@override_settings(JOB_CREATE_RATE="1000/min")
def test_a_thousand_jobs_a_request_cannot_pass_the_rate_however_they_are_sent(operator_client):
    assert _bulk(operator_client, 1000).status_code == 201
    assert _bulk(operator_client, 1).status_code == 429
    assert operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code == 429
    assert Job.objects.count() == 1000


@override_settings(JOB_CREATE_RATE="5/min")
def test_a_bulk_request_larger_than_the_rate_is_a_400_saying_so(operator_client):
    refused = _bulk(operator_client, 6)
    assert refused.status_code == 400
    body = refused.json()
    assert set(body["errors"]) == {"jobs"}
    assert "6 jobs" in body["detail"] and "JOB_CREATE_RATE" in body["detail"]
    assert not Job.objects.exists()
    assert _bulk(operator_client, 5).status_code == 201  # the refused request spent nothing


@override_settings(JOB_CREATE_RATE="4/min")
def test_users_are_counted_apart(operator_client, make_user, client_for):
    assert _bulk(operator_client, 4).status_code == 201
    other = client_for(make_user("other-producer", perms=["add_job"]))
    assert _bulk(other, 4).status_code == 201
    assert _bulk(operator_client, 1).status_code == 429


@override_settings(JOB_CREATE_RATE="1000/min")
def test_a_bulk_request_spends_its_jobs_in_one_count_of_the_window(operator, operator_client):
    from django_pg_jobqueue.api.throttles import JobCreateThrottle
    from django_pg_jobqueue.services import throttling

    assert _bulk(operator_client, 500).status_code == 201
    assert operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code == 201
    window = throttling.window(
        JobCreateThrottle.cache_format % {"scope": "job_create", "ident": operator.pk}, oldest=0)
    # One count per slice of the window (a sixtieth of it), not an entry per job.
    assert len(window) <= 2 and sum(count for _, count in window) == 501


@override_settings(JOB_CREATE_RATE="5/min")
def test_only_requests_that_create_jobs_spend_the_create_rate(operator_client):
    jobs = "/api/v1/jobs/"
    first = operator_client.post(jobs, {"type": "noop", "idempotency_key": "k1"}, format="json")
    assert first.status_code == 201
    for _ in range(10):  # idempotent replays create nothing
        replay = operator_client.post(jobs, {"type": "noop", "idempotency_key": "k1"}, format="json")
        assert replay.status_code == 200, replay.json()
    for _ in range(10):  # refused bulks (an unknown type) create nothing
        bad = operator_client.post(BULK, {"jobs": [{"type": "noop"}, {"type": "nope"}]},
                                   format="json")
        assert bad.status_code == 400, bad.json()
    conflict = operator_client.post(jobs, {"type": "noop", "priority": -3, "idempotency_key": "k1"},
                                    format="json")
    assert conflict.status_code == 409
    replayed = operator_client.post(BULK, {"jobs": [{"type": "noop", "idempotency_key": "k1"},
                                                    {"type": "noop"}]}, format="json")
    assert replayed.status_code == 201, replayed.json()  # one new job, one replay: 2 spent
    assert _bulk(operator_client, 2).status_code == 201  # 1 + 1 + 2 of 5
    assert _bulk(operator_client, 2).status_code == 429  # 6 > 5
    assert Job.objects.count() == 4
