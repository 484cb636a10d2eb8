"""job_audit_log: the operator actions (models.AuditLogEntry), a new, empty table with an index
per filter of the API's list (actor, action, target), each newest first, and check
constraints that name the known actions and target kinds."""

import django.db.models.functions.datetime
from django.db import migrations, models

# Frozen: copied from states.py (OperatorAction, AuditTarget) when this migration was written.
ACTIONS = ["cancel", "retry", "rerun", "run_now", "edit", "delete", "pause_queue",
           "resume_queue", "set_queue_limit", "run_schedule", "pause_schedule", "resume_schedule"]
TARGET_KINDS = ["job", "queue", "schedule"]


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0020_durable_waits"),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditLogEntry",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("actor", models.CharField(blank=True, default="", max_length=150)),
                ("action", models.CharField(choices=[(a, a) for a in ACTIONS], max_length=32)),
                ("target_kind", models.CharField(choices=[(t, t) for t in TARGET_KINDS], max_length=16)),
                ("target", models.CharField(max_length=200)),
                ("data", models.JSONField(blank=True, default=dict)),
            ],
            options={
                "verbose_name": "audit log entry",
                "verbose_name_plural": "audit log",
                "db_table": "job_audit_log",
                "ordering": ["-id"],
                "indexes": [
                    models.Index(fields=["actor", "-id"], name="job_audit_actor_idx"),
                    models.Index(fields=["action", "-id"], name="job_audit_action_idx"),
                    models.Index(fields=["target_kind", "target", "-id"], name="job_audit_target_idx"),
                ],
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("action__in", ACTIONS)),
                                           name="job_audit_action_known"),
                    models.CheckConstraint(condition=models.Q(("target_kind__in", TARGET_KINDS)),
                                           name="job_audit_target_kind_known"),
                ],
            },
        ),
    ]
