"""Periodic jobs: cron in time zones, each tick enqueued exactly once, missed ticks."""
import json
import logging
import re
from datetime import datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_pg_jobqueue import periodic as periodic_module
from django_pg_jobqueue.compat import UTC
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.periodic import (
    PeriodicEntry,
    check_periodic,
    periodic,
    schedule,
)
from django_pg_jobqueue.registry import handler, registry
from django_pg_jobqueue.worker.periodic import PeriodicEnqueuer
from tests.utils import spawn_workers, wait_until_jobs

EVERY_SECOND = {"tick": {"cron": "* * * * * *", "type": "noop"}}
T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


def periodic_jobs(name="tick"):
    return Job.objects.filter(idempotency_key__startswith=f"periodic:{name}:").order_by("id")


def test_cron_ticks_follow_the_entry_time_zone_across_daylight_saving():
    entry = PeriodicEntry(name="nine", cron="0 9 * * *", timezone="America/New_York", type="noop")
    # 9:00 in New York is 14:00 UTC in winter and 13:00 UTC once DST starts (2030-03-10).
    assert entry.next_tick(datetime(2030, 3, 8, 15, 0, tzinfo=UTC)) == datetime(
        2030, 3, 9, 14, 0, tzinfo=UTC)
    assert entry.next_tick(datetime(2030, 3, 9, 15, 0, tzinfo=UTC)) == datetime(
        2030, 3, 10, 13, 0, tzinfo=UTC)
    assert entry.latest_tick(datetime(2030, 3, 10, 13, 0, tzinfo=UTC)) == datetime(
        2030, 3, 10, 13, 0, tzinfo=UTC)
    assert entry.key(datetime(2030, 3, 10, 13, 0, tzinfo=UTC)) == \
        "periodic:nine:2030-03-10T13:00:00+00:00"


@override_settings(JOB_PERIODIC=EVERY_SECOND)
def test_a_tick_is_enqueued_once_however_many_enqueuers_see_it(db):
    enqueuers = [PeriodicEnqueuer() for _ in range(3)]
    counts = [e.run_once(now=T0 + timedelta(milliseconds=300)) for e in enqueuers]
    assert [c["enqueued"] for c in counts] == [1, 0, 0]
    assert [c["existing"] for c in counts] == [0, 1, 1]
    [job] = periodic_jobs()
    assert job.idempotency_key == "periodic:tick:2030-01-01T12:00:00+00:00"
    assert job.type == "noop" and job.status == "queued"


@override_settings(JOB_PERIODIC=EVERY_SECOND)
def test_only_the_latest_missed_tick_is_enqueued_when_a_worker_starts(db):
    enqueuer = PeriodicEnqueuer()  # a process starting 10 s after the last worker stopped
    assert enqueuer.run_once(now=T0 + timedelta(seconds=10.5))["enqueued"] == 1
    # While it runs, a slow pass skips nothing: ticks 11, 12 and 13 all come.
    assert enqueuer.run_once(now=T0 + timedelta(seconds=13.2))["enqueued"] == 3
    # After a stall longer than MAX_CATCH_UP ticks (a database outage): the latest only.
    counts = enqueuer.run_once(now=T0 + timedelta(seconds=100.1))
    assert counts["enqueued"] == 1 and counts["skipped"] > 0
    ticks = [j.idempotency_key.split(":", 2)[2] for j in periodic_jobs()]
    assert ticks == [(T0 + timedelta(seconds=s)).isoformat() for s in (10, 11, 12, 13, 100)]
    # The pass sleeps until the next tick, not a fixed interval.
    assert enqueuer.interval <= 1.0


def test_the_periodic_decorator_registers_handlers_and_the_schedule_shows_next_runs(db):
    @periodic(cron="*/5 * * * *", timezone="Europe/Paris", payload={"n": 1}, priority=5)
    @handler("test_five_minutely")
    def five_minutely(ctx, payload):
        return payload

    try:
        now = datetime(2030, 6, 1, 10, 7, 30, tzinfo=UTC)
        PeriodicEnqueuer().run_once(now=now)
        [row] = [r for r in schedule(now=now) if r["name"] == "test_five_minutely"]
        assert row["type"] == "test_five_minutely" and row["source"] == "decorator"
        assert row["timezone"] == "Europe/Paris" and row["valid"]
        assert row["next_run_at"] == datetime(2030, 6, 1, 10, 10, tzinfo=UTC)
        assert row["last_tick_at"] == datetime(2030, 6, 1, 10, 5, tzinfo=UTC)
        job = Job.objects.get(pk=row["last_job"]["id"])
        assert job.payload == {"n": 1} and job.priority == 5
        assert row["last_job"]["status"] == "queued"
    finally:
        periodic_module._declared.pop("test_five_minutely", None)
        registry.unregister("test_five_minutely")


def test_a_periodic_django_task_is_enqueued_through_the_tasks_backend(db):
    entries = {"sum": {"cron": "0 * * * *", "task": "tests.tasks.test_tasks_backend.add",
                       "args": [1], "kwargs": {"b": 2}}}
    with override_settings(JOB_PERIODIC=entries):
        enqueuers = [PeriodicEnqueuer(), PeriodicEnqueuer()]
        for e in enqueuers:
            e.run_once(now=T0 + timedelta(minutes=30))
    [job] = periodic_jobs("sum")
    assert job.type == "tests.tasks.test_tasks_backend.add"  # a task's job is typed by its path
    assert job.payload["task"] == "tests.tasks.test_tasks_backend.add"
    assert job.payload["args"] == [1] and job.payload["kwargs"] == {"b": 2}


@pytest.mark.parametrize("entry, message", [
    ({"cron": "61 * * * *", "type": "noop"}, "invalid cron"),
    ({"cron": "* * * * *", "type": "noop", "timezone": "Mars/Olympus"}, "unknown time zone"),
    ({"cron": "* * * * *", "type": "no_such_type"}, "no handler"),
    ({"cron": "* * * * *"}, "exactly one of"),
    ({"cron": "* * * * *", "task": "tests.worker.test_periodic.T0"}, "not a Django task"),
])
def test_bad_entries_are_reported_by_the_system_check_and_skipped(db, entry, message):
    with override_settings(JOB_PERIODIC={"bad": entry}):
        [error] = check_periodic()
        assert error.id == "django_pg_jobqueue.E201" and message in error.msg
        assert PeriodicEnqueuer().run_once(now=T0)["invalid"] == 1
        assert [r["valid"] for r in schedule(now=T0)] == [False]
    assert not Job.objects.exists()


def test_an_entry_that_fails_to_enqueue_does_not_hold_up_the_others(db):
    entries = {"a-bad-queue": {"cron": "* * * * * *", "queue": "nope",
                               "task": "tests.tasks.test_tasks_backend.add", "args": [1, 2]},
               "tick": EVERY_SECOND["tick"]}
    with override_settings(JOB_PERIODIC=entries):
        counts = PeriodicEnqueuer().run_once(now=T0)
    assert counts["invalid"] == 1 and counts["enqueued"] == 1
    assert periodic_jobs("tick").count() == 1 and not periodic_jobs("a-bad-queue").exists()


def test_malformed_settings_raise_improperly_configured():
    with override_settings(JOB_PERIODIC={"x": {"cron": "* * * * *", "type": "noop", "oops": 1}}):
        with pytest.raises(ImproperlyConfigured, match="unknown keys"):
            periodic_module.entries()
        assert check_periodic()[0].id == "django_pg_jobqueue.E200"


@pytest.mark.e2e
def test_three_worker_processes_enqueue_each_tick_exactly_once(transactional_db):
    env = {"JOB_PERIODIC": json.dumps(EVERY_SECOND), "JOB_POLL_INTERVAL_SECONDS": "0.2"}
    procs = [spawn_workers("--threads", "2", "--no-reaper", env=env) for _ in range(3)]
    try:
        wait_until_jobs("succeeded", at_least=6, idempotency_key__startswith="periodic:tick:",
                        message="periodic jobs enqueued and run")
        assert all(p.poll() is None for p in procs), "a worker process died"
    finally:
        for p in procs:
            p.terminate()
        outputs = [p.communicate(timeout=30)[0] for p in procs]
    jobs = list(periodic_jobs())
    ticks = sorted(datetime.fromisoformat(j.idempotency_key.split(":", 2)[2]) for j in jobs)
    # Several ticks, consecutive seconds: none missed, none doubled.
    assert len(ticks) >= 6
    assert ticks == [ticks[0] + timedelta(seconds=i) for i in range(len(ticks))]
    created = JobEvent.objects.filter(job__in=jobs, kind="created").count()
    assert created == len(jobs)
    # Each process's log names the ticks it created: together, each exactly once.
    logged = [m for out in outputs for m in re.findall(r"enqueued tick (\S+)", out)]
    assert sorted(logged) == [t.isoformat() for t in ticks], outputs
    # Every tick's job ran once (the last may still be running when the workers stopped).
    finished = [j for j in jobs if j.status == "succeeded"]
    assert len(finished) >= 6 and all(j.attempts == 1 for j in finished)


def test_the_service_loop_sleeps_the_interval_its_pass_just_set(db):
    # The enqueuer's pass sets how long to sleep until the next tick; the loop must sleep that,
    # not the previous pass's figure (which made a tick up to a minute late).
    from django_pg_jobqueue.worker.base import ServiceThread

    waits = []

    class Pass(ServiceThread):
        def __init__(self):
            super().__init__("pass", logging.getLogger("test"))
            self.planned = [40.0, 59.0, 21.0]

        def run_once(self):
            self.interval = self.planned[len(waits)]

    loop = Pass()

    def wait(seconds):
        waits.append(seconds)
        if len(waits) == len(loop.planned):
            loop.stopping.set()
        return loop.stopping.is_set()

    loop.stopping.wait = wait
    loop.run()
    assert waits == [40.0, 59.0, 21.0]
