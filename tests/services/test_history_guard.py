"""The history's guard: no event names a job that does not exist and no job goes while it has
events, whatever writes to the tables (the ORM, raw SQL, a partition named directly), checked
by PostgreSQL once per statement (sql.HISTORY_GUARD_FUNCTIONS) instead of a foreign key's
check per event row."""
import threading
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction

from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services import enqueue, partitions
from tests.utils import worker_database_url

pytestmark = pytest.mark.django_db


def _refused(statement: str, params=(), constraint: str = "job_event_names_existing_job"):
    with pytest.raises(IntegrityError) as err, transaction.atomic(), connection.cursor() as cur:
        cur.execute(statement, params)
        # What the commit would do (the test's transaction never commits): run the checks
        # deferred to it.
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert err.value.__cause__.diag.constraint_name == constraint
    assert err.value.__cause__.sqlstate == "23503"  # foreign_key_violation, as a foreign key's


def test_an_event_naming_a_job_that_does_not_exist_is_refused():
    with pytest.raises(IntegrityError, match="names job 999999999 which does not exist"), \
            transaction.atomic():
        JobEvent.objects.create(job_id=999_999_999, kind="log")
    job = enqueue("noop")
    # One missing job among existing ones fails the whole statement.
    _refused("INSERT INTO job_events (job_id, kind) VALUES (%s, 'log'), (999999999, 'log')",
             [job.pk])
    assert JobEvent.objects.filter(job_id=job.pk).count() == 1  # its created event only


def test_a_statement_naming_a_partition_directly_is_checked_too():
    partitions.ensure_partitions()
    now = datetime.now(timezone.utc)
    (current,) = [p for p in partitions.partitions() if p.start <= now < p.end]
    # The id given: before PostgreSQL 17 a partition named directly does not take the parent's
    # identity default (a NOT NULL violation, not the guard, would refuse the row).
    for name, at in ((current.name, now), ("job_events_default", now - timedelta(days=3650))):
        _refused(f'INSERT INTO "{name}" (id, job_id, kind, created_at)'
                 " VALUES (nextval(pg_get_serial_sequence('job_events', 'id')), 999999999, %s, %s)",
                 ["log", at])


def test_every_partition_has_the_guard_including_ones_created_later():
    partitions.ensure_partitions(since=partitions.partitions()[0].start - timedelta(days=2))
    with connection.cursor() as cur:
        names = partitions.partition_tables(cur)
        cur.execute("SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                    " WHERE t.tgname = 'job_event_names_existing_job'")
        guarded = {r[0] for r in cur.fetchall()}
    assert "job_events_default" in names
    assert set(names) | {"job_events"} == guarded


def test_events_written_with_their_job_in_one_statement_pass():
    job = enqueue("noop", {"a": 1})  # the job row and its created event: one statement
    assert list(JobEvent.objects.filter(job=job).values_list("kind", flat=True)) == ["created"]


def test_a_job_deleted_with_its_events_left_is_refused_at_commit():
    job = enqueue("noop")
    _refused("DELETE FROM jobs WHERE id = %s", [job.pk], "job_deleted_with_its_events")
    assert Job.objects.filter(pk=job.pk).exists()
    # The job first and its events after, in one transaction, is fine (the check waits for
    # the commit, as a deferred foreign key's did); so is Django's collector.
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL DEFERRED")
        cur.execute("DELETE FROM jobs WHERE id = %s", [job.pk])
        cur.execute("DELETE FROM job_events WHERE job_id = %s", [job.pk])
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the commit's check: passes
    other = enqueue("noop")
    Job.objects.filter(pk=other.pk).delete()
    assert not JobEvent.objects.filter(job_id__in=[job.pk, other.pk]).exists()


def test_truncating_jobs_without_job_events_is_refused():
    enqueue("noop")
    _refused("TRUNCATE jobs", (), "job_deleted_with_its_events")
    with connection.cursor() as cur:
        cur.execute("TRUNCATE jobs, job_events")
    assert not Job.objects.exists() and not JobEvent.objects.exists()


def test_neither_key_of_the_history_ever_changes():
    a, b = enqueue("noop"), enqueue("noop")
    _refused("UPDATE jobs SET id = id + 1000000 WHERE id = %s", [a.pk],
             "job_history_keys_never_change")
    _refused("UPDATE job_events SET job_id = %s WHERE job_id = %s", [b.pk, a.pk],
             "job_history_keys_never_change")


@pytest.mark.django_db(transaction=True)
def test_an_event_racing_the_delete_of_its_job_waits_for_it_and_is_refused():
    """The guard locks the job of an event whose row this transaction did not write, as a
    foreign key did: the insert waits for a delete in progress, then finds the job gone."""
    job = enqueue("noop")
    url = worker_database_url()
    outcome: dict = {}
    with psycopg.connect(url) as deleter:
        deleter.execute("DELETE FROM job_events WHERE job_id = %s", [job.pk])
        deleter.execute("DELETE FROM jobs WHERE id = %s", [job.pk])  # not committed yet

        def write_event():
            with psycopg.connect(url, autocommit=True) as writer:
                try:
                    writer.execute("INSERT INTO job_events (job_id, kind) VALUES (%s, 'log')",
                                   [job.pk])
                    outcome["result"] = "written"
                except psycopg.errors.ForeignKeyViolation as exc:
                    outcome["result"] = exc.diag.constraint_name

        writer = threading.Thread(target=write_event)
        writer.start()
        writer.join(0.5)  # by design: it must still be waiting half a second on
        assert writer.is_alive(), "the insert must wait for the delete holding the job's row"
        deleter.commit()
        writer.join(10)
    assert outcome == {"result": "job_event_names_existing_job"}
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM job_events WHERE job_id = %s", [job.pk])
        assert cur.fetchone()[0] == 0
