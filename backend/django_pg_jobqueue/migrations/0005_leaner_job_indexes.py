"""Two indexes fewer written per job, measured on the worker's claim + complete path:

- job_events.job_id had Django's foreign-key index and job_events_job_id_idx (job_id, id);
  the second serves every lookup by job (and the cascade), so the first only cost a write
  for each of a job's several events;
- jobs_status_finished_idx only holds finished rows now (finished_at IS NOT NULL), so the
  enqueue and the claim no longer write it; pruning and the recent-throughput figures filter
  on finished_at, which implies it.

Both run without blocking writes on a big table: the indexes are dropped and built
CONCURRENTLY (so the migration is not atomic), and the foreign key itself is left as it is
(Django's AlterField would drop it and validate it again over every event row).
"""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_pg_jobqueue", "0004_queue_status_index"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="job", name="jobs_status_finished_idx"),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(models.F("status"), models.F("finished_at"),
                               condition=models.Q(("finished_at__isnull", False)),
                               name="jobs_status_finished_idx"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="jobevent",
                    name="job",
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name="events", to="django_pg_jobqueue.job"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX CONCURRENTLY IF EXISTS job_events_job_id_e9646c53",
                    reverse_sql="CREATE INDEX CONCURRENTLY IF NOT EXISTS "
                                "job_events_job_id_e9646c53 ON job_events (job_id)",
                ),
            ],
        ),
    ]
