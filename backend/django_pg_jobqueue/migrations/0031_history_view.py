"""The view job_history: the history's one read path (models.HistoryEvent). Every reader of a
job's events (the timeline, the event feed's lookups by id, the metrics' windows, audit_jobs,
a task's result) reads it rather than the table job_events, so that where the history is kept
can change in one place. It is job_events' rows, column for column.

Safe online: creating a view reads no rows and takes only a brief lock on job_events' catalog
entry. Reversible: backwards drops the view. The previous release's code never reads it.

A later migration that changes the type of a column of job_events must drop the view first
and create it again after (PostgreSQL refuses to alter a column a view reads).
"""
from django.db import migrations, models

# Frozen: the view as this migration creates it. A later change to it is a new migration.
HISTORY_VIEW = (
    "CREATE VIEW job_history AS"
    " SELECT id, job_id, kind, attempt, worker_id, message, data, created_at, tx_id"
    " FROM job_events"
)
HISTORY_VIEW_DROP = "DROP VIEW IF EXISTS job_history"


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0030_due_later_index"),
    ]

    operations = [
        migrations.RunSQL(HISTORY_VIEW, HISTORY_VIEW_DROP),
        migrations.CreateModel(
            name="HistoryEvent",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("kind", models.CharField(max_length=32)),
                ("attempt", models.PositiveIntegerField()),
                ("worker_id", models.CharField(blank=True, max_length=200, null=True)),
                ("message", models.TextField(blank=True)),
                ("data", models.JSONField()),
                ("created_at", models.DateTimeField()),
                ("job", models.ForeignKey(db_constraint=False, db_index=False,
                                          on_delete=models.deletion.DO_NOTHING,
                                          related_name="history",
                                          to="django_pg_jobqueue.job")),
            ],
            options={
                "verbose_name": "history event",
                "db_table": "job_history",
                "ordering": ["id"],
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
