"""Durable waits: job_signals (models.JobSignal: the signals sent to jobs or awaited by them,
one row per job and name), a new, empty table with its unique (job, name) constraint, whose
index also serves each read of a signal; and the event kinds `parked` (a running job parked
until a time or a signal, its attempt not charged) and `signalled` (a signal sent to a job).

The check constraint that lists the event kinds (with 0019's `expired`) is replaced as in 0017: in one ALTER TABLE, NOT
VALID, then validated. Reversible: backwards puts the old list back (and fails while a
`parked` or `signalled` event exists).
"""
import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from ._frozen import replace_event_kind_check

# Frozen: what this migration runs, copied from states.py when it was frozen.
EVENT_KINDS = ["created", "claimed", "lease_renewed", "progress", "log", "succeeded", "failed",
               "retry_scheduled", "lease_expired", "lease_lost", "timed_out", "released",
               "snoozed", "cancel_requested", "cancelled", "retried", "blocked", "unblocked",
               "edited", "expired", "parked", "signalled"]
OLD_EVENT_KINDS = EVENT_KINDS[:-2]


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("django_pg_jobqueue", "0019_enqueue_policies")]
    operations = [
        migrations.CreateModel(
            name="JobSignal",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("data", models.JSONField(null=True)),
                ("sent_at", models.DateTimeField(null=True)),
                ("awaited_at", models.DateTimeField(null=True)),
                ("timeout_at", models.DateTimeField(null=True)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("job", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="signals", to="django_pg_jobqueue.job")),
            ],
            options={
                "db_table": "job_signals",
                "ordering": ["id"],
                "constraints": [models.UniqueConstraint(fields=("job", "name"), name="job_signal_name_unique")],
            },
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
