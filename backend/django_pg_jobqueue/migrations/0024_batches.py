"""Batches (services/batches.py): the job_batches table, a new and empty one, and each job"s
batch.

Safe online:
- job_batches is new (its partial index over unfinished batches serves the sweep);
- jobs.batch_id is a nullable column without a default: a catalog change, no rewrite; no
  foreign key in the database (the column never changes after the enqueue, and a constraint
  trigger on the hottest table would cost every write of it);
- two partial indexes over members of batches only, built CONCURRENTLY (so the migration is
  not atomic): a job outside a batch writes neither.

The previous release"s code keeps working against it: it never writes batch_id.
"""
import django.db.models.deletion
import django.db.models.functions.datetime
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_pg_jobqueue", "0023_rate_limits"),
    ]

    operations = [
        migrations.CreateModel(
            name="JobBatch",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("total", models.IntegerField()),
                ("callbacks", models.JSONField(db_default=models.Value({}, models.JSONField()), default=dict)),
                ("pass_results", models.BooleanField(db_default=False, default=False)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("cancelled_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("succeeded", models.IntegerField(blank=True, null=True)),
                ("failed", models.IntegerField(blank=True, null=True)),
                ("cancelled", models.IntegerField(blank=True, null=True)),
                ("callback_jobs", models.JSONField(blank=True, null=True)),
            ],
            options={
                "db_table": "job_batches",
                "ordering": ["id"],
                "indexes": [models.Index(models.F("id"), condition=models.Q(("finished_at__isnull", True)), name="job_batches_unfinished_idx")],
                "constraints": [models.CheckConstraint(condition=models.Q(("finished_at__isnull", True), models.Q(("callback_jobs__isnull", False), ("cancelled__isnull", False), ("failed__isnull", False), ("succeeded__isnull", False)), _connector="OR"), name="job_batch_finished_has_counts")],
            },
        ),
        migrations.AddField(
            model_name="job",
            name="batch",
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name="jobs", to="django_pg_jobqueue.jobbatch"),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(models.F("batch"), models.F("id"), condition=models.Q(("batch__isnull", False)), name="jobs_batch_idx"),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(models.F("batch"), condition=models.Q(("batch__isnull", False), models.Q(("status__in", ["succeeded", "failed", "cancelled"]), _negated=True)), name="jobs_batch_unfinished_idx"),
        ),
    ]
