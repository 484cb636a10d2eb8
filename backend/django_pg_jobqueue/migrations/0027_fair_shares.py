"""Fair shares and priority aging (docs/how-to/fairness.md): each job's fairness key, the
claim's index over the keyed queued rows, and three queue settings (fair, aging_seconds,
aging_max_priority); the audit log knows the two new queue actions.

Safe online:
- jobs.fairness_key is a nullable column without a default: a catalog change, no rewrite;
- jobs_fair_claim_order_idx holds queued rows with a fairness key only (none yet), built
  CONCURRENTLY (so the migration is not atomic): a job without a key writes nothing to it;
- job_queue_settings is a handful of rows; its new columns are nullable or have a constant
  default (no rewrite);
- the audit log's action check is dropped and added back with the two new actions: a scan
  of job_audit_log under a brief lock (NOT VALID is not needed for an operator's log).

The previous release's code keeps working against it: it never writes fairness_key, and its
claim ignores the queue settings it does not know (a fair queue is then claimed in the plain
order until every worker runs this release).
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models.functions import Cast

# Frozen: every OperatorAction at this migration (states.py), the union of the earlier lists.
ACTIONS = ["cancel", "retry", "rerun", "run_now", "edit", "delete", "pause_queue",
           "resume_queue", "set_queue_limit", "set_queue_fairness", "set_queue_aging",
           "run_schedule", "pause_schedule", "resume_schedule", "set_rate_limit",
           "remove_rate_limit", "cancel_batch"]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('django_pg_jobqueue', '0026_payload_containment_index'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='auditlogentry',
            name='job_audit_action_known',
        ),
        migrations.AddField(
            model_name='job',
            name='fairness_key',
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddField(
            model_name='queuesetting',
            name='aging_max_priority',
            field=models.SmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='queuesetting',
            name='aging_seconds',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='queuesetting',
            name='fair',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AlterField(
            model_name='auditlogentry',
            name='action',
            field=models.CharField(choices=[(a, a) for a in ACTIONS], max_length=32),
        ),
        AddIndexConcurrently(
            model_name='job',
            index=models.Index(models.F('queue'), models.F('fairness_key'), Cast('priority', models.IntegerField()), models.F('available_at'), models.F('created_at'), models.F('id'), condition=models.Q(('fairness_key__isnull', False), ('status', 'queued')), name='jobs_fair_claim_order_idx'),
        ),
        migrations.AddConstraint(
            model_name='auditlogentry',
            constraint=models.CheckConstraint(condition=models.Q(('action__in', ACTIONS)), name='job_audit_action_known'),
        ),
        migrations.AddConstraint(
            model_name='queuesetting',
            constraint=models.CheckConstraint(condition=models.Q(('aging_seconds__isnull', True), models.Q(('aging_seconds__gt', 0), ('aging_seconds__lte', 86400)), _connector='OR'), name='queue_aging_seconds_positive'),
        ),
        migrations.AddConstraint(
            model_name='queuesetting',
            constraint=models.CheckConstraint(condition=models.Q(('aging_max_priority__isnull', True), models.Q(('aging_max_priority__gte', -100), ('aging_max_priority__lte', 100), ('aging_seconds__isnull', False)), _connector='OR'), name='queue_aging_max_priority_in_range'),
        ),
    ]
