"""GET /api/v1/schedules/: the periodic entries, their next runs and their latest ticks' jobs."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue.compat import UTC
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.worker.periodic import PeriodicEnqueuer

pytestmark = pytest.mark.django_db

SCHEDULES = "/api/v1/schedules/"
PARIS = ZoneInfo("Europe/Paris")
FIELDS = {"name", "cron", "timezone", "type", "task", "payload", "args", "kwargs", "queue",
          "priority", "max_attempts", "timeout_seconds", "source", "valid", "problems",
          "paused", "next_run_at", "last_tick_at", "last_job"}
ENTRIES = {
    # Yearly, so that the latest tick cannot change between the enqueue and the read.
    "new-year": {"cron": "0 0 1 1 *", "timezone": "Europe/Paris", "type": "noop",
                 "payload": {"n": 1}, "queue": "reports", "priority": 5, "max_attempts": 2,
                 "timeout_seconds": 60},
    "sum": {"cron": "0 0 1 1 *", "task": "tests.tasks.test_tasks_backend.add", "args": [1],
            "kwargs": {"b": 2}},
}


def _by_name(response):
    assert response.status_code == 200, response.json()
    return {row["name"]: row for row in response.json()}


def _at(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@override_settings(JOB_PERIODIC=ENTRIES)
def test_each_entry_with_its_next_run_and_the_job_of_its_latest_tick(viewer, client_for):
    before = _by_name(client_for(viewer).get(SCHEDULES))
    assert before["new-year"]["last_job"] is None  # no worker ran at its latest tick
    PeriodicEnqueuer().run_once()  # what a worker process does

    rows = _by_name(client_for(viewer).get(SCHEDULES))

    row = rows["new-year"]
    assert set(row) == FIELDS
    local_year = timezone.now().astimezone(PARIS).year
    assert _at(row["next_run_at"]) == datetime(local_year + 1, 1, 1, tzinfo=PARIS).astimezone(UTC)
    assert _at(row["last_tick_at"]) == datetime(local_year, 1, 1, tzinfo=PARIS).astimezone(UTC)
    job = Job.objects.get(idempotency_key__startswith="periodic:new-year:")
    assert row["last_job"] == {"id": job.id, "status": "queued", "started_at": None,
                               "finished_at": None}
    assert {k: row[k] for k in ("cron", "timezone", "type", "task", "payload", "queue",
                                "priority", "max_attempts", "timeout_seconds", "source",
                                "valid", "problems")} == {
        "cron": "0 0 1 1 *", "timezone": "Europe/Paris", "type": "noop", "task": None,
        "payload": {"n": 1}, "queue": "reports", "priority": 5, "max_attempts": 2,
        "timeout_seconds": 60, "source": "settings", "valid": True, "problems": []}
    task = rows["sum"]
    assert (task["type"], task["task"]) == (None, "tests.tasks.test_tasks_backend.add")
    assert task["args"] == [1] and task["kwargs"] == {"b": 2} and task["payload"] == {}
    assert task["last_job"]["status"] == "queued" and task["valid"]


@override_settings(JOB_PERIODIC={"bad-cron": {"cron": "61 * * * *", "type": "noop"},
                                 "no-handler": {"cron": "* * * * *", "type": "no_such_type"}})
def test_invalid_entries_are_listed_with_their_problems(operator_client):
    rows = _by_name(operator_client.get(SCHEDULES))
    bad = rows["bad-cron"]
    assert bad["valid"] is False and bad["next_run_at"] is None and bad["last_tick_at"] is None
    assert any("invalid cron" in p for p in bad["problems"])
    unknown = rows["no-handler"]
    assert unknown["valid"] is False and unknown["next_run_at"] is not None
    assert any("no handler" in p for p in unknown["problems"])


@override_settings(JOB_PERIODIC={"odd": {
    "cron": "0 * * * *", "type": "noop", "priority": "high", "timeout_seconds": "5m",
    "max_attempts": 0, "payload": [1, 2], "queue": 7, "args": "x"}})
def test_settings_values_of_the_wrong_type_make_the_entry_invalid_not_a_500(operator_client):
    row = _by_name(operator_client.get(SCHEDULES))["odd"]
    assert row["valid"] is False
    assert (row["priority"], row["timeout_seconds"], row["queue"]) == (None, None, None)
    assert row["payload"] == {} and row["args"] == []
    assert row["max_attempts"] == 0
    problems = " | ".join(row["problems"])
    for name in ("'priority'", "'timeout_seconds'", "'max_attempts'", "'payload'", "'queue'", "'args'"):
        assert name in problems, (name, problems)


@override_settings(JOB_PERIODIC={})
def test_no_entries_is_an_empty_list(operator_client):
    names = [r["name"] for r in operator_client.get(SCHEDULES).json()]
    assert "new-year" not in names and all(isinstance(n, str) for n in names)
