"""The foreign key from job_events to jobs becomes the history's guard: statement-level
triggers that keep the same promise (no event names a job that does not exist; no job goes
while it has events; neither key ever changes) at one query per statement instead of a check
per event row (sql.HISTORY_GUARD_FUNCTIONS says how and why).

Safe online: the triggers are created before the foreign key is dropped, in one transaction,
so no moment is unguarded. Creating them takes a SHARE ROW EXCLUSIVE lock on jobs and
job_events for a moment (no rows are read). Reversible: backwards, the foreign key is added
again (DEFERRABLE INITIALLY DEFERRED, as before) and validated, which reads every event.
"""
from django.db import migrations, models

from django_pg_jobqueue import sql


def create_guard(apps, schema_editor):
    from django_pg_jobqueue.services import partitions

    with schema_editor.connection.cursor() as cursor:
        for statement in sql.HISTORY_GUARD_FUNCTIONS + sql.HISTORY_GUARD_TRIGGERS:
            cursor.execute(statement)
        for name in partitions.partition_tables(cursor):
            cursor.execute(sql.HISTORY_GUARD_EVENTS_TRIGGER.format(table=name))


def drop_guard(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in sql.HISTORY_GUARD_DROP:
            cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0014_throttle_windows"),
    ]

    operations = [
        migrations.RunPython(create_guard, drop_guard),
        migrations.AlterField(
            model_name="jobevent",
            name="job",
            field=models.ForeignKey(db_constraint=False, db_index=False,
                                    on_delete=models.deletion.CASCADE, related_name="events",
                                    to="django_pg_jobqueue.job"),
        ),
    ]
