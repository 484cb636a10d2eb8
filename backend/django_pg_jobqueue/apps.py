from django.apps import AppConfig


class JobQueueConfig(AppConfig):
    name = "django_pg_jobqueue"
    # The label names the tables' app, the migrations and the permissions
    # (django_pg_jobqueue.change_job): it stays as it is.
    label = "django_pg_jobqueue"
    verbose_name = "Job queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from importlib import import_module

        from django.utils.module_loading import autodiscover_modules

        from . import conf

        # Handlers: every installed app's handlers.py (ours included), then the modules
        # JOB_EXTRA_HANDLER_MODULES names.
        autodiscover_modules("handlers")
        for module in conf.extra_handler_modules():
            import_module(module)
        # Modules imported for what they register: system checks (checks, periodic,
        # security, api.checks) and the tasks runner's `django_task` handler.
        from . import checks, periodic, security  # noqa: F401

        # Django 5.2 has Tasks only through the django-tasks backport (the `tasks` extra):
        # without it the queue runs jobs as ever, and only QueueBackend is unavailable.
        if checks.tasks_framework_available():
            from .tasks import runner  # noqa: F401

        from .api import checks as api_checks  # noqa: F401
