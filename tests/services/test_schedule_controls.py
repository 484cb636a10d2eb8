"""Periodic schedules an operator drives: run one now, pause and resume it, and read its tick
history (each tick, its job and the job's outcome), through the API and the services."""
import json

import pytest
from django.db import connection
from django.test import override_settings

from django_pg_jobqueue import selectors, services, sql
from django_pg_jobqueue.exceptions import ScheduleNotFound
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.worker.periodic import PeriodicEnqueuer

pytestmark = pytest.mark.django_db

SCHEDULES = "/api/v1/schedules/"
# Yearly, so that the latest tick cannot change while a test runs.
ENTRIES = {"new-year": {"cron": "0 0 1 1 *", "type": "noop", "payload": {"n": 1},
                        "queue": "reports"},
           "other": {"cron": "0 0 1 1 *", "type": "noop"}}
periodic_settings = override_settings(JOB_PERIODIC=ENTRIES)


def run_job(job_id: int) -> None:
    [c] = services.claim(worker_ids=["w-1"], job_ids=[job_id])
    services.complete(c.id, c.lease_token, worker_id="w-1", result={})


@periodic_settings
def test_run_now_enqueues_one_job_per_request_shown_in_the_tick_history(operator_client):
    first = operator_client.post(f"{SCHEDULES}new-year/run/")
    second = operator_client.post(f"{SCHEDULES}new-year/run/")
    assert first.status_code == second.status_code == 201, first.json()
    a, b = first.json(), second.json()
    assert a["id"] != b["id"]  # two requests, two jobs
    assert (a["type"], a["payload"], a["queue"]) == ("noop", {"n": 1}, "reports")
    created = JobEvent.objects.get(job_id=a["id"], kind="created")
    assert created.data == {"schedule": "new-year", "run_now": True}
    assert "by operator" in created.message

    PeriodicEnqueuer().run_once()  # the latest tick, as a worker enqueues it
    tick_job = Job.objects.get(idempotency_key__startswith="periodic:new-year:2")
    run_job(tick_job.id)

    ticks = operator_client.get(f"{SCHEDULES}new-year/ticks/").json()
    assert [t["job"]["id"] for t in ticks] == [tick_job.id, b["id"], a["id"]]  # newest first
    assert ticks[0]["manual"] is False and ticks[0]["tick_at"] is not None
    assert ticks[0]["job"]["status"] == "succeeded" and ticks[0]["job"]["finished_at"]
    assert [t["manual"] for t in ticks[1:]] == [True, True]
    assert all(t["tick_at"] is None for t in ticks[1:])
    other = Job.objects.get(idempotency_key__startswith="periodic:other:")
    assert [t["job"]["id"] for t in operator_client.get(f"{SCHEDULES}other/ticks/").json()] == [
        other.id]  # each schedule's own jobs only
    assert len(operator_client.get(f"{SCHEDULES}new-year/ticks/", {"limit": 1}).json()) == 1

    row = {r["name"]: r for r in operator_client.get(SCHEDULES).json()}["new-year"]
    assert row["last_job"]["id"] == tick_job.id
    assert row["last_job"]["started_at"] and row["last_job"]["finished_at"]  # when it ran
    assert row["last_tick_at"] != row["last_job"]["started_at"]  # the tick's time, apart


@periodic_settings
def test_a_paused_schedule_enqueues_no_tick_until_resumed(operator_client):
    response = operator_client.post(f"{SCHEDULES}new-year/pause/")
    assert response.status_code == 200 and response.json()["paused"] is True

    counts = PeriodicEnqueuer().run_once()
    assert counts["paused"] == 1
    assert not Job.objects.filter(idempotency_key__startswith="periodic:new-year:").exists()
    assert Job.objects.filter(idempotency_key__startswith="periodic:other:").count() == 1

    # run now still runs a paused schedule: the operator asked for it
    assert operator_client.post(f"{SCHEDULES}new-year/run/").status_code == 201

    response = operator_client.post(f"{SCHEDULES}new-year/resume/")
    assert response.status_code == 200 and response.json()["paused"] is False
    PeriodicEnqueuer().run_once()  # a fresh process enqueues the latest tick again
    assert Job.objects.filter(idempotency_key__startswith="periodic:new-year:2").count() == 1


@periodic_settings
def test_pause_and_resume_are_conditional_writes_that_say_whether_they_changed_anything():
    assert services.pause_schedule("new-year") is True
    assert services.pause_schedule("new-year") is False  # already paused
    assert services.resume_schedule("new-year") is True
    assert services.resume_schedule("new-year") is False
    assert services.resume_schedule("other") is False  # never paused: no row, no change
    with pytest.raises(ScheduleNotFound):
        services.pause_schedule("nope")


@periodic_settings
def test_unknown_schedules_bad_limits_and_permissions(operator_client, viewer, client_for):
    for verb in ("run", "pause", "resume"):
        response = operator_client.post(f"{SCHEDULES}nope/{verb}/")
        assert response.status_code == 404 and response.json()["code"] == "schedule_not_found"
        assert client_for(viewer).post(f"{SCHEDULES}new-year/{verb}/").status_code == 403
    assert client_for(viewer).get(f"{SCHEDULES}new-year/ticks/").status_code == 200
    assert operator_client.get(f"{SCHEDULES}nope/ticks/").status_code == 404
    for limit in ("0", "501", "x"):
        response = operator_client.get(f"{SCHEDULES}new-year/ticks/", {"limit": limit})
        assert response.status_code == 400 and "limit" in response.json()["errors"]
    assert not Job.objects.exists()


@override_settings(JOB_PERIODIC={"broken": {"cron": "not a cron", "type": "noop"}})
def test_running_an_invalid_schedule_is_a_409_saying_why(operator_client):
    response = operator_client.post(f"{SCHEDULES}broken/run/")
    assert response.status_code == 409
    assert response.json()["code"] == "schedule_invalid" and "cron" in response.json()["detail"]


@periodic_settings
def test_the_tick_history_is_read_through_its_index():
    """A schedule's jobs are found through the index (its entries only), never by a pass over
    every job."""
    services.enqueue_many([{"type": "noop", "idempotency_key": f"periodic:s7:{i}"}
                           for i in range(3000)])
    services.enqueue_many([{"type": "noop", "idempotency_key": f"periodic:s{i % 40}:x{i}"}
                           for i in range(2000)] + [{"type": "noop"} for _ in range(2000)])
    with connection.cursor() as cur:
        cur.execute("ANALYZE jobs")
        cur.execute("EXPLAIN (FORMAT JSON) " + sql.SCHEDULE_JOBS, ["s7", 50])
        (plan,) = cur.fetchone()
    plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    shown = json.dumps(plan)
    assert "jobs_periodic_schedule_idx" in shown and "Seq Scan" not in shown, shown
    with pytest.raises(ScheduleNotFound):
        selectors.schedule_ticks("s7")  # not a declared schedule


@periodic_settings
def test_the_admin_lists_every_schedule_and_runs_pauses_and_resumes_them(make_user):
    from django.test import Client

    from django_pg_jobqueue.models import ScheduleSetting

    url = "/admin/django_pg_jobqueue/schedulesetting/"
    looker = Client()
    looker.force_login(make_user("look", perms=["view_job"], is_staff=True))
    page = looker.get(url)
    assert page.status_code == 200
    assert {s.name for s in page.context["cl"].result_list} == {"new-year", "other"}
    refused = looker.post(url, {"action": "pause", "_selected_action": ["new-year"]})
    assert not ScheduleSetting.objects.get(name="new-year").paused, refused.status_code

    ops = Client()
    ops.force_login(make_user("ops", perms=["view_job", "change_job"], is_staff=True))
    ops.post(url, {"action": "pause", "_selected_action": ["new-year"]})
    assert ScheduleSetting.objects.get(name="new-year").paused
    ops.post(url, {"action": "resume", "_selected_action": ["new-year"]})
    assert not ScheduleSetting.objects.get(name="new-year").paused
    response = ops.post(url, {"action": "run_now", "_selected_action": ["other"]}, follow=True)
    job = Job.objects.get(idempotency_key__startswith="periodic:other:manual:")
    assert any(f"job {job.id}" in str(m) for m in response.context["messages"])


RACER_SCRIPT = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django; django.setup()
from django_pg_jobqueue import services
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # all start at once
print(json.dumps({"paused": services.pause_schedule("race"),
                  "job": services.run_schedule("race").id}))
"""


@pytest.mark.django_db(transaction=True)
def test_four_processes_pausing_and_running_at_once_pause_once_and_make_four_jobs():
    """Pause is one conditional write: of four processes pausing at once, exactly one changed
    it. Run now makes one job per call: four calls at once, four jobs."""
    import subprocess
    import sys
    import time

    from tests.utils import REPO, worker_database_url

    env = {"DATABASE_URL": worker_database_url(), "PATH": "/usr/bin:/bin",
           "JOB_PERIODIC": json.dumps({"race": {"cron": "0 0 1 1 *", "type": "noop"}})}
    start = str(time.time() + 8)
    procs = [subprocess.Popen([sys.executable, "-c", RACER_SCRIPT, str(REPO / "backend"), start],
                              stdout=subprocess.PIPE, env=env, text=True) for _ in range(4)]
    results = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1])
               for p in procs]
    assert sorted(r["paused"] for r in results) == [False, False, False, True]
    assert len({r["job"] for r in results}) == 4
    assert Job.objects.filter(idempotency_key__startswith="periodic:race:manual:").count() == 4
