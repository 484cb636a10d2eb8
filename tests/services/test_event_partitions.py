"""job_events partitioned by time: created ahead, a default one as the safety net, dropped whole
by the prune with every kept job's timeline and the feed's order intact; migration 0007."""
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from django_pg_jobqueue import services, sql
from django_pg_jobqueue.compat import UTC
from django_pg_jobqueue.feed import event_ids_after
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services import partitions
from django_pg_jobqueue.services.pruning import prune_by_retention
from django_pg_jobqueue.worker.pruner import Pruner
from tests.services.test_pruning import make_jobs
from tests.utils import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

DAY = timedelta(days=1)


def today() -> datetime:
    return partitions.floor(datetime.now(UTC), DAY)


def partition_of(event_id: int) -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT tableoid::regclass::text FROM job_events WHERE id = %s", [event_id])
        return cur.fetchone()[0]


def rows(job_ids) -> list[tuple]:
    """Everything a timeline and the feed read of these jobs' events, in id order: from the
    history's view, or from job_events in a schema from before it (migration 0031)."""
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass('job_history') IS NOT NULL")
        history = "job_history" if cur.fetchone()[0] else "job_events"
        cur.execute("SELECT id, job_id, kind, attempt, worker_id, message, data::text,"
                    f" created_at, tx_id FROM {history} WHERE job_id = ANY(%s) ORDER BY id",
                    [list(job_ids)])
        return cur.fetchall()


def feed_all(*, including=()) -> list[int]:
    """Every event id the global feed delivers, paging from the start. The feed holds back
    events until every older transaction on the server has ended (any database's: a shared
    test server has others), so wait until it has delivered `including`."""
    def read():
        got, cursor = [], 0
        while page := event_ids_after(cursor, limit=50):
            got += page
            cursor = page[-1]
        return (got,) if set(including) <= set(got) else None

    # Polls, as a feed's reader does: the feed holds back what other transactions still have
    # in flight, and no one tells when that cleared.
    return wait_for(read, 30, message="the feed to deliver the events")[0]


def move_events_to(day: datetime, job_ids) -> None:
    """Give these jobs' events times on `day` (the rows move to that day's partition)."""
    with connection.cursor() as cur:
        cur.execute("UPDATE job_events SET created_at = %s + (id %% 1000) * interval '1 s'"
                    " WHERE job_id = ANY(%s)", [day + timedelta(hours=1), list(job_ids)])


def test_the_migration_leaves_a_partitioned_table_with_a_default_and_partitions_ahead():
    assert partitions.is_partitioned()
    names = [p.name for p in partitions.partitions()]
    for i in range(4):  # today and JOB_EVENTS_PARTITIONS_AHEAD (3) days after it
        assert partitions.partition_name(today() + i * DAY, DAY) in names
    job = services.enqueue("noop", {})
    event = JobEvent.objects.get(job_id=job.pk)
    assert partition_of(event.pk) == partitions.partition_name(today(), DAY)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                    " WHERE conrelid = 'job_events'::regclass AND contype IN ('p', 'f')"
                    " ORDER BY contype")
        (pk,) = (r[0] for r in cur.fetchall())  # no foreign key: the history's guard instead
    assert pk == "PRIMARY KEY (id, created_at)"


def test_a_dropped_partition_takes_the_pruned_jobs_events_and_keeps_every_kept_jobs_timeline():
    old_day = today() - 12 * DAY
    partitions.ensure_partitions(since=old_day)
    assert {partitions.partition_name(old_day + i * DAY, DAY) for i in range(12)} <= {
        p.name for p in partitions.partitions()}
    pruned = make_jobs(4, "succeeded", finished_ago=timedelta(days=11))
    failed = make_jobs(2, "failed", finished_ago=timedelta(days=11))  # 30 d retention: kept
    live = make_jobs(1, "queued")
    move_events_to(old_day, pruned + failed + live)
    old = partitions.partition_name(old_day, DAY)
    assert {partition_of(e.pk) for e in JobEvent.objects.all()} == {old}
    kept = failed + live
    before = rows(kept)
    feed_before = [i for i in feed_all(including=[r[0] for r in before])
                   if i in {r[0] for r in before}]
    assert len(before) == 2 * 2 + 1  # created and the outcome (which carries its start)

    counts = prune_by_retention()

    assert counts["succeeded"] == 4 and counts["events"] == 4 * 2
    assert old not in [p.name for p in partitions.partitions()]
    assert not Job.objects.filter(pk__in=pruned).exists()
    assert rows(kept) == before, "the kept jobs' events: same ids, times, data, tx ids"
    assert {partition_of(r[0]) for r in before} == {sql.EVENTS_PARTITION_DEFAULT}
    assert [i for i in feed_all(including=feed_before) if i in set(feed_before)] == feed_before, \
        "the feed still delivers them, in the same order"
    # The timeline goes on: a new event of a kept job comes after them, in today's partition.
    services.cancel(live[0])
    new = JobEvent.objects.filter(job_id=live[0]).latest("id")
    assert new.pk > max(r[0] for r in before) and feed_all(including=[new.pk])[-1] == new.pk
    assert partition_of(new.pk) == partitions.partition_name(today(), DAY)
    # Deleting a kept job still takes its events, wherever they are (Django's CASCADE).
    Job.objects.filter(pk=failed[0]).delete()
    assert not JobEvent.objects.filter(job_id=failed[0]).exists()


def test_a_partition_whose_kept_events_are_too_many_waits():
    old_day = today() - 9 * DAY
    partitions.ensure_partitions(since=old_day)
    kept = make_jobs(1, "failed", finished_ago=timedelta(days=8))
    pruned = make_jobs(1, "succeeded", finished_ago=timedelta(days=8))
    move_events_to(old_day, kept + pruned)
    counts = partitions.drop_expired_partitions(rescue_limit=1)  # the failed job has 2
    assert counts["rescued"] == 0
    assert partitions.partition_name(old_day, DAY) in [p.name for p in partitions.partitions()]
    assert len(rows(kept + pruned)) == 4


def test_retention_off_keeps_every_partition():
    old_day = today() - 10 * DAY
    partitions.ensure_partitions(since=old_day)
    with override_settings(JOB_RETENTION_SUCCEEDED=None, JOB_RETENTION_FAILED=None,
                           JOB_RETENTION_CANCELLED=None):
        assert partitions.drop_expired_partitions()["partitions"] == 0
    assert partitions.partition_name(old_day, DAY) in [p.name for p in partitions.partitions()]


def test_the_default_partition_takes_rows_no_partition_covers_and_gives_them_to_a_new_one():
    job = services.enqueue("noop", {})
    far = today() + 40 * DAY
    event = JobEvent.objects.create(job_id=job.pk, kind="log", message="from the future",
                                    created_at=far + timedelta(hours=3))
    later = JobEvent.objects.create(job_id=job.pk, kind="log", message="and the day after",
                                    created_at=far + DAY + timedelta(hours=1))
    assert partition_of(event.pk) == partition_of(later.pk) == sql.EVENTS_PARTITION_DEFAULT
    created = partitions.ensure_partitions(now=far, ahead=1)  # two partitions, two moves
    assert partitions.partition_name(far, DAY) in created
    assert partition_of(event.pk) == partitions.partition_name(far, DAY)
    assert partition_of(later.pk) == partitions.partition_name(far + DAY, DAY)
    assert JobEvent.objects.get(pk=event.pk).message == "from the future"
    assert {event.pk, later.pk} <= set(feed_all(including=[event.pk, later.pk]))


def test_the_pruner_creates_the_partitions_ahead():
    ahead = [partitions.partition_name(today() + i * DAY, DAY) for i in (1, 2, 3)]
    with connection.cursor() as cur:
        for name in ahead:
            cur.execute(f"DROP TABLE IF EXISTS {name}")
    with override_settings(JOB_EVENTS_PARTITIONS_AHEAD=3):
        Pruner(interval=60).run_once()
    assert set(ahead) <= {p.name for p in partitions.partitions()}


def test_a_week_interval_starts_after_the_days_already_covered():
    week = timedelta(weeks=1)
    created = partitions.ensure_partitions(step="week", ahead=1)
    try:
        parts = partitions.partitions()
        new = [p for p in parts if p.name in created]
        assert new and new[-1].end == partitions.floor(datetime.now(UTC), week) + 2 * week
        # After the daily ones, a bridge to the next Monday, then whole weeks from Mondays.
        assert all(p.end.weekday() == 0 and p.end == partitions.floor(p.end, week) for p in new)
        assert all(p.end - p.start == week for p in new[1:])
        for a, b in zip(parts, parts[1:], strict=False):
            assert a.end <= b.start, "no two partitions overlap"
    finally:
        with connection.cursor() as cur:
            for name in created:
                cur.execute(f"DROP TABLE {name}")


def test_the_migration_from_0006_keeps_every_row_and_the_id_sequence_and_goes_back():
    executor = MigrationExecutor(connection)
    app = "django_pg_jobqueue"
    latest = executor.loader.graph.leaf_nodes(app)
    # The jobs go through today's services on today's schema (later migrations add columns
    # that today's statements write), then the schema goes back to 0006 with them.
    jobs = make_jobs(3, "succeeded")
    with connection.cursor() as cur:
        cur.execute("UPDATE job_events SET created_at = created_at - interval '20 days'"
                    " WHERE job_id = %s", [jobs[0]])
    before = rows(jobs)
    assert len(before) == 6  # created and succeeded each (the claim writes no event)
    executor.migrate([(app, "0006_workerprocess_verbose_name_plural")])
    try:
        assert not partitions.is_partitioned()
        assert rows(jobs) == before
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
        assert partitions.is_partitioned()
        assert rows(jobs) == before
        old = partitions.partition_name(partitions.floor(before[0][7], DAY), DAY)
        assert partition_of(before[0][0]) == old, "partitions back to the oldest event"
        assert feed_all(including=[r[0] for r in before])[-6:] == [
            r[0] for r in sorted(before, key=lambda r: (r[8], r[0]))]
        services.cancel(services.enqueue("noop", {}).pk)
        assert JobEvent.objects.latest("id").pk > max(r[0] for r in before)
        # And back: a plain table with the same rows.
        executor = MigrationExecutor(connection)
        executor.migrate([(app, "0006_workerprocess_verbose_name_plural")])
        assert not partitions.is_partitioned()
        assert rows(jobs) == before
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    assert partitions.is_partitioned()


def test_prune_jobs_from_cron_creates_the_partitions_ahead_too():
    from django.core.management import call_command

    tomorrow = partitions.partition_name(today() + DAY, DAY)
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {tomorrow}")
    call_command("prune_jobs", verbosity=0)
    assert tomorrow in {p.name for p in partitions.partitions()}


def test_a_retry_racing_the_drop_of_its_jobs_partition_never_revives_a_job_without_history(
        monkeypatch):
    """The prune pauses inside its transaction, just before the DROP TABLE, while an operator
    retries a long-failed job whose events all lie in that partition: the retry waits for the
    drop and is refused (the job's history is gone: it is past its retention), or went first
    and the job keeps its whole history; never queued again with only its `retried` event."""
    import threading

    from django.db import connections

    from django_pg_jobqueue.exceptions import JobNotFound
    from django_pg_jobqueue.services.pruning import prune

    old_day = today() - 12 * DAY
    partitions.ensure_partitions(since=old_day)
    (job_id,) = make_jobs(1, "failed", finished_ago=timedelta(days=11))
    move_events_to(old_day, [job_id])
    old = partitions.partition_name(old_day, DAY)
    assert {partition_of(e.pk) for e in JobEvent.objects.filter(job_id=job_id)} == {old}

    at_drop, go = threading.Event(), threading.Event()

    class PausingDrop(str):
        def format(self, *args, **kwargs):
            at_drop.set()
            assert go.wait(20), "the test never let the drop go on"
            return str.format(self, *args, **kwargs)

    monkeypatch.setattr(sql, "EVENTS_DROP_PARTITION", PausingDrop(sql.EVENTS_DROP_PARTITION))
    out: dict = {}

    def in_thread(name, fn):
        def run():
            try:
                out[name] = fn()
            except Exception as exc:  # noqa: BLE001 - reported by the asserts below
                out[name] = exc
            finally:
                connections.close_all()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    pruner = in_thread("prune", lambda: prune(timedelta(days=2), ["failed"]))
    assert at_drop.wait(20), "the prune never reached the drop"
    retrier = in_thread("retry", lambda: services.retry(job_id, actor="op"))
    retrier.join(1.0)  # it commits now, or waits on the job's row lock until the drop ends
    go.set()
    pruner.join(30)
    retrier.join(30)
    assert not pruner.is_alive() and not retrier.is_alive()
    assert not isinstance(out["prune"], Exception), out["prune"]

    assert old not in [p.name for p in partitions.partitions()]
    kinds = list(JobEvent.objects.filter(job_id=job_id).order_by("id")
                 .values_list("kind", flat=True))
    job = Job.objects.filter(pk=job_id).first()
    if job is not None and job.status == "queued":  # retried first: kept, whole
        assert kinds[:1] == ["created"], f"the retried job's history lost its start: {kinds}"
    else:  # the drop first: the retry found the history gone and was refused
        assert isinstance(out["retry"], JobNotFound), out["retry"]
        assert kinds == []
        assert job is None or job.status == "failed"  # gone, or left to the next prune
