"""The event kind `edited`: an operator changed a queued or waiting job's priority or run time
(services.operations.edit, run_now).

The check constraint that lists the event kinds is replaced in one ALTER TABLE (ACCESS
EXCLUSIVE on job_events for a moment, the new one NOT VALID: no scan under that lock), then
validated (SHARE UPDATE EXCLUSIVE: reads and writes go on while it scans). Reversible:
backwards puts the old list back (and fails while an `edited` event exists).
"""
from django.db import migrations, models

from ._frozen import replace_event_kind_check

# Frozen: what this migration runs, copied from states.py when it was frozen, so that
# editing that module cannot change a migration that has already run.
EVENT_KINDS = ["created", "claimed", "lease_renewed", "progress", "log", "succeeded", "failed",
               "retry_scheduled", "lease_expired", "lease_lost", "timed_out", "released",
               "snoozed", "cancel_requested", "cancelled", "retried", "blocked", "unblocked",
               "edited"]
OLD_EVENT_KINDS = EVENT_KINDS[:-1]


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("django_pg_jobqueue", "0016_search_side_table")]
    operations = [
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
