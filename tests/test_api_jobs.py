"""The jobs API: create, idempotency, bulk, list, detail, cancel, retry."""
import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.api.authentication import forget_all
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.states import Status

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def _finish(job_id, status):
    """Move a job to a finished status through the services (claim, then fail/complete)."""
    claimed = services.claim(worker_ids=["test-1-0"], job_ids=[job_id])
    assert claimed and claimed[0].id == job_id
    job = claimed[0]
    if status == Status.SUCCEEDED:
        services.complete(job.id, job.lease_token, worker_id="test-1-0", result={"ok": True})
    else:
        services.fail(job.id, job.lease_token, worker_id="test-1-0", error="boom", permanent=True)


# -- create ---------------------------------------------------------------------------------

def test_create_with_only_a_type_uses_the_types_defaults(operator_client):
    response = operator_client.post(JOBS, {"type": "email_send"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["type"] == "email_send"
    assert body["max_attempts"] == 5 and body["timeout_seconds"] == 30  # the type's defaults
    assert body["payload"] == {} and body["progress"] == {"percent": None, "message": ""}
    assert "X-Idempotency-Replay" not in response
    job = Job.objects.get(pk=body["id"])
    assert job.events.get().kind == "created"


def test_create_with_every_option(operator_client):
    run_at = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    response = operator_client.post(JOBS, {
        "type": "noop", "payload": {"a": [1, 2, {"b": None}]}, "priority": 100,
        "max_attempts": 7, "queue": "reports", "run_at": run_at.isoformat(),
        "timeout_seconds": 9, "idempotency_key": "k-every",
    }, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.priority, job.max_attempts, job.queue, job.timeout_seconds) == (100, 7, "reports", 9)
    assert job.available_at == run_at and job.payload == {"a": [1, 2, {"b": None}]}
    # Stored in the user's own namespace (api/idempotency.py), shown as sent.
    assert job.idempotency_key == f"api:{job_owner_pk(operator_client)}:k-every"
    assert response.json()["idempotency_key"] == "k-every"


def test_delay_seconds_makes_the_job_available_later(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "delay_seconds": 120}, format="json")
    job = Job.objects.get(pk=response.json()["id"])
    assert job.available_at > timezone.now() + timedelta(seconds=100)
    assert not Job.objects.runnable().filter(pk=job.pk).exists()


@pytest.mark.parametrize(("body", "bad_fields"), [
    ({"type": "no-such-type"}, {"type"}),
    ({}, {"type"}),
    ({"type": "noop", "payload": [1, 2]}, {"payload"}),
    ({"type": "noop", "payload": "text"}, {"payload"}),
    ({"type": "noop", "payload": None}, {"payload"}),
    ({"type": "noop", "priority": 101}, {"priority"}),
    ({"type": "noop", "priority": -101, "max_attempts": 0}, {"priority", "max_attempts"}),
    ({"type": "noop", "timeout_seconds": 0, "delay_seconds": -1}, {"timeout_seconds", "delay_seconds"}),
    ({"type": "noop", "priority": 1.5}, {"priority"}),
    ({"type": "noop", "queue": "has space"}, {"queue"}),
    ({"type": "noop", "idempotency_key": "x" * 256}, {"idempotency_key"}),
    ({"type": "noop", "run_at": "2030-01-01T00:00:00Z", "delay_seconds": 5}, {"delay_seconds"}),
    ({"type": "x" * 101}, {"type"}),
])
def test_bad_fields_get_a_400_naming_each_one(operator_client, body, bad_fields):
    response = operator_client.post(JOBS, body, format="json")
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid"
    assert set(error["errors"]) == bad_fields
    for field in bad_fields:
        assert field in error["detail"]
    assert not Job.objects.exists()


def test_unknown_type_error_lists_the_types_the_api_may_create(operator_client):
    error = operator_client.post(JOBS, {"type": "nope"}, format="json").json()
    assert "unknown job type 'nope'" in error["errors"]["type"][0]
    assert "email_send" in error["errors"]["type"][0]


@pytest.mark.parametrize("field", ["status", "attempts", "locked_by", "lease_token",
                                   "lease_expires_at", "result", "finished_at", "id"])
def test_mass_assignment_of_queue_maintained_fields_is_refused(operator_client, field):
    response = operator_client.post(JOBS, {"type": "noop", field: "succeeded"}, format="json")
    assert response.status_code == 400
    assert "read-only" in response.json()["errors"][field][0]
    assert not Job.objects.exists()


def test_unknown_fields_are_refused_by_name(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "colour": "red", "prio": 1}, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"colour", "prio"}


@override_settings(JOB_MAX_PAYLOAD_BYTES=1000)
def test_payload_over_the_limit_is_413(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "payload": {"x": "y" * 1000}}, format="json")
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert "1000" in response.json()["detail"]
    ok = operator_client.post(JOBS, {"type": "noop", "payload": {"x": "y" * 900}}, format="json")
    assert ok.status_code == 201


# -- idempotency ----------------------------------------------------------------------------

def test_same_key_same_request_replays_the_first_job(operator_client):
    body = {"type": "noop", "payload": {"n": 1}, "idempotency_key": "order-7"}
    first = operator_client.post(JOBS, body, format="json")
    second = operator_client.post(JOBS, body, format="json")
    assert first.status_code == 201 and second.status_code == 200
    assert second["X-Idempotency-Replay"] == "true"
    assert second.json()["id"] == first.json()["id"]
    assert Job.objects.count() == 1


def test_same_key_in_the_header_replays(operator_client):
    body = {"type": "noop", "payload": {"n": 1}}
    first = operator_client.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    second = operator_client.post(JOBS, body, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    in_body = operator_client.post(JOBS, {**body, "idempotency_key": "hdr-1"}, format="json")
    assert (first.status_code, second.status_code, in_body.status_code) == (201, 200, 200)
    assert first.json()["idempotency_key"] == "hdr-1"
    assert Job.objects.count() == 1


def test_same_key_different_request_is_409(operator_client):
    operator_client.post(JOBS, {"type": "noop", "payload": {"n": 1}}, format="json",
                         HTTP_IDEMPOTENCY_KEY="k")
    response = operator_client.post(JOBS, {"type": "noop", "payload": {"n": 2}}, format="json",
                                    HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 409
    error = response.json()
    assert error["code"] == "idempotency_conflict" and "different request" in error["detail"]
    assert error["job_id"] == Job.objects.get().pk


@pytest.mark.parametrize("header", ["x" * 10_000, "   "])
def test_a_bad_idempotency_key_header_is_400(operator_client, header):
    response = operator_client.post(JOBS, {"type": "noop"}, format="json", HTTP_IDEMPOTENCY_KEY=header)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["errors"]


def test_header_and_body_keys_must_agree(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "idempotency_key": "a"}, format="json",
                                    HTTP_IDEMPOTENCY_KEY="b")
    assert response.status_code == 400 and "idempotency_key" in response.json()["errors"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_create_exactly_one_job(client_for, operator):
    threads_n = 8
    barrier = threading.Barrier(threads_n)
    statuses, ids, errors = [], [], []

    def post():
        try:
            client = client_for(operator)
            barrier.wait(timeout=10)
            response = client.post(JOBS, {"type": "noop", "payload": {"n": 1}}, format="json",
                                   HTTP_IDEMPOTENCY_KEY="race-1")
            statuses.append(response.status_code)
            ids.append(response.json().get("id"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(statuses) == [200] * (threads_n - 1) + [201]
    assert len(set(ids)) == 1
    assert Job.objects.filter(idempotency_key__endswith=":race-1").count() == 1  # scoped
    assert JobEvent.objects.filter(kind="created").count() == 1


def job_owner_pk(client) -> int:
    return client.get("/api/v1/auth/me/").json()["id"]


# -- bulk -----------------------------------------------------------------------------------

@override_settings(JOB_CREATE_RATE="1000/min")  # every job counts against the rate
def test_bulk_creates_every_job(operator_client):
    jobs = [{"type": "noop", "payload": {"i": i}} for i in range(1000)]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["count"] == 1000
    assert Job.objects.count() == 1000
    assert sorted(j["payload"]["i"] for j in response.json()["jobs"]) == list(range(1000))


def test_bulk_is_all_or_nothing_and_names_the_bad_item(operator_client):
    jobs = [{"type": "noop"}, {"type": "nope"}, {"type": "noop", "priority": 500}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400
    errors = response.json()["errors"]["jobs"]
    assert set(errors) == {"1", "2"}  # only the bad items, by index
    assert "type" in errors["1"] and "priority" in errors["2"]
    assert "jobs[1].type" in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("jobs", [[], [{"type": "noop"}] * 1001])
def test_bulk_takes_1_to_1000_jobs(operator_client, jobs):
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400 and "jobs" in response.json()["errors"]
    assert not Job.objects.exists()


def test_bulk_refuses_a_repeated_idempotency_key(operator_client):
    jobs = [{"type": "noop", "idempotency_key": "a"}, {"type": "noop", "idempotency_key": "a"}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 400
    assert "repeats" in response.json()["detail"]


def test_bulk_with_a_conflicting_key_creates_nothing(operator_client):
    operator_client.post(JOBS, {"type": "noop", "idempotency_key": "taken"}, format="json")
    jobs = [{"type": "noop"}, {"type": "noop", "payload": {"other": 1}, "idempotency_key": "taken"}]
    response = operator_client.post(JOBS + "bulk/", {"jobs": jobs}, format="json")
    assert response.status_code == 409
    assert Job.objects.count() == 1


# -- list and detail ------------------------------------------------------------------------

@pytest.fixture
def some_jobs():
    a = services.enqueue("noop", {"n": 1}, priority=5, queue="alpha", idempotency_key="key-a")
    b = services.enqueue("email_send", {"to": "x@example.com"}, priority=-5)
    c = services.enqueue("noop", {"n": 3})
    services.cancel(c.id)
    return a, b, c


def _ids(response):
    assert response.status_code == 200, response.json()
    return [j["id"] for j in response.json()["results"]]


def test_list_filters(operator_client, some_jobs):
    a, b, c = some_jobs
    assert _ids(operator_client.get(JOBS)) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"status": "queued"})) == [b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"status": "queued,cancelled"})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"type": "email_send"})) == [b.id]
    assert _ids(operator_client.get(JOBS, {"queue": "alpha"})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"priority": 5})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"priority_max": 0})) == [c.id, b.id]
    assert _ids(operator_client.get(JOBS, {"search": "key-a"})) == [a.id]
    assert _ids(operator_client.get(JOBS, {"search": str(b.id)})) == [b.id]
    assert _ids(operator_client.get(JOBS, {"search": "99999999999999999999999"})) == []
    future = (timezone.now() + timedelta(days=1)).isoformat()
    assert _ids(operator_client.get(JOBS, {"created_after": future})) == []
    assert _ids(operator_client.get(JOBS, {"created_before": future})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"ordering": "priority"})) == [b.id, c.id, a.id]


def test_a_list_without_filters_builds_no_filter_set(operator_client, some_jobs, monkeypatch):
    from django_pg_jobqueue.api.filters import JobFilter

    built = []
    original = JobFilter.__init__
    monkeypatch.setattr(JobFilter, "__init__",
                        lambda self, *a, **kw: built.append(kw.get("data")) or original(self, *a, **kw))
    a, b, c = some_jobs
    assert _ids(operator_client.get(JOBS, {"page_size": 10, "ordering": "id", "x": "1"})) == [
        a.id, b.id, c.id]
    assert built == []
    # A named filter, even an empty one, takes django-filter's way, as before.
    assert _ids(operator_client.get(JOBS, {"status": ""})) == [c.id, b.id, a.id]
    assert _ids(operator_client.get(JOBS, {"priority_max": 0})) == [c.id, b.id]
    assert len(built) == 2


@pytest.mark.parametrize("query", [{"status": "sleeping"}, {"priority": "high"},
                                   {"priority": 1000}, {"created_after": "yesterday"},
                                   {"ordering": "payload"}, {"type": "a\x00b"}])
def test_bad_filters_are_400_never_500(operator_client, some_jobs, query):
    response = operator_client.get(JOBS, query)
    # An unknown ordering field too (DRF would ignore it): tests/test_api_guards.py.
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_pagination(operator_client):
    services.enqueue_many([{"type": "noop"}] * 30)
    page1 = operator_client.get(JOBS, {"page_size": 20}).json()
    assert page1["count"] == 30 and len(page1["results"]) == 20 and page1["previous"] is None
    page2 = operator_client.get(page1["next"]).json()
    assert len(page2["results"]) == 10 and page2["next"] is None
    # Past 100: a 400 naming page_size, not a silent cap (tests/test_api_guards.py).
    assert operator_client.get(JOBS, {"page_size": 1000}).status_code == 400
    assert len(operator_client.get(JOBS, {"page_size": 100}).json()["results"]) == 30
    assert operator_client.get(JOBS, {"page": 9}).status_code == 404


def test_list_runs_a_fixed_number_of_queries(operator_client, django_assert_num_queries):
    services.enqueue_many([{"type": "noop"}] * 3)
    # token+user, user perms, group perms, count, page: the same for 3 rows or 43. Counted
    # cold: the API remembers tokens and permissions for a few seconds (test_api_auth_cache).
    forget_all()
    with django_assert_num_queries(5):
        operator_client.get(JOBS)
    services.enqueue_many([{"type": "noop"}] * 40)
    forget_all()
    with django_assert_num_queries(5):
        operator_client.get(JOBS, {"page_size": 50})


def test_detail_has_every_model_field_and_the_latest_50_events(operator_client):
    job = services.enqueue("sleep", {"seconds": 1})
    claimed = services.claim(worker_ids=["test-1-0"])[0]
    for n in range(60):
        services.log_message(job.id, claimed.lease_token, worker_id="test-1-0", message=f"line {n}")
    body = operator_client.get(f"{JOBS}{job.id}/").json()
    model_fields = {f.name for f in Job._meta.fields}
    assert model_fields <= set(body)
    assert body["progress"] == {"percent": None, "message": ""}
    events = body["events"]
    all_ids = list(JobEvent.objects.filter(job=job).order_by("id").values_list("id", flat=True))
    assert [e["id"] for e in events] == all_ids[-50:]
    assert events[-1]["job_type"] == "sleep" and events[-1]["job_status"] == "running"
    assert events[-1]["message"] == "line 59" and events[-1]["kind"] == "log"
    assert body["locked_by"] == "test-1-0" and body["lease_token"] == str(claimed.lease_token)


def test_detail_runs_a_fixed_number_of_queries(operator_client, django_assert_num_queries):
    job = services.enqueue("noop")
    claimed = services.claim(worker_ids=["test-1-0"])[0]
    for n in range(20):
        services.log_message(job.id, claimed.lease_token, worker_id="test-1-0", message=str(n))
    forget_all()  # counted cold, as above
    with django_assert_num_queries(5):  # token+user, user perms, group perms, job, events
        response = operator_client.get(f"{JOBS}{job.id}/")
    assert len(response.json()["events"]) == 22


@pytest.mark.parametrize("job_id", ["0", "abc", "99999999999999999999999", "-1", "12345678"])
def test_unknown_job_is_404(operator_client, job_id):
    for response in (operator_client.get(f"{JOBS}{job_id}/"),
                     operator_client.post(f"{JOBS}{job_id}/cancel/"),
                     operator_client.post(f"{JOBS}{job_id}/retry/"),
                     operator_client.get(f"{JOBS}{job_id}/events/")):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


# -- cancel and retry -----------------------------------------------------------------------

def test_cancel_a_queued_job_then_409(operator_client):
    job = services.enqueue("noop")
    response = operator_client.post(f"{JOBS}{job.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    again = operator_client.post(f"{JOBS}{job.id}/cancel/")
    assert again.status_code == 409
    assert again.json() | {"detail": ""} == {"code": "invalid_transition", "status": "cancelled",
                                             "detail": ""}
    event = JobEvent.objects.filter(job=job, kind="cancelled").get()
    assert "operator" in event.message


def test_cancel_a_running_job_requests_a_stop(operator_client):
    job = services.enqueue("noop")
    services.claim(worker_ids=["test-1-0"], queues=None)
    body = operator_client.post(f"{JOBS}{job.id}/cancel/").json()
    assert body["status"] == "running" and body["cancel_requested_at"] is not None


@pytest.mark.parametrize("final", [Status.SUCCEEDED, Status.FAILED])
def test_cancel_a_finished_job_is_409(operator_client, final):
    job = services.enqueue("noop")
    _finish(job.id, final)
    assert operator_client.post(f"{JOBS}{job.id}/cancel/").status_code == 409


def test_retry_failed_and_cancelled_jobs_only(operator_client):
    failed = services.enqueue("noop")
    _finish(failed.id, Status.FAILED)
    response = operator_client.post(f"{JOBS}{failed.id}/retry/")
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert response.json()["last_error"]  # history kept
    queued = services.enqueue("noop")
    assert operator_client.post(f"{JOBS}{queued.id}/retry/").status_code == 409
    services.cancel(queued.id)
    assert operator_client.post(f"{JOBS}{queued.id}/retry/").status_code == 200
    succeeded = services.enqueue("noop")
    _finish(succeeded.id, Status.SUCCEEDED)
    assert operator_client.post(f"{JOBS}{succeeded.id}/retry/").json()["code"] == "invalid_transition"


def test_job_types_lists_the_registry_with_defaults(operator_client):
    types = {t["name"]: t for t in operator_client.get("/api/v1/job-types/").json()}
    assert {"noop", "sleep", "email_send"} <= set(types)
    assert types["email_send"]["max_attempts"] == 5
    assert types["email_send"]["payload_example"] == {"to": "ada@example.com", "subject": "Welcome"}
    assert types["noop"]["queue"] == "default"
