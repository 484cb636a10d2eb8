"""Django Tasks (`django.tasks`) on this queue, in layers: `options` (what `@task_options`
declares and which tasks may run: a catalogue), `results` (a TaskResult from a job), `backend`
(`QueueBackend`: enqueue and get_result), `runner` (the `django_task` handler the worker runs).

Users write `django_pg_jobqueue.tasks_backend.QueueBackend` in TASKS; that module re-exports
these. Nothing is imported here, so importing one layer never imports the others.
"""
