"""The stager's index (worker/stager.py, sql.NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS): queued jobs
that were not runnable when written (available_at after created_at: delayed, retried,
snoozed), by available_at.

Safe online: jobs_due_later_idx is built CONCURRENTLY (so the migration is not atomic);
producers, workers and the API go on meanwhile. A job enqueued to run at once writes nothing
to it. Reversible: backwards drops it. The previous release's code never needs it: its
stager reads the claim index as before.
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY

    dependencies = [
        ('django_pg_jobqueue', '0029_fairness_weights'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='job',
            index=models.Index(models.F('available_at'), condition=models.Q(('available_at__gt', models.F('created_at')), ('status', 'queued')), name='jobs_due_later_idx'),
        ),
    ]
