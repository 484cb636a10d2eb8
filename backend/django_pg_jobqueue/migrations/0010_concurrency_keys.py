"""Concurrency keys: at most N running jobs per key (services/claiming.py, sql.CLAIM_KEYED).

Safe online, in steps that never hold a lock that blocks reads or writes for longer than a
catalog change:
- two nullable columns without a default (`concurrency_key`, `concurrency_key_limit`): a
  catalog change, no rewrite;
- the check `job_concurrency_key_has_limit`, added NOT VALID (instant) and then validated,
  which scans `jobs` under SHARE UPDATE EXCLUSIVE: reads and writes go on;
- three partial indexes over keyed rows only, built CONCURRENTLY (so the migration is not
  atomic); jobs without a key write none of them;
- the trigger that sends the enqueue NOTIFY when a keyed job leaves running (a freed slot
  wakes the workers): CREATE TRIGGER takes SHARE ROW EXCLUSIVE on `jobs` for a moment.

The previous release's code keeps working against it: it never writes the new columns, and
its claim (which does not know about keys) would run keyed jobs without their limit, which is
why workers are upgraded before anything enqueues keyed jobs (docs/how-to/upgrading.md).
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models import F, Q

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
# The job's check constraint, added NOT VALID and validated apart: the validation scans the
# table under SHARE UPDATE EXCLUSIVE, which blocks no reads or writes.
KEY_CONSTRAINT_ADD = 'ALTER TABLE jobs ADD CONSTRAINT job_concurrency_key_has_limit CHECK ((concurrency_key IS NULL AND concurrency_key_limit IS NULL) OR (concurrency_key IS NOT NULL AND concurrency_key_limit IS NOT NULL AND concurrency_key_limit >= 1 AND concurrency_key_limit <= {limit})) NOT VALID'
KEY_CONSTRAINT_DROP = 'ALTER TABLE jobs DROP CONSTRAINT IF EXISTS job_concurrency_key_has_limit'
KEY_CONSTRAINT_VALIDATE = 'ALTER TABLE jobs VALIDATE CONSTRAINT job_concurrency_key_has_limit'
KEY_SLOT_FREED_DROP = (
    'DROP TRIGGER IF EXISTS jobs_concurrency_slot_freed ON jobs',
    'DROP FUNCTION IF EXISTS jobs_concurrency_slot_freed()',
)
# A freed slot wakes the workers (migration 0010): when a keyed job leaves running, whatever
# moved it (complete, fail, release, snooze, the reaper), PostgreSQL sends the enqueue NOTIFY
# for its queue at commit, so a job waiting on the key is claimed at once rather than at the
# next poll. The WHEN clause is checked per updated row; jobs without a key send nothing.
KEY_SLOT_FREED_FUNCTION = """
CREATE OR REPLACE FUNCTION jobs_concurrency_slot_freed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('jobs_enqueued', NEW.queue);
    RETURN NULL;
END
$$
"""
KEY_SLOT_FREED_TRIGGER = """
CREATE TRIGGER jobs_concurrency_slot_freed
AFTER UPDATE OF status ON jobs
FOR EACH ROW
WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND OLD.concurrency_key IS NOT NULL)
EXECUTE FUNCTION jobs_concurrency_slot_freed()
"""
MAX_CONCURRENCY_KEY_LIMIT = 1000


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_pg_jobqueue", "0009_retry_policies"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="concurrency_key",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="concurrency_key_limit",
            field=models.SmallIntegerField(blank=True, null=True),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="job",
                    constraint=models.CheckConstraint(
                        condition=Q(concurrency_key__isnull=True,
                                    concurrency_key_limit__isnull=True)
                        | Q(concurrency_key__isnull=False, concurrency_key_limit__isnull=False,
                            concurrency_key_limit__gte=1, concurrency_key_limit__lte=MAX_CONCURRENCY_KEY_LIMIT),
                        name="job_concurrency_key_has_limit",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    [KEY_CONSTRAINT_ADD.format(limit=MAX_CONCURRENCY_KEY_LIMIT),
                     KEY_CONSTRAINT_VALIDATE],
                    reverse_sql=KEY_CONSTRAINT_DROP,
                ),
            ],
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                F("priority").desc(), "available_at", "created_at", "id",
                condition=Q(status="queued", concurrency_key__isnull=False),
                name="jobs_keyed_claim_order_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                "concurrency_key", F("priority").desc(), "available_at", "created_at", "id",
                condition=Q(status="queued", concurrency_key__isnull=False),
                name="jobs_key_claim_order_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index("concurrency_key", "id", name="jobs_concurrency_key_idx",
                               condition=Q(concurrency_key__isnull=False)),
        ),
        migrations.RunSQL(
            [KEY_SLOT_FREED_FUNCTION, KEY_SLOT_FREED_TRIGGER],
            reverse_sql=list(KEY_SLOT_FREED_DROP),
        ),
    ]
