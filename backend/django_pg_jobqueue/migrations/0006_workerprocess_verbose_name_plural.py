"""The admin's sidebar said "Worker processs" (Django adds an "s"): state only, no SQL."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0005_leaner_job_indexes"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="workerprocess",
            options={"ordering": ["id"], "verbose_name_plural": "worker processes"},
        ),
    ]
