"""The maintenance leader's lease row (worker/leader.py): a new, empty table; safe online."""
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0012_console"),
    ]

    operations = [
        migrations.CreateModel(
            name="LeaderLease",
            fields=[
                ("role", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("holder", models.CharField(max_length=200)),
                ("elected_at", models.DateTimeField(
                    db_default=django.db.models.functions.datetime.Now())),
                ("expires_at", models.DateTimeField()),
            ],
            options={"db_table": "job_leader", "ordering": ["role"]},
        ),
    ]
