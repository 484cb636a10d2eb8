"""Rate limits: job_rate_limits (at most N starts per period for a queue, a job type or a
concurrency key, models.RateLimit) and job_rate_starts, the log of starts the claim counts
them against (models.RateStart), indexed by (scope, started_at) for the claim's window sums.
Two new, empty tables: nothing else changes."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0022_lost_workers_history"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateLimit",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("queue", "queue"), ("type", "type"), ("key", "key")], max_length=5)),
                ("name", models.CharField(max_length=200)),
                ("max_starts", models.PositiveIntegerField()),
                ("period_seconds", models.FloatField()),
                ("updated_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                "db_table": "job_rate_limits",
                "ordering": ["kind", "name"],
                "constraints": [
                    models.UniqueConstraint(fields=("kind", "name"), name="rate_limit_one_per_scope"),
                    models.CheckConstraint(condition=models.Q(("kind__in", ("queue", "type", "key"))), name="rate_limit_kind_known"),
                    models.CheckConstraint(condition=models.Q(("max_starts__gte", 1)), name="rate_limit_max_starts_positive"),
                    models.CheckConstraint(condition=models.Q(("period_seconds__gt", 0), ("period_seconds__lte", 86400)), name="rate_limit_period_within_bounds"),
                ],
            },
        ),
        migrations.CreateModel(
            name="RateStart",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("scope", models.CharField(max_length=210)),
                ("started_at", models.DateTimeField()),
                ("weight", models.IntegerField()),
            ],
            options={
                "db_table": "job_rate_starts",
                "ordering": ["id"],
                "indexes": [
                    models.Index(fields=["scope", "started_at"], name="job_rate_starts_window_idx"),
                    models.Index(fields=["started_at"], name="job_rate_starts_started_at_idx"),
                ],
            },
        ),
    ]
