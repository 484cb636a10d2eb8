"""Django tasks whose jobs carry concurrency keys, as an application's tasks.py would declare
them: imported by tests/tasks/test_task_options.py and, through JOB_EXTRA_HANDLER_MODULES, by the
worker processes of tests/tasks/test_task_concurrency_keys.py. Each run logs "start" and "end" (on
the database clock) so that a test can tell from the events which runs overlapped."""
from django_pg_jobqueue import task_options
from django_pg_jobqueue.tasks_compat import task


@task_options(concurrency_key=lambda customer, seconds=0.0: f"customer:{customer}")
@task(takes_context=True)
def sync_customer(context, customer, seconds=0.0):
    """One customer's sync at a time: the key is made from the task's `customer` argument."""
    context.job.log("start")
    context.job.wait(seconds)
    context.job.log("end")
    return customer


@task_options(concurrency_key="reports", concurrency_key_limit=2)
@task()
def build_report(n):
    """At most two reports at once, whoever enqueues them."""
    return n


@task()
def plain(n):
    """No key of its own: `.using(concurrency_key=...)` gives one per call."""
    return n


@task_options(fairness_key=lambda tenant: f"tenant:{tenant}")
@task()
def tenant_export(tenant):
    """Takes turns with other tenants' exports in a fair queue: the key from its argument."""
    return tenant
