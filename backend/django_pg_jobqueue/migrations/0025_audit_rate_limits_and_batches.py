"""The audit log records rate limits set and removed and batches cancelled: the actions
`set_rate_limit`, `remove_rate_limit`, `cancel_batch` and the target kinds `rate_limit`,
`batch` join job_audit_log's check constraints, each replaced in one ALTER TABLE, NOT VALID,
then validated (the table is read and written meanwhile). Reversible: backwards puts the old
lists back (and fails while an entry of a new action or kind exists)."""
from django.db import migrations, models

from ._frozen import replace_check_in

# Frozen: copied from states.py (OperatorAction, AuditTarget) when this migration was written.
OLD_ACTIONS = ["cancel", "retry", "rerun", "run_now", "edit", "delete", "pause_queue",
               "resume_queue", "set_queue_limit", "run_schedule", "pause_schedule",
               "resume_schedule"]
ACTIONS = [*OLD_ACTIONS, "set_rate_limit", "remove_rate_limit", "cancel_batch"]
OLD_TARGET_KINDS = ["job", "queue", "schedule"]
TARGET_KINDS = [*OLD_TARGET_KINDS, "rate_limit", "batch"]


def _swap(constraint: str, column: str, new: list[str], old: list[str]):
    return migrations.RunSQL(replace_check_in("job_audit_log", constraint, column, new),
                             replace_check_in("job_audit_log", constraint, column, old))


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("django_pg_jobqueue", "0024_batches")]
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                _swap("job_audit_action_known", "action", ACTIONS, OLD_ACTIONS),
                _swap("job_audit_target_kind_known", "target_kind", TARGET_KINDS, OLD_TARGET_KINDS),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="auditlogentry", name="action",
                    field=models.CharField(choices=[(a, a) for a in ACTIONS], max_length=32)),
                migrations.AlterField(
                    model_name="auditlogentry", name="target_kind",
                    field=models.CharField(choices=[(t, t) for t in TARGET_KINDS], max_length=16)),
                migrations.RemoveConstraint(model_name="auditlogentry", name="job_audit_action_known"),
                migrations.AddConstraint(model_name="auditlogentry", constraint=models.CheckConstraint(
                    condition=models.Q(("action__in", ACTIONS)), name="job_audit_action_known")),
                migrations.RemoveConstraint(model_name="auditlogentry",
                                            name="job_audit_target_kind_known"),
                migrations.AddConstraint(model_name="auditlogentry", constraint=models.CheckConstraint(
                    condition=models.Q(("target_kind__in", TARGET_KINDS)),
                    name="job_audit_target_kind_known")),
            ],
        ),
    ]
