"""Unique jobs: jobs.unique_key and jobs.unique_states, their partial unique index
job_unique_key_unique, and jobs.idempotency_expires_at (an idempotency key's expiry).
Job dependencies: the status `waiting`, the event kinds `blocked` and `unblocked`, the table
job_dependencies, jobs.has_dependants and the partial index jobs_waiting_idx.

Safe online: the three columns are nullable without a default, so adding each is a catalog
change (ACCESS EXCLUSIVE on jobs for a moment, no rewrite, no scan); the index is built
CONCURRENTLY (SHARE UPDATE EXCLUSIVE: enqueues, claims and completions go on while it
builds), which is why this migration is not atomic. Every existing job has a NULL unique_key,
so the index starts empty. jobs.has_dependants has a constant default: a catalog change too.
The two check constraints that list the statuses and the event kinds are replaced in one
ALTER TABLE each (ACCESS EXCLUSIVE for a moment, the new one NOT VALID: no scan under that
lock), then validated (SHARE UPDATE EXCLUSIVE: reads and writes go on while it scans).
jobs_waiting_idx is built CONCURRENTLY. Reversible: backwards drops what forwards added.
"""
import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
# The partial unique index of unique jobs (models.Job, job_unique_key_unique), built
# CONCURRENTLY by migration 0008: one row per unique key among the jobs whose status is in
# their own unique_states (a JSON array: `unique_states ? status`). A job leaves it by itself
# when its status leaves those states.
CREATE_UNIQUE_KEY_INDEX = 'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_unique_key_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL AND (unique_states ? status)'
DROP_UNIQUE_KEY_INDEX = 'DROP INDEX CONCURRENTLY IF EXISTS job_unique_key_unique'
# unique_states ? status (the JSON array holds the status): whether a job counts for its
# unique key (job_unique_key_unique).
STATUS_IN_UNIQUE_STATES = models.Func(
    models.F("unique_states"), models.F("status"), template="(%(expressions)s)", arg_joiner=" ? ",
    output_field=models.BooleanField())


STATUSES = ["queued", "running", "succeeded", "failed", "cancelled", "waiting"]
OLD_STATUSES = STATUSES[:-1]
EVENT_KINDS = ["created", "claimed", "lease_renewed", "progress", "log", "succeeded", "failed",
               "retry_scheduled", "lease_expired", "lease_lost", "timed_out", "released",
               "snoozed", "cancel_requested", "cancelled", "retried", "blocked", "unblocked"]
OLD_EVENT_KINDS = EVENT_KINDS[:-2]


def _replace_check(table: str, name: str, column: str, values: list[str]) -> list[str]:
    """Swap a CHECK (column IN values) in one ALTER TABLE, NOT VALID, then validate it."""
    listed = ", ".join(f"'{v}'::text" for v in values)
    return [
        f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}, ADD CONSTRAINT {name}"
        f" CHECK ({column}::text = ANY (ARRAY[{listed}])) NOT VALID",
        f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}",
    ]


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
            database_operations=[migrations.RunSQL(CREATE_UNIQUE_KEY_INDEX,
                                                   DROP_UNIQUE_KEY_INDEX)],
            state_operations=[migrations.AddConstraint(
                model_name="job",
                constraint=models.UniqueConstraint(
                    condition=models.Q(("unique_key__isnull", False), STATUS_IN_UNIQUE_STATES),
                    fields=("unique_key",), name="job_unique_key_unique"))],
        ),
        # -- dependencies --------------------------------------------------------------------
        migrations.AddField(
            model_name="job", name="has_dependants",
            field=models.BooleanField(db_default=False, default=False)),
        migrations.AlterField(
            model_name="job", name="status",
            field=models.CharField(choices=[(s, s) for s in STATUSES], db_default="queued",
                                   default='queued',
                                   max_length=16)),
        migrations.AlterField(
            model_name="jobevent", name="kind",
            field=models.CharField(choices=[(k, k) for k in EVENT_KINDS], max_length=32)),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(_replace_check("jobs", "job_status_known", "status", STATUSES),
                                  _replace_check("jobs", "job_status_known", "status",
                                                 OLD_STATUSES)),
                migrations.RunSQL(
                    _replace_check("job_events", "job_event_kind_known", "kind", EVENT_KINDS),
                    _replace_check("job_events", "job_event_kind_known", "kind",
                                   OLD_EVENT_KINDS)),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="job", name="job_status_known"),
                migrations.AddConstraint(model_name="job", constraint=models.CheckConstraint(
                    condition=models.Q(("status__in", STATUSES)), name="job_status_known")),
                migrations.RemoveConstraint(model_name="jobevent", name="job_event_kind_known"),
                migrations.AddConstraint(model_name="jobevent", constraint=models.CheckConstraint(
                    condition=models.Q(("kind__in", EVENT_KINDS)), name="job_event_kind_known")),
            ],
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(models.F("id"), condition=models.Q(("status", "waiting")),
                               name="jobs_waiting_idx")),
        migrations.CreateModel(
            name="JobDependency",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("on_failure", models.CharField(choices=[("cancel", "cancel"), ("run", "run")],
                                                db_default="cancel", default="cancel",
                                                max_length=8)),
                ("depends_on", models.ForeignKey(
                    db_constraint=False, db_index=False,
                    on_delete=django.db.models.deletion.DO_NOTHING,
                    related_name="dependant_links", to="django_pg_jobqueue.job")),
                ("job", models.ForeignKey(
                    db_constraint=False, db_index=False,
                    on_delete=django.db.models.deletion.DO_NOTHING,
                    related_name="dependency_links", to="django_pg_jobqueue.job")),
            ],
            options={
                "verbose_name_plural": "job dependencies",
                "db_table": "job_dependencies",
                "ordering": ["id"],
                "indexes": [models.Index(models.F("depends_on"), name="job_dependencies_on_idx")],
                "constraints": [
                    models.UniqueConstraint(fields=("job", "depends_on"),
                                            name="job_dependency_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("job", models.F("depends_on")), _negated=True),
                        name="job_dependency_not_itself"),
                    models.CheckConstraint(
                        condition=models.Q(("on_failure__in", ("cancel", "run"))),
                        name="job_dependency_on_failure_known"),
                ],
            },
        ),
    ]
