"""A job's own retry policy, when a worker that does not know its type first gave it back, and
Django tasks' finished jobs typed by their task's path.

Two nullable columns without a default: PostgreSQL adds them to the catalog only (no table
rewrite, no scan), under a brief ACCESS EXCLUSIVE lock; safe while workers and the API run.
Workers of the previous release neither read nor write them.

Then the finished `django_task` jobs take their task's path as their type
(TASK_JOBS_TYPED_BY_PATH, below): one UPDATE of those rows only, which no worker touches (the
pruner may wait for it), writing each again; in its own transaction, after the columns'
lock is gone (atomic = False). Queued and running ones keep `django_task` and
run as before. Backwards, every task's job is `django_task` again.
"""
from django.db import migrations, models

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
TASK_JOBS_TYPED_BY_PATH = """
UPDATE jobs SET type = payload->>'task'
WHERE type = 'django_task' AND status IN ('succeeded', 'failed', 'cancelled')
  AND jsonb_typeof(payload->'task') = 'string' AND length(payload->>'task') BETWEEN 1 AND 100
"""
TASK_JOBS_TYPED_DJANGO_TASK = """
UPDATE jobs SET type = 'django_task'
WHERE jsonb_typeof(payload->'task') = 'string' AND type = payload->>'task'
  AND payload ? 'backend'
"""


class Migration(migrations.Migration):
    # Each step in its own transaction: the columns' brief catalog lock is not held while the
    # UPDATE runs (atomic, it would block every claim and enqueue until the UPDATE ends).
    atomic = False

    dependencies = [
        ("django_pg_jobqueue", "0008_unique_jobs_and_dependencies"),
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
        migrations.RunSQL(TASK_JOBS_TYPED_BY_PATH, TASK_JOBS_TYPED_DJANGO_TASK),
    ]
