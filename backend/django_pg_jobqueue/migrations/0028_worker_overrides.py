"""A host's override of how it runs a queue (docs/how-to/queues.md, "One host's threads"):
job_worker_overrides, one row per (hostname, queue) that says something (threads, stopped or
both), and the audit log knows the two actions that write it, `set_worker_override` and
`remove_worker_override`.

Safe online: a new, empty table; the audit log's action check is replaced in one ALTER TABLE,
NOT VALID, then validated (the log is read and written meanwhile). The previous release's
workers never read the table: an override holds on a host once its workers run this release.
Reversible: backwards drops the table and puts the old action list back (which fails while
an entry of a new action exists).
"""
from django.db import migrations, models
from django.db.models.functions import Now

from ._frozen import replace_check_in

# Frozen: every OperatorAction at this migration (states.py): 0027's list and this one's two.
OLD_ACTIONS = ["cancel", "retry", "rerun", "run_now", "edit", "delete", "pause_queue",
               "resume_queue", "set_queue_limit", "set_queue_fairness", "set_queue_aging",
               "run_schedule", "pause_schedule", "resume_schedule", "set_rate_limit",
               "remove_rate_limit", "cancel_batch"]
ACTIONS = [*OLD_ACTIONS, "set_worker_override", "remove_worker_override"]
MAX_OVERRIDE_THREADS = 10_000  # frozen: states.MAX_OVERRIDE_THREADS
MAX_HOSTNAME_LENGTH = 200      # frozen: states.MAX_HOSTNAME_LENGTH (job_workers.hostname's)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_pg_jobqueue", "0027_fair_shares"),
    ]

    operations = [
        migrations.CreateModel(
            name="WorkerOverride",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("hostname", models.CharField(max_length=MAX_HOSTNAME_LENGTH)),
                ("queue", models.CharField(max_length=100)),
                ("threads", models.IntegerField(blank=True, null=True)),
                ("stopped", models.BooleanField(db_default=False, default=False)),
                ("actor", models.CharField(blank=True, db_default="", default="", max_length=150)),
                ("updated_at", models.DateTimeField(db_default=Now())),
            ],
            options={
                "db_table": "job_worker_overrides",
                "ordering": ["hostname", "queue"],
                "constraints": [
                    models.UniqueConstraint(fields=("hostname", "queue"),
                                            name="worker_override_one_per_host_queue"),
                    models.CheckConstraint(
                        condition=models.Q(("threads__isnull", True), models.Q(
                            ("threads__gte", 0), ("threads__lte", MAX_OVERRIDE_THREADS)),
                            _connector="OR"),
                        name="worker_override_threads_in_range"),
                    models.CheckConstraint(
                        condition=models.Q(("threads__isnull", False), ("stopped", True),
                                           _connector="OR"),
                        name="worker_override_says_something"),
                    models.CheckConstraint(
                        condition=models.Q(models.Q(("hostname", ""), _negated=True),
                                           models.Q(("queue", ""), _negated=True)),
                        name="worker_override_names_host_and_queue"),
                ],
            },
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    replace_check_in("job_audit_log", "job_audit_action_known", "action", ACTIONS),
                    replace_check_in("job_audit_log", "job_audit_action_known", "action",
                                     OLD_ACTIONS)),
            ],
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
