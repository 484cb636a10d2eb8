"""Unique jobs: jobs.unique_key and jobs.unique_states, their partial unique index
job_unique_key_unique, and jobs.idempotency_expires_at (an idempotency key's expiry).

Safe online: the three columns are nullable without a default, so adding each is a catalog
change (ACCESS EXCLUSIVE on jobs for a moment, no rewrite, no scan); the index is built
CONCURRENTLY (SHARE UPDATE EXCLUSIVE: enqueues, claims and completions go on while it
builds), which is why this migration is not atomic. Every existing job has a NULL unique_key,
so the index starts empty. Reversible: backwards drops the index, then the columns.
"""
from django.db import migrations, models

from django_pg_jobqueue import sql
from django_pg_jobqueue.models import STATUS_IN_UNIQUE_STATES


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("django_pg_jobqueue", "0007_partition_job_events")]

    operations = [
        migrations.AddField(
            model_name="job", name="idempotency_expires_at",
            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(
            model_name="job", name="unique_key",
            field=models.CharField(blank=True, max_length=300, null=True)),
        migrations.AddField(
            model_name="job", name="unique_states",
            field=models.JSONField(blank=True, null=True)),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(sql.CREATE_UNIQUE_KEY_INDEX,
                                                   sql.DROP_UNIQUE_KEY_INDEX)],
            state_operations=[migrations.AddConstraint(
                model_name="job",
                constraint=models.UniqueConstraint(
                    condition=models.Q(("unique_key__isnull", False), STATUS_IN_UNIQUE_STATES),
                    fields=("unique_key",), name="job_unique_key_unique"))],
        ),
    ]
