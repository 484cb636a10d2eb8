"""A job's own retry policy, and when a worker that does not know its type first gave it back.

Two nullable columns without a default: PostgreSQL adds them to the catalog only (no table
rewrite, no scan), under a brief ACCESS EXCLUSIVE lock; safe while workers and the API run.
Workers of the previous release neither read nor write them.
"""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0007_partition_job_events"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="retry_policy",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="unknown_type_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
