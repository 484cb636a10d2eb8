"""Enqueue policies: debounce, throttle and expiry (docs/how-to/enqueue-policies.md).

Safe online, in steps that never hold a lock that blocks reads or writes for longer than a
catalog change:
- two nullable columns without a default (`expires_at`, `debounce_key`): a catalog change,
  no rewrite;
- the partial unique index `job_debounce_key_unique` (queued rows with a debounce key) and
  the partial index `jobs_queued_expiry_idx` (queued rows with a deadline), built
  CONCURRENTLY (so the migration is not atomic); jobs that use neither write neither;
- the event kind `expired` (the reaper's sweep ends a job not started by its expires_at):
  job_events' check constraint replaced in one ALTER TABLE, NOT VALID, then validated, as in
  0017. Backwards puts the old list back (and fails while an `expired` event exists).

A throttle needs no schema: it is a unique key with a period (job_unique_key_unique).
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models import Q

from ._frozen import replace_event_kind_check

# Frozen: what this migration runs, copied from the live modules (states.py, models.py) when
# it was frozen, so that editing them cannot change a migration that has already run.
EVENT_KINDS = ["created", "claimed", "lease_renewed", "progress", "log", "succeeded", "failed",
               "retry_scheduled", "lease_expired", "lease_lost", "timed_out", "released",
               "snoozed", "cancel_requested", "cancelled", "retried", "blocked", "unblocked",
               "edited", "expired"]
OLD_EVENT_KINDS = EVENT_KINDS[:-1]
DEBOUNCE_INDEX_ADD = (
    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_debounce_key_unique ON jobs "
    "(debounce_key) WHERE (debounce_key IS NOT NULL AND status = 'queued')")
DEBOUNCE_INDEX_DROP = "DROP INDEX CONCURRENTLY IF EXISTS job_debounce_key_unique"


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("django_pg_jobqueue", "0018_job_steps")]
    operations = [
        migrations.AddField(
            model_name="job", name="expires_at",
            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(
            model_name="job", name="debounce_key",
            field=models.CharField(blank=True, max_length=300, null=True)),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(DEBOUNCE_INDEX_ADD, DEBOUNCE_INDEX_DROP)],
            state_operations=[
                migrations.AddConstraint(model_name="job", constraint=models.UniqueConstraint(
                    fields=["debounce_key"],
                    condition=Q(debounce_key__isnull=False, status="queued"),
                    name="job_debounce_key_unique")),
            ],
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index("expires_at", name="jobs_queued_expiry_idx",
                               condition=Q(status="queued", expires_at__isnull=False)),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(replace_event_kind_check(EVENT_KINDS), replace_event_kind_check(OLD_EVENT_KINDS)),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="jobevent", name="kind",
                    field=models.CharField(choices=[(k, k) for k in EVENT_KINDS], max_length=32)),
                migrations.RemoveConstraint(model_name="jobevent", name="job_event_kind_known"),
                migrations.AddConstraint(model_name="jobevent", constraint=models.CheckConstraint(
                    condition=models.Q(("kind__in", EVENT_KINDS)), name="job_event_kind_known")),
            ],
        ),
    ]
