"""A Django task with a concurrency limit, imported only by tests/tasks/test_task_types.py, which
removes the limit again: a limit left in the registry would put every later claim of the
session under the limited claim."""
from django_pg_jobqueue import task_options
from django_pg_jobqueue.tasks_compat import task


@task_options(concurrency=1)
@task()
def one_at_a_time(n):
    """Runs alone: at most one of its jobs at once."""
    return n
