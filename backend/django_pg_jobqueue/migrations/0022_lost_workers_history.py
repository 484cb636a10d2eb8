"""job_lost_workers: worker processes that went silent, kept for a while after the reaper took
their jobs back (models.LostWorker), a new, empty table; and two counters on job_workers (what
the reaper did with a process's jobs: requeued, failed), added with a constant default (no
table rewrite)."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0021_audit_log"),
    ]

    operations = [
        migrations.AddField(
            model_name="workerprocess", name="jobs_requeued",
            field=models.IntegerField(db_default=0, default=0)),
        migrations.AddField(
            model_name="workerprocess", name="jobs_failed",
            field=models.IntegerField(db_default=0, default=0)),
        migrations.CreateModel(
            name="LostWorker",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("worker_id", models.CharField(max_length=200)),
                ("hostname", models.CharField(max_length=200)),
                ("pid", models.IntegerField()),
                ("supervisor_pid", models.IntegerField(blank=True, null=True)),
                ("threads", models.PositiveIntegerField()),
                ("started_at", models.DateTimeField()),
                ("last_heartbeat_at", models.DateTimeField()),
                ("forgotten_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("jobs_done", models.BigIntegerField(default=0)),
                ("jobs_requeued", models.IntegerField(default=0)),
                ("jobs_failed", models.IntegerField(default=0)),
            ],
            options={
                "verbose_name": "lost worker process",
                "verbose_name_plural": "lost worker processes",
                "db_table": "job_lost_workers",
                "ordering": ["-forgotten_at", "-id"],
                "indexes": [models.Index(fields=["-forgotten_at"], name="job_lost_workers_at_idx")],
            },
        ),
    ]
