"""job_steps: the durable steps of jobs (models.JobStep, `ctx.step()`), a new, empty table with
its unique (job, name) constraint, whose index also serves the read of a job's steps. No
foreign key, as job_search_text: the statements that delete jobs delete their steps."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0017_edited_event"),
    ]

    operations = [
        migrations.CreateModel(
            name="JobStep",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("attempt", models.IntegerField()),
                ("result", models.JSONField(null=True)),
                ("created_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ("job", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="steps", to="django_pg_jobqueue.job")),
            ],
            options={
                "db_table": "job_steps",
                "ordering": ["id"],
                "constraints": [models.UniqueConstraint(fields=("job", "name"), name="job_step_name_unique")],
            },
        ),
    ]
