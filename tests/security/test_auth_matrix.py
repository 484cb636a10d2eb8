"""Who may do what, endpoint by endpoint: anonymous, no permission, viewer, operator, staff.
(No role here holds change_queuesetting, which a queue's limit needs, nor view_auditlogentry,
which the audit log needs: tests/api/test_api_audit_log.py gives it.)

Plus: public reads, session login with CSRF, throttling (429) and backpressure (503)."""
import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "nobody", "viewer", "operator", "staff"]


@pytest.fixture
def users(make_user):
    return {
        "anonymous": None,
        "nobody": make_user("nobody"),
        "viewer": make_user("viewer", perms=["view_job"]),
        "operator": make_user("operator", perms=["view_job", "add_job", "change_job"]),
        "staff": make_user("staff", is_staff=True),
    }


def _requests():
    """(name, kind, call(client) -> response, status when allowed). kind: read / add / change."""
    def job():
        return services.enqueue("noop")

    def queue():  # a queue exists once it holds a job (a typo's pause is a 404)
        services.enqueue("noop", queue="reports")
        return "reports"

    def cancelled():
        j = services.enqueue("noop")
        services.cancel(j.id)
        return j

    def succeeded():
        j = services.enqueue("noop")
        [c] = services.claim(worker_ids=["w-1"], job_ids=[j.id])
        services.complete(c.id, c.lease_token, worker_id="w-1", result={})
        return j

    return [
        ("list", "read", lambda c: c.get("/api/v1/jobs/"), 200),
        ("detail", "read", lambda c: c.get(f"/api/v1/jobs/{job().id}/"), 200),
        ("job events", "read", lambda c: c.get(f"/api/v1/jobs/{job().id}/events/"), 200),
        ("event feed", "read", lambda c: c.get("/api/v1/events/"), 200),
        ("job types", "read", lambda c: c.get("/api/v1/job-types/"), 200),
        ("metrics", "read", lambda c: c.get("/api/v1/metrics/"), 200),
        ("create", "add", lambda c: c.post("/api/v1/jobs/", {"type": "noop"}, format="json"), 201),
        ("bulk", "add", lambda c: c.post("/api/v1/jobs/bulk/", {"jobs": [{"type": "noop"}]},
                                         format="json"), 201),
        ("cancel", "change", lambda c: c.post(f"/api/v1/jobs/{job().id}/cancel/"), 200),
        ("retry", "change", lambda c: c.post(f"/api/v1/jobs/{cancelled().id}/retry/"), 200),
        ("queues", "read", lambda c: c.get("/api/v1/queues/"), 200),
        ("schedules", "read", lambda c: c.get("/api/v1/schedules/"), 200),
        ("queue pause", "change", lambda c: c.post(f"/api/v1/queues/{queue()}/pause/"), 200),
        ("queue resume", "change", lambda c: c.post(f"/api/v1/queues/{queue()}/resume/"), 200),
        ("queue detail", "read", lambda c: c.get(f"/api/v1/queues/{queue()}/"), 200),
        ("throughput", "read", lambda c: c.get("/api/v1/metrics/throughput/"), 200),
        ("latency", "read", lambda c: c.get("/api/v1/metrics/latency/"), 200),
        ("suggestions", "read", lambda c: c.get("/api/v1/jobs/suggestions/?field=queue"), 200),
        # The limit is configuration: change_queuesetting (tests/api/test_api_queue_page.py).
        ("queue limit", "queue_setting", lambda c: c.patch(f"/api/v1/queues/{queue()}/",
                                                    {"concurrency_limit": 2}, format="json"), 200),
        ("bulk retry", "change", lambda c: c.post("/api/v1/jobs/retry/", {"all": True},
                                                  format="json"), 200),
        ("retry selected", "change", lambda c: c.post(
            "/api/v1/jobs/retry/", {"ids": [cancelled().id]}, format="json"), 200),
        ("rerun", "change", lambda c: c.post(f"/api/v1/jobs/{succeeded().id}/rerun/"), 201),
        ("schedule run", "change", lambda c: c.post(f"{SCHEDULE}run/"), 201),
        ("schedule pause", "change", lambda c: c.post(f"{SCHEDULE}pause/"), 200),
        ("schedule resume", "change", lambda c: c.post(f"{SCHEDULE}resume/"), 200),
        ("schedule ticks", "read", lambda c: c.get(f"{SCHEDULE}ticks/"), 200),
        ("lost workers", "read", lambda c: c.get("/api/v1/workers/lost/"), 200),
        # Who did what: view_auditlogentry, never opened by public reads.
        ("audit log", "audit", lambda c: c.get("/api/v1/audit/"), 200),
    ]


SCHEDULE = "/api/v1/schedules/matrix/"
MATRIX_SCHEDULE = {"matrix": {"cron": "0 0 1 1 *", "type": "noop"}}



ALLOWED = {
    "anonymous": set(), "nobody": set(), "staff": set(),
    "viewer": {"read"}, "operator": {"read", "add", "change"},
}


@pytest.mark.parametrize("role", ROLES)
@override_settings(JOB_PERIODIC=MATRIX_SCHEDULE)
def test_auth_matrix(role, users, client_for):
    client = client_for(users[role])
    for name, kind, call, ok_status in _requests():
        response = call(client)
        if kind in ALLOWED[role]:
            expected = ok_status
        else:
            expected = 401 if role == "anonymous" else 403
        assert response.status_code == expected, (role, name, response.json())
        if expected == 401:
            assert response["WWW-Authenticate"] == "Token"
            assert response.json()["code"] == "not_authenticated"
        if expected == 403:
            assert response.json()["code"] == "permission_denied"


@pytest.mark.parametrize("role", ROLES)
def test_open_endpoints(role, users, client_for):
    client = client_for(users[role])
    assert client.get("/api/health/").status_code == 200
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/v1/auth/csrf/").status_code == 200
    me = client.get("/api/v1/auth/me/")
    assert me.status_code == (401 if role == "anonymous" else 200)


@override_settings(JOB_API_PUBLIC_READ=True, JOB_PERIODIC=MATRIX_SCHEDULE)
def test_public_read_opens_reads_only(client_for):
    anonymous = client_for(None)
    for name, kind, call, ok_status in _requests():
        assert call(anonymous).status_code == (ok_status if kind == "read" else 401), name


def test_me_reports_permissions(users, client_for):
    body = client_for(users["viewer"]).get("/api/v1/auth/me/").json()
    assert body["username"] == "viewer" and body["permissions"] == ["django_pg_jobqueue.view_job"]
    assert body["can"] == {"view": True, "create": False, "cancel": False, "retry": False,
                           "rerun": False, "run_now": False, "delete": False,
                           "change_queue": False, "view_audit_log": False}
    operator = client_for(users["operator"]).get("/api/v1/auth/me/").json()
    assert operator["can"] == {"view": True, "create": True, "cancel": True, "retry": True,
                              "rerun": True, "run_now": True, "delete": False,
                              "change_queue": False, "view_audit_log": False}


def test_session_login_needs_csrf_and_session_writes_need_it_too(users):
    client = APIClient(enforce_csrf_checks=True)
    credentials = {"username": "operator", "password": "pw-for-tests-1"}
    assert client.post("/api/v1/auth/login/", credentials, format="json").status_code == 403
    token = client.get("/api/v1/auth/csrf/").json()["csrf_token"]
    assert client.cookies["csrftoken"].value
    bad = client.post("/api/v1/auth/login/", {**credentials, "password": "wrong"}, format="json",
                      HTTP_X_CSRFTOKEN=token)
    assert bad.status_code == 400 and "invalid username or password" in bad.json()["detail"]
    response = client.post("/api/v1/auth/login/", credentials, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200, response.json()
    assert response.json()["username"] == "operator" and "django_pg_jobqueue.add_job" in response.json()["permissions"]
    assert client.get("/api/v1/auth/me/").status_code == 200
    token = client.cookies["csrftoken"].value  # login rotates the token
    no_csrf = client.post("/api/v1/jobs/", {"type": "noop"}, format="json")
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["detail"]
    assert not Job.objects.exists()
    created = client.post("/api/v1/jobs/", {"type": "noop"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert created.status_code == 201
    assert client.post("/api/v1/auth/logout/", HTTP_X_CSRFTOKEN=token).status_code == 204
    assert client.get("/api/v1/auth/me/").status_code == 401


def test_login_refuses_unknown_fields_and_inactive_users(make_user):
    make_user("gone", is_active=False)
    client = APIClient()
    response = client.post("/api/v1/auth/login/", {"username": "gone", "password": "pw-for-tests-1"},
                           format="json")
    assert response.status_code == 400
    assert client.post("/api/v1/auth/login/", {"username": "x", "password": "y", "is_staff": True},
                       format="json").status_code == 400


@override_settings(JOB_CREATE_RATE="3/min")
def test_creation_is_throttled_per_user_with_retry_after(users, client_for):
    operator = client_for(users["operator"])
    statuses = [operator.post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code
                for _ in range(3)]
    assert statuses == [201, 201, 201]
    throttled = operator.post("/api/v1/jobs/bulk/", {"jobs": [{"type": "noop"}]}, format="json")
    assert throttled.status_code == 429
    assert throttled.json()["code"] == "throttled"
    assert 1 <= int(throttled["Retry-After"]) <= 61  # the period, plus at most one slice of it
    assert operator.get("/api/v1/jobs/").status_code == 200  # reads are not throttled
    other = users["operator"].__class__.objects.create_user("op2")
    other.user_permissions.set(users["operator"].user_permissions.all())
    assert client_for(other).post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code == 201


@override_settings(JOB_MAX_QUEUE_DEPTH=3)
def test_backpressure_answers_503_with_retry_after(operator_client):
    for i in range(2):
        services.enqueue("noop", idempotency_key=f"k{i}")
    # (API keys are the user's own, apart from Python's: this one's first use fills the queue.)
    assert operator_client.post("/api/v1/jobs/", {"type": "noop", "idempotency_key": "k0"},
                                format="json").status_code == 201
    full = operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json")
    assert full.status_code == 503
    assert full.json()["code"] == "queue_full" and full["Retry-After"] == "5"
    bulk = operator_client.post("/api/v1/jobs/bulk/", {"jobs": [{"type": "noop"}]}, format="json")
    assert bulk.status_code == 503
    # A retried request whose job already exists creates nothing: it still gets its job.
    replay = operator_client.post("/api/v1/jobs/", {"type": "noop", "idempotency_key": "k0"},
                                  format="json")
    assert replay.status_code == 200 and replay["X-Idempotency-Replay"] == "true"
    services.cancel(Job.objects.queued().first().id)
    assert operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json").status_code == 201
    assert Job.objects.queued().count() == 3
