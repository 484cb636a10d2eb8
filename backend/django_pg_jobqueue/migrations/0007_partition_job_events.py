"""job_events becomes a table partitioned by RANGE on created_at (services/partitions.py).

Why: the history is three rows or more per job, tens of millions a day on a busy queue, and
retention deleted them one row at a time (a heap change, an index entry to clean in each
index, and WAL for each). Partitioned by time, most of them leave with their partition: one
DROP TABLE.

How: the plain table is renamed (with its indexes and identity sequence), the partitioned one
is created under the old names (same columns, defaults, checks, foreign key and indexes; the
primary key becomes (id, created_at), as a partitioned table's must hold the partition key),
with a DEFAULT partition and one partition per JOB_EVENTS_PARTITION_INTERVAL from the oldest
event through JOB_EVENTS_PARTITIONS_AHEAD ahead; the rows are copied with their ids and
transaction ids (so every cursor of the feed and every timeline reads the same), the
sequence goes on from the highest id, and the plain table is dropped. It runs in one
transaction that holds job_events exclusively while the rows are copied: on a big table, stop
the workers and the API for it (about 10 s per million events on a small machine), or prune
first. Reversible: backwards, the same steps make a plain table again.

Django's model is unchanged: `id` is still the model's primary key, which the ORM only needs
to be unique (it is: one sequence), so `makemigrations` sees nothing to do.
"""
from django.db import migrations

from django_pg_jobqueue import sql

CHECKS = ("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
          " WHERE conrelid = %s::regclass AND contype = 'c' AND conname <> 'job_events_attempt_check'"
          " ORDER BY conname")


def _copy_checks(cursor, source: str) -> None:
    cursor.execute(CHECKS, [source])
    for name, definition in cursor.fetchall():
        cursor.execute(f'ALTER TABLE job_events ADD CONSTRAINT "{name}" {definition}')


def forwards(apps, schema_editor):
    from django_pg_jobqueue.services import partitions

    with schema_editor.connection.cursor() as cursor:
        if partitions.is_partitioned(cursor):
            return
        for statement in sql.EVENTS_RENAME_PLAIN:
            cursor.execute(statement)
        cursor.execute(sql.EVENTS_CREATE_PARTITIONED)
        _copy_checks(cursor, "job_events_plain")
        for statement in sql.EVENTS_CREATE_INDEXES:
            cursor.execute(statement)
        partitions.create_for_migration(cursor)
        cursor.execute(sql.EVENTS_COPY_FROM_PLAIN)
        cursor.execute(sql.EVENTS_SEQUENCE_FROM.format(table="job_events_plain",
                                                       sequence="job_events_plain_id_seq"))
        cursor.execute(sql.EVENTS_DROP_PLAIN)


def backwards(apps, schema_editor):
    from django_pg_jobqueue.services import partitions

    with schema_editor.connection.cursor() as cursor:
        if not partitions.is_partitioned(cursor):
            return
        for statement in sql.EVENTS_RENAME_PARTITIONED:
            cursor.execute(statement)
        cursor.execute(sql.EVENTS_CREATE_PLAIN)
        _copy_checks(cursor, "job_events_parted")
        for statement in sql.EVENTS_CREATE_INDEXES:
            cursor.execute(statement)
        cursor.execute(sql.EVENTS_COPY_FROM_PARTITIONED)
        cursor.execute(sql.EVENTS_SEQUENCE_FROM.format(table="job_events_parted",
                                                       sequence="job_events_parted_id_seq"))
        cursor.execute(sql.EVENTS_DROP_PARTITIONED)


class Migration(migrations.Migration):
    dependencies = [("django_pg_jobqueue", "0006_workerprocess_verbose_name_plural")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
