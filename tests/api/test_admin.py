"""The admin: read-only jobs, cancel/retry actions through the services, read-only events."""
import pytest
from django.test import Client

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, JobEvent, QueueSetting

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/django_pg_jobqueue/job/"


@pytest.fixture
def staff_operator(make_user):
    user = make_user("ops", perms=["view_job", "change_job", "view_jobevent", "view_queuesetting",
                                   "change_queuesetting", "add_queuesetting"], is_staff=True)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def staff_viewer(make_user):
    client = Client()
    client.force_login(make_user("look", perms=["view_job", "view_jobevent"], is_staff=True))
    return client


def test_changelist_filters_and_search(staff_operator):
    a = services.enqueue("email_send", {"to": "a@example.com"}, idempotency_key="idem-1")
    b = services.enqueue("noop", priority=5, queue="reports")
    page = staff_operator.get(CHANGELIST)
    assert page.status_code == 200
    assert {a, b} <= set(page.context["cl"].result_list)
    for query, expected in [({"status__exact": "queued"}, {a, b}), ({"type": "noop"}, {b}),
                            ({"queue": "reports"}, {b}), ({"priority": "high"}, {b}),
                            ({"q": "idem-1"}, {a}), ({"q": str(b.id)}, {b}),
                            ({"q": "email_send"}, {a}), ({"q": "99999999999999999999"}, set())]:
        response = staff_operator.get(CHANGELIST, query)
        assert response.status_code == 200, query
        assert set(response.context["cl"].result_list) == expected, query


def test_the_by_queue_filter_lists_every_queue_that_has_jobs_or_a_setting(staff_operator):
    for queue in ("emails", "media", "reports"):
        services.enqueue("noop", queue=queue)
    services.enqueue("noop", queue="done-today")
    Job.objects.filter(queue="done-today").update(status="cancelled", finished_at="2026-01-01T00:00Z")
    QueueSetting.objects.create(queue="nightly", paused=True)  # no jobs left, a setting

    page = staff_operator.get(CHANGELIST)
    [queue_filter] = [f for f in page.context["cl"].filter_specs if f.title == "queue"]
    offered = {value for value, _ in queue_filter.lookup_choices}
    assert {"default", "emails", "media", "reports", "done-today", "nightly"} <= offered


def test_cancel_and_retry_actions_use_the_services(staff_operator):
    queued = services.enqueue("noop")
    response = staff_operator.post(CHANGELIST, {"action": "cancel_jobs", "_selected_action": [queued.id]},
                                   follow=True)
    assert response.status_code == 200
    queued.refresh_from_db()
    assert queued.status == "cancelled"
    assert JobEvent.objects.filter(job=queued, kind="cancelled", message__contains="by ops").exists()
    staff_operator.post(CHANGELIST, {"action": "retry_jobs", "_selected_action": [queued.id]})
    queued.refresh_from_db()
    assert queued.status == "queued"
    assert JobEvent.objects.filter(job=queued, kind="retried").exists()


def test_an_action_refused_by_the_state_machine_is_reported_not_forced(staff_operator):
    job = services.enqueue("noop")
    response = staff_operator.post(CHANGELIST, {"action": "retry_jobs", "_selected_action": [job.id]},
                                   follow=True)
    job.refresh_from_db()
    assert job.status == "queued"
    assert any("refused" in str(m) for m in response.context["messages"])


def test_viewers_cannot_run_actions(staff_viewer):
    job = services.enqueue("noop")
    staff_viewer.post(CHANGELIST, {"action": "cancel_jobs", "_selected_action": [job.id]})
    job.refresh_from_db()
    assert job.status == "queued"


def test_a_job_cannot_be_added_edited_or_deleted(staff_operator, make_user):
    job = services.enqueue("noop")
    assert staff_operator.get("/admin/django_pg_jobqueue/job/add/").status_code == 403
    page = staff_operator.get(f"/admin/django_pg_jobqueue/job/{job.id}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert page.context["adminform"].form.fields == {}  # every field read-only
    post = staff_operator.post(f"/admin/django_pg_jobqueue/job/{job.id}/change/", {"status": "succeeded"})
    assert post.status_code == 403
    assert staff_operator.post(f"/admin/django_pg_jobqueue/job/{job.id}/delete/", {"post": "yes"}).status_code == 403
    job.refresh_from_db()
    assert job.status == "queued"
    superuser = make_user("root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(superuser)
    assert client.post(f"/admin/django_pg_jobqueue/job/{job.id}/change/", {"status": "succeeded"}).status_code == 403
    assert client.get("/admin/django_pg_jobqueue/job/add/").status_code == 403


def test_the_change_page_shows_the_latest_events_read_only(staff_operator):
    job = services.enqueue("noop")
    claimed = services.claim(worker_ids=["h-1-0"], job_ids=[job.id])[0]
    for n in range(70):
        services.log_message(job.id, claimed.lease_token, worker_id="h-1-0", message=f"m{n}")
    page = staff_operator.get(f"/admin/django_pg_jobqueue/job/{job.id}/change/")
    formset = page.context["inline_admin_formsets"][0].formset
    shown = [form.instance.id for form in formset.forms]
    assert len(shown) == 50
    assert shown == list(JobEvent.objects.filter(job=job).order_by("id").values_list("id", flat=True))[-50:]
    assert b"h-1-0" in page.content  # the lease owner


def test_event_admin_is_read_only(staff_operator):
    job = services.enqueue("noop")
    event = JobEvent.objects.get(job=job)
    assert staff_operator.get("/admin/django_pg_jobqueue/jobevent/").status_code == 200
    assert staff_operator.get("/admin/django_pg_jobqueue/jobevent/", {"q": str(job.id)}).status_code == 200
    assert staff_operator.get("/admin/django_pg_jobqueue/jobevent/", {"q": "abc"}).status_code == 200
    assert staff_operator.get("/admin/django_pg_jobqueue/jobevent/add/").status_code == 403
    assert staff_operator.post(f"/admin/django_pg_jobqueue/jobevent/{event.id}/change/", {"kind": "failed"}).status_code == 403


def test_queue_settings_are_editable_through_the_services(staff_operator):
    services.enqueue("noop", queue="reports")  # a setting only for a queue that exists
    response = staff_operator.post("/admin/django_pg_jobqueue/queuesetting/add/",
                                   {"queue": "reports", "paused": "on", "concurrency_limit": "2"})
    assert response.status_code == 302
    setting = QueueSetting.objects.get(queue="reports")
    assert setting.paused and setting.concurrency_limit == 2
    staff_operator.post("/admin/django_pg_jobqueue/queuesetting/", {"action": "resume", "_selected_action": ["reports"]})
    setting.refresh_from_db()
    assert not setting.paused


def test_a_queue_settings_change_in_the_admin_shows_the_weights_and_keeps_them(staff_operator):
    services.enqueue("noop", queue="reports")
    services.set_fairness_weights("reports", {"tenant:big": 4})
    page = staff_operator.get("/admin/django_pg_jobqueue/queuesetting/reports/change/")
    assert page.status_code == 200 and "tenant:big" in page.content.decode()
    response = staff_operator.post("/admin/django_pg_jobqueue/queuesetting/reports/change/",
                                   {"fair": "on", "concurrency_limit": "3"})
    assert response.status_code == 302
    setting = QueueSetting.objects.get(queue="reports")
    assert (setting.fair, setting.concurrency_limit) == (True, 3)
    assert setting.fairness_weights == {"tenant:big": 4}


def test_rate_limits_are_set_and_removed_in_the_admin_through_the_services(make_user):
    from django_pg_jobqueue.models import RateLimit
    from django_pg_jobqueue.services import claiming

    client = Client()
    client.force_login(make_user("limits", perms=["view_ratelimit", "add_ratelimit",
                                                  "change_ratelimit", "delete_ratelimit"],
                                 is_staff=True))
    add = "/admin/django_pg_jobqueue/ratelimit/add/"
    try:
        response = client.post(add, {"kind": "key", "name": "customer:*", "max_starts": "2",
                                     "period_seconds": "1"})
        assert response.status_code == 302
        limit = RateLimit.objects.get(kind="key", name="customer:*")
        assert (limit.max_starts, limit.period_seconds) == (2, 1.0)
        refused = client.post(add, {"kind": "type", "name": "no*", "max_starts": "2",
                                    "period_seconds": "1"})
        assert refused.status_code == 200 and "only a key limit takes a prefix" in refused.content.decode()
        refused = client.post(add, {"kind": "queue", "name": "nope", "max_starts": "2",
                                    "period_seconds": "1"})
        assert refused.status_code == 200 and "no queue named" in refused.content.decode()
        client.post("/admin/django_pg_jobqueue/ratelimit/", {
            "action": "delete_selected", "_selected_action": [limit.pk], "post": "yes"})
        assert not RateLimit.objects.exists()
    finally:
        claiming.forget_cached_limits()


def test_host_overrides_are_set_and_removed_in_the_admin_through_the_service(make_user):
    from django_pg_jobqueue.models import AuditLogEntry, WorkerOverride

    services.heartbeat("vm-1-100", hostname="vm-1", pid=100, threads=4, queues=["*"])
    services.enqueue("noop", queue="reports")
    client = Client()
    client.force_login(make_user("hosts", perms=[f"{verb}_workeroverride" for verb in
                                                 ("view", "add", "change", "delete")],
                                 is_staff=True))
    add = "/admin/django_pg_jobqueue/workeroverride/add/"
    response = client.post(add, {"hostname": "vm-1", "queue": "reports", "threads": "1"})
    assert response.status_code == 302
    row = WorkerOverride.objects.get()
    assert (row.threads, row.stopped, row.actor) == (1, False, "hosts")
    refused = client.post(add, {"hostname": "vm-9", "queue": "reports", "stopped": "on"})
    assert refused.status_code == 200 and "no worker host named" in refused.content.decode()
    refused = client.post(add, {"hostname": "vm-1", "queue": "media", "threads": ""})
    assert refused.status_code == 200 and "threads: give threads" in refused.content.decode()
    client.post("/admin/django_pg_jobqueue/workeroverride/", {
        "action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert not WorkerOverride.objects.exists()
    assert list(AuditLogEntry.objects.values_list("action", flat=True).order_by("id")) == [
        "set_worker_override", "remove_worker_override"]


def test_the_admin_index_names_worker_processes_in_plain_english(make_user):
    client = Client()
    client.force_login(make_user("boss", perms=["view_workerprocess"], is_staff=True))
    page = client.get("/admin/").content.decode()
    assert "Worker processes" in page
    assert "processs" not in page


@pytest.fixture
def staff_deleter(make_user):
    client = Client()
    client.force_login(make_user("janitor", perms=["view_job", "delete_job", "view_jobevent"],
                                 is_staff=True))
    return client


def _finished() -> Job:
    job = services.enqueue("noop")
    services.cancel(job.id)
    return job


def test_the_delete_action_confirms_then_deletes_only_finished_jobs_with_their_events(staff_deleter):
    done, queued = _finished(), services.enqueue("noop")
    selection = {"action": "delete_jobs", "_selected_action": [done.id, queued.id]}

    confirm = staff_deleter.post(CHANGELIST, selection)
    assert confirm.status_code == 200 and b"Are you sure" in confirm.content
    assert Job.objects.filter(pk=done.id).exists()  # nothing yet

    response = staff_deleter.post(CHANGELIST, {**selection, "post": "yes"}, follow=True)

    assert not Job.objects.filter(pk=done.id).exists()
    assert not JobEvent.objects.filter(job_id=done.id).exists()
    assert Job.objects.get(pk=queued.id).status == "queued"
    shown = [str(m) for m in response.context["messages"]]
    assert any("Successfully deleted 1" in m for m in shown), shown
    assert any("1 job(s) not deleted" in m and "cancelled first" in m for m in shown), shown


def test_the_delete_page_refuses_unfinished_jobs_and_deletes_finished_ones_through_the_service(
        staff_deleter, make_user):
    queued, done = services.enqueue("noop"), _finished()
    superuser = Client()
    superuser.force_login(make_user("root", is_staff=True, is_superuser=True))
    for client in (staff_deleter, superuser):
        assert client.post(f"{CHANGELIST}{queued.id}/delete/", {"post": "yes"}).status_code == 403
    assert Job.objects.get(pk=queued.id).status == "queued"

    assert staff_deleter.post(f"{CHANGELIST}{done.id}/delete/", {"post": "yes"}).status_code == 302
    assert not Job.objects.filter(pk=done.id).exists()
    assert not JobEvent.objects.filter(job_id=done.id).exists()


def test_without_delete_job_there_is_no_delete_action(staff_operator):
    done = _finished()
    page = staff_operator.get(CHANGELIST)
    assert "delete_jobs" not in dict(page.context["action_form"].fields["action"].choices)
    staff_operator.post(CHANGELIST, {"action": "delete_jobs", "_selected_action": [done.id], "post": "yes"})
    assert Job.objects.filter(pk=done.id).exists()


def test_the_change_page_shows_the_job_s_signals_read_only(staff_operator):
    from django_pg_jobqueue import send_signal

    job = services.enqueue("noop")
    send_signal(job.id, "approved-by-ann", {"ok": True})
    page = staff_operator.get(f"/admin/django_pg_jobqueue/job/{job.id}/change/")
    assert page.status_code == 200
    assert b"approved-by-ann" in page.content
    formset = page.context["inline_admin_formsets"][1].formset
    assert [form.instance.name for form in formset.forms] == ["approved-by-ann"]
    assert not formset.can_delete


def test_the_send_signal_action_sends_the_named_signal_through_the_service(staff_operator):
    from django_pg_jobqueue.models import JobSignal

    job = services.enqueue("noop", {})
    response = staff_operator.post(CHANGELIST, {
        "action": "send_signal_jobs", "_selected_action": [job.id],
        "signal_name": "approved", "signal_data": '{"by": "ann"}'}, follow=True)
    assert "Sent signal &#x27;approved&#x27; to 1 job(s)." in response.content.decode()
    assert JobSignal.objects.get(job_id=job.id, name="approved").data == {"by": "ann"}
    assert JobEvent.objects.get(job_id=job.id, kind="signalled").data["actor"] == "ops"
    again = staff_operator.post(CHANGELIST, {
        "action": "send_signal_jobs", "_selected_action": [job.id],
        "signal_name": "approved", "signal_data": ""}, follow=True)
    assert "1 refused" in again.content.decode()  # each name is sent once, as in the API
    bad = staff_operator.post(CHANGELIST, {
        "action": "send_signal_jobs", "_selected_action": [job.id],
        "signal_name": "other", "signal_data": "{nope"}, follow=True)
    assert "its data is not JSON" in bad.content.decode()
    assert not JobSignal.objects.filter(job_id=job.id, name="other").exists()


def test_viewers_have_no_send_signal_action(staff_viewer):
    from django_pg_jobqueue.models import JobSignal

    job = services.enqueue("noop", {})
    page = staff_viewer.get(CHANGELIST)
    assert page.context["action_form"] is None  # no action at all without change_job
    staff_viewer.post(CHANGELIST, {"action": "send_signal_jobs", "_selected_action": [job.id],
                                   "signal_name": "approved"})
    assert not JobSignal.objects.exists()
