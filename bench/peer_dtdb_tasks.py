"""The task django-tasks-db's workers run in the benchmark."""
from django.tasks import task

from bench.common import stamp


@task()
def noop(i=None):
    if i is not None:
        stamp({"i": i})
