"""Retention: the pruner deletes finished jobs and their events, in batches, never a live job."""
from datetime import timedelta

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.durations import parse_duration, parse_retention
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.services.lifecycle import Completion
from django_pg_jobqueue.services.pruning import prune, prune_by_retention
from django_pg_jobqueue.services.schedules import enqueue_tick
from django_pg_jobqueue.worker.pool import WorkerPool
from django_pg_jobqueue.worker.pruner import Pruner


def make_jobs(n: int, status: str, *, finished_ago: timedelta | None = None, type="noop"):
    """n jobs that really went through the services to `status` (with their events); the
    finish time is then moved back by `finished_ago`."""
    jobs = services.enqueue_many([{"type": type, "payload": {"i": i}} for i in range(n)])
    ids = [j.id for j in jobs]
    if status in ("succeeded", "failed", "running"):
        claimed = services.claim(worker_ids=[f"w-{i}" for i in range(n)], job_ids=ids)
        assert len(claimed) == n
        if status == "succeeded":
            services.complete_many([Completion(c.id, c.lease_token, c.worker_id, {"ok": 1})
                                    for c in claimed])
        elif status == "failed":
            for c in claimed:
                services.fail(c.id, c.lease_token, worker_id=c.worker_id, error="boom",
                              permanent=True)
    elif status == "cancelled":
        for job_id in ids:
            services.cancel(job_id)
    if finished_ago is not None:
        then = timezone.now() - finished_ago
        if status in ("succeeded", "failed", "cancelled"):
            Job.objects.filter(pk__in=ids).update(finished_at=then, created_at=then)
        else:  # a live job that has been around for ages: still never pruned
            Job.objects.filter(pk__in=ids).update(created_at=then)
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {status}
    return ids


def other_connection():
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return psycopg.connect(**params, autocommit=True)


@pytest.mark.django_db
def test_prune_deletes_finished_jobs_past_the_cutoff_with_their_events_and_nothing_else():
    old_ok = make_jobs(3, "succeeded", finished_ago=timedelta(days=10))
    old_failed = make_jobs(2, "failed", finished_ago=timedelta(days=10))
    old_cancelled = make_jobs(1, "cancelled", finished_ago=timedelta(days=10))
    recent_ok = make_jobs(2, "succeeded", finished_ago=timedelta(hours=1))
    old_queued = make_jobs(2, "queued", finished_ago=timedelta(days=30))
    old_running = make_jobs(2, "running", finished_ago=timedelta(days=30))
    doomed = old_ok + old_failed + old_cancelled
    assert HistoryEvent.objects.filter(job_id__in=doomed).count() >= 3 * 2 + 2 * 2 + 1 * 2

    counts = prune("7d", ["succeeded", "failed", "cancelled"])

    assert counts["succeeded"] == 3 and counts["failed"] == 2 and counts["cancelled"] == 1
    # created and the outcome (which carries its attempt's start: the claim writes no event)
    assert counts["events"] == 3 * 2 + 2 * 2 + 1 * 2
    assert not Job.objects.filter(pk__in=doomed).exists()
    assert not HistoryEvent.objects.filter(job_id__in=doomed).exists()
    kept = recent_ok + old_queued + old_running
    assert Job.objects.filter(pk__in=kept).count() == len(kept)
    assert HistoryEvent.objects.filter(job_id__in=kept).count() >= len(kept)


@pytest.mark.django_db
def test_prune_only_touches_the_statuses_asked_for():
    ok = make_jobs(2, "succeeded", finished_ago=timedelta(days=10))
    failed = make_jobs(2, "failed", finished_ago=timedelta(days=10))
    counts = prune(timedelta(days=1), ["failed"])
    assert counts == {"failed": 2, "events": 4}
    assert Job.objects.filter(pk__in=ok).count() == 2
    assert not Job.objects.filter(pk__in=failed).exists()


@pytest.mark.django_db
def test_prune_refuses_live_statuses_and_bad_arguments():
    live = make_jobs(1, "queued") + make_jobs(1, "running")
    for bad in (["queued"], ["running"], ["succeeded", "running"], ["nonsense"], []):
        with pytest.raises(ValueError):
            prune(0, bad)
    with pytest.raises(ValueError):
        prune("7 parsecs", ["succeeded"])
    with pytest.raises(ValueError):
        prune("7d", ["succeeded"], batch_size=0)
    # An age of zero prunes every finished job and still no live one.
    make_jobs(2, "succeeded", finished_ago=timedelta(seconds=1))
    prune(0, ["succeeded", "failed", "cancelled"])
    assert Job.objects.count() == 2 and Job.objects.filter(pk__in=live).count() == 2


@pytest.mark.django_db
def test_dry_run_counts_what_would_go_and_deletes_nothing():
    make_jobs(4, "succeeded", finished_ago=timedelta(days=10))
    make_jobs(1, "succeeded", finished_ago=timedelta(hours=1))
    counts = prune("7d", ["succeeded"], dry_run=True)
    assert counts == {"succeeded": 4, "events": 8}
    assert Job.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_prune_works_in_batches_each_committed_on_its_own():
    ids = make_jobs(25, "succeeded", finished_ago=timedelta(days=10))
    calls = []

    def stop_after_first_batch():
        calls.append(1)
        return len(calls) > 1

    counts = prune("7d", ["succeeded"], batch_size=10, should_stop=stop_after_first_batch)
    assert counts["succeeded"] == 10
    # The first batch is committed: another session sees it gone.
    with other_connection() as conn:
        left = conn.execute("SELECT count(*) FROM jobs WHERE id = ANY(%s)", [ids]).fetchone()[0]
        orphans = conn.execute("SELECT count(*) FROM job_events e WHERE NOT EXISTS "
                               "(SELECT 1 FROM jobs j WHERE j.id = e.job_id)").fetchone()[0]
    assert left == 15 and orphans == 0

    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        counts = prune("7d", ["succeeded"], batch_size=10)
    deletes = [q for q in ctx.captured_queries if "DELETE FROM jobs" in q["sql"]]
    assert counts["succeeded"] == 15 and len(deletes) == 2  # 10, then 5
    assert not Job.objects.exists() and not HistoryEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_prune_skips_a_job_another_session_holds_instead_of_waiting():
    ids = make_jobs(3, "failed", finished_ago=timedelta(days=40))
    with other_connection() as conn:
        with conn.transaction():
            conn.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", [ids[0]])
            with connection.cursor() as cur:
                cur.execute("SET lock_timeout = '2s'")  # would raise if prune waited
            counts = prune("30d", ["failed"], batch_size=2)
    assert counts["failed"] == 2
    assert list(Job.objects.values_list("id", flat=True)) == [ids[0]]
    assert prune("30d", ["failed"])["failed"] == 1


@pytest.mark.django_db
def test_retention_settings_give_each_status_its_own_age():
    ok = make_jobs(1, "succeeded", finished_ago=timedelta(hours=2))
    failed = make_jobs(1, "failed", finished_ago=timedelta(hours=2))
    cancelled = make_jobs(1, "cancelled", finished_ago=timedelta(days=100))
    with override_settings(JOB_RETENTION_SUCCEEDED="1h", JOB_RETENTION_FAILED="30d",
                           JOB_RETENTION_CANCELLED="off"):
        counts = prune_by_retention()
    assert counts == {"succeeded": 1, "failed": 0, "events": 2}
    assert not Job.objects.filter(pk__in=ok).exists()
    assert Job.objects.filter(pk__in=failed + cancelled).count() == 2


@pytest.mark.django_db
def test_pruner_run_once_applies_retention_and_keeps_a_running_total():
    make_jobs(2, "succeeded", finished_ago=timedelta(days=8))
    make_jobs(1, "cancelled", finished_ago=timedelta(days=8))
    make_jobs(1, "failed", finished_ago=timedelta(days=8))  # failed: kept 30 days
    pruner = Pruner(interval=60)
    assert pruner.run_once() == {"succeeded": 2, "failed": 0, "cancelled": 1, "events": 6}
    assert pruner.run_once() == {"succeeded": 0, "failed": 0, "cancelled": 0, "events": 0}
    assert pruner.total == {"succeeded": 2, "failed": 0, "cancelled": 1, "events": 6}
    assert list(Job.objects.values_list("status", flat=True)) == ["failed"]


def test_the_worker_pool_runs_a_pruner_unless_the_interval_is_zero():
    pool = WorkerPool(threads=1, listen=False)
    assert isinstance(pool.pruner, Pruner) and pool.pruner in pool.maintenance
    assert pool.pruner.interval == 300
    with override_settings(JOB_PRUNE_INTERVAL_SECONDS=0):
        pool = WorkerPool(threads=1, listen=False)
        assert pool.pruner is None and not any(isinstance(t, Pruner) for t in pool.maintenance)


@pytest.mark.django_db
def test_prune_jobs_command(capsys):
    make_jobs(3, "succeeded", finished_ago=timedelta(days=10))
    make_jobs(2, "failed", finished_ago=timedelta(days=10))
    call_command("prune_jobs", "--older-than", "7d", "--status", "succeeded", "--dry-run")
    assert "would delete: succeeded 3 job(s), 6 event(s)" in capsys.readouterr().out
    assert Job.objects.count() == 5
    call_command("prune_jobs", "--older-than", "168h", "--status", "succeeded,failed",
                 "--batch-size", "2")
    assert "deleted: succeeded 3, failed 2 job(s), 10 event(s)" in capsys.readouterr().out
    assert not Job.objects.exists()
    for args in (["--older-than", "seven days"], ["--status", "running"],
                 ["--batch-size", "0"], ["--status", "succeeded,bogus"]):
        with pytest.raises(CommandError):
            call_command("prune_jobs", *args)


@pytest.mark.django_db
def test_prune_jobs_command_without_older_than_uses_the_retention_settings(capsys):
    make_jobs(1, "succeeded", finished_ago=timedelta(days=8))
    make_jobs(1, "failed", finished_ago=timedelta(days=8))
    with override_settings(JOB_RETENTION_FAILED=""):
        call_command("prune_jobs")
    out = capsys.readouterr().out
    assert "failed: kept forever" in out and "deleted: succeeded 1, cancelled 0" in out
    assert list(Job.objects.values_list("status", flat=True)) == ["failed"]


@pytest.mark.parametrize("text,seconds", [
    ("90s", 90), ("15m", 900), ("12h", 43200), ("7d", 604800), ("2w", 1209600), ("45", 45),
    ("1.5h", 5400), (" 7D ", 604800), (30, 30),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["", "7x", "d7", "-5m", "1h30m", "seven"])
def test_parse_duration_rejects_what_it_cannot_read(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_retention_off_values_mean_keep_forever():
    for off in ("", "0", "off", "never", None):
        assert parse_retention(off) is None
    assert parse_retention("7d") == timedelta(days=7)


@pytest.mark.django_db
def test_pruning_walks_the_finished_index_and_queued_rows_stay_out_of_it():
    from django_pg_jobqueue.sql import PRUNE_BATCH

    with connection.cursor() as cur:
        cur.execute("""
            INSERT INTO jobs (type, queue, payload, status, priority, attempts, max_attempts,
                              available_at, created_at, updated_at, finished_at, progress_message)
            SELECT 'noop', 'default', '{}'::jsonb, 'succeeded', 0, 1, 3, now(), now(), now(),
                   now() - make_interval(secs => g), ''
            FROM generate_series(1, 20000) AS g
        """)
        services.enqueue_many([{"type": "noop", "payload": {}}] * 50)
        cur.execute("ANALYZE jobs")
        cur.execute("EXPLAIN " + PRUNE_BATCH, {"status": "succeeded", "age": 3600, "limit": 500})
        plan = "\n".join(r[0] for r in cur.fetchall())
        assert "jobs_status_finished_idx" in plan, plan
        # The index is partial: only finished rows are written to it.
        cur.execute("SELECT count(*) FROM jobs WHERE finished_at IS NULL")
        assert cur.fetchone()[0] == 50
        cur.execute("SELECT reltuples FROM pg_class WHERE relname = 'jobs_status_finished_idx'")
        assert cur.fetchone()[0] == 20000


@pytest.mark.django_db
def test_the_newest_job_of_each_periodic_schedule_survives_pruning_so_a_restart_does_not_rerun_it():
    from datetime import datetime

    from django_pg_jobqueue.compat import UTC
    from django_pg_jobqueue.periodic import PeriodicEntry

    ticks = [datetime(2030, 1, d, 9, tzinfo=UTC) for d in (1, 2, 3)]
    daily = PeriodicEntry(name="daily_x", cron="0 9 * * *", type="noop")
    look_alike = PeriodicEntry(name="daily_", cron="0 9 * * *", type="noop")  # a prefix of it
    for tick in ticks:
        assert enqueue_tick(daily, tick)
    assert enqueue_tick(look_alike, ticks[0])
    for job in Job.objects.all():
        (c,) = services.claim(worker_ids=["w"], job_ids=[job.id])
        services.complete_many([Completion(c.id, c.lease_token, "w", None)])
    Job.objects.update(finished_at=timezone.now() - timedelta(days=30))

    assert prune("1d", ["succeeded"], dry_run=True)["succeeded"] == 2
    assert prune("1d", ["succeeded"])["succeeded"] == 2
    assert sorted(Job.objects.values_list("idempotency_key", flat=True)) == [
        look_alike.key(ticks[0]), daily.key(ticks[2])]

    # A worker starting after the last tick enqueues that tick (see PeriodicEnqueuer.run_once)
    # and finds it already there: it does not run twice.
    assert daily.latest_tick(datetime(2030, 1, 3, 12, tzinfo=UTC)) == ticks[2]
    assert enqueue_tick(daily, ticks[2]) is False


@pytest.mark.django_db
@override_settings(JOB_RETENTION_SUCCEEDED="7d", JOB_RETENTION_FAILED="30d",
                   JOB_RETENTION_CANCELLED="30d")
def test_a_batch_goes_once_its_members_did_and_it_finished_past_the_shortest_retention():
    from django_pg_jobqueue.models import JobBatch
    from django_pg_jobqueue.testing import drain

    gone, kept, recent = (services.enqueue_batch([{"type": "noop"}, {"type": "noop"}])
                          for _ in range(3))
    drain("noop")
    ten_days_ago = timezone.now() - timedelta(days=10)
    for batch in (gone, kept):
        JobBatch.objects.filter(pk=batch.id).update(finished_at=ten_days_ago)
        Job.objects.filter(batch_id=batch.id).update(finished_at=ten_days_ago)
    Job.objects.filter(batch_id=kept.id).update(status="failed")  # kept 30 days: so is its batch
    counts = prune_by_retention()
    assert counts["succeeded"] == 2 and counts["batches"] == 1
    assert set(JobBatch.objects.values_list("id", flat=True)) >= {kept.id, recent.id}
    assert not JobBatch.objects.filter(pk=gone.id).exists()
