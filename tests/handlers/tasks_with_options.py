"""Django tasks declared with the queue's options, as an application's tasks.py would: imported
by tests/tasks/test_task_options.py under several TASKS backends."""
from django_pg_jobqueue import task_options
from django_pg_jobqueue.tasks_compat import task


@task_options(max_attempts=5, timeout_seconds=30)
@task(queue_name="default")
def send_welcome(user_id):
    return {"welcomed": user_id}


@task()
@task_options(max_attempts=2)
def double(x):
    return x * 2


@task_options(max_attempts=3, retry_policy={"delays_seconds": [0.25], "give_up_on": ["KeyError"]})
@task()
def flaky(kind):
    raise {"key": KeyError, "value": ValueError}[kind]("flaky")


@task_options(max_attempts=3)
@task()
def nested(levels):
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value
