"""Fair shares' weights (docs/how-to/fairness.md): each queue's weighted fairness keys, and the
audit log's action `set_fairness_weights`.

Safe online:
- job_queue_settings.fairness_weights is jsonb with a constant default ('{}'): a catalog
  change, no rewrite, on a table of a handful of rows; its check (an object) reads them;
- the audit log's action check is replaced in one ALTER TABLE, NOT VALID, then validated
  (the table is read and written meanwhile), as migrations 0025 and 0028 did.
Reversible: backwards drops the column and puts the old list back (and fails while an entry
of the new action exists).

The previous release's code keeps working against it: it never reads the weights, so a
weighted key takes one turn per round until every worker runs this release.
"""
from django.db import migrations, models
from django.db.models.lookups import Exact

from ._frozen import replace_check_in

# Frozen: every OperatorAction at this migration (states.py): 0028's list and this one's.
OLD_ACTIONS = ["cancel", "retry", "rerun", "run_now", "edit", "delete", "pause_queue",
               "resume_queue", "set_queue_limit", "set_queue_fairness", "set_queue_aging",
               "run_schedule", "pause_schedule", "resume_schedule", "set_rate_limit",
               "remove_rate_limit", "cancel_batch", "set_worker_override",
               "remove_worker_override"]
ACTIONS = [*OLD_ACTIONS[:11], "set_fairness_weights", *OLD_ACTIONS[11:]]


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("django_pg_jobqueue", "0028_worker_overrides")]
    operations = [
        migrations.AddField(
            model_name="queuesetting", name="fairness_weights",
            field=models.JSONField(blank=True, db_default={}, default=dict)),
        migrations.AddConstraint(
            model_name="queuesetting",
            constraint=models.CheckConstraint(
                condition=Exact(models.Func(models.F("fairness_weights"), function="jsonb_typeof",
                                            output_field=models.CharField()), "object"),
                name="queue_fairness_weights_object")),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                replace_check_in("job_audit_log", "job_audit_action_known", "action", ACTIONS),
                replace_check_in("job_audit_log", "job_audit_action_known", "action",
                                 OLD_ACTIONS))],
            state_operations=[
                migrations.AlterField(
                    model_name="auditlogentry", name="action",
                    field=models.CharField(choices=[(a, a) for a in ACTIONS], max_length=32)),
                migrations.RemoveConstraint(model_name="auditlogentry",
                                            name="job_audit_action_known"),
                migrations.AddConstraint(model_name="auditlogentry", constraint=models.CheckConstraint(
                    condition=models.Q(("action__in", ACTIONS)), name="job_audit_action_known")),
            ],
        ),
    ]
