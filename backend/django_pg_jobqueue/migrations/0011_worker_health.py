"""What a worker process's heartbeat reports for the workers page: memory, jobs run, stuck
handlers, its heartbeat interval (to tell a lost worker) and its supervisor.

Online-safe: each column is added with a constant default (or NULL), which PostgreSQL 11+
records in the catalog without rewriting the table; `job_workers` has a row per process."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0010_concurrency_keys"),
    ]

    operations = [
        migrations.AddField(
            model_name="workerprocess", name="rss_bytes",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="workerprocess", name="jobs_done",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="workerprocess", name="stuck_handlers",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="workerprocess", name="heartbeat_interval_seconds",
            field=models.FloatField(db_default=2.0, default=2.0),
        ),
        migrations.AddField(
            model_name="workerprocess", name="supervisor_pid",
            field=models.IntegerField(blank=True, null=True),
        ),
    ]
