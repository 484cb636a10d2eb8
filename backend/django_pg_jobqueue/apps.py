from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "django_pg_jobqueue"
    label = "django_pg_jobqueue"
    verbose_name = "Jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import importlib.util

        import django
        from django.utils.module_loading import autodiscover_modules

        # Handlers declared with @handler in any installed app's handlers.py (ours included).
        autodiscover_modules("handlers")
        # And any extra handler modules the settings name (JOB_EXTRA_HANDLER_MODULES).
        from importlib import import_module

        from . import conf

        for module in conf.extra_handler_modules():
            import_module(module)
        # The `django_task` handler that runs django.tasks tasks, and the periodic schedule's
        # system check (jobs.E200/E201).
        # The throttle cache's deploy check (django_pg_jobqueue.W043/E044); imports Django only.
        from . import (  # noqa: F401
            periodic,
            security,  # noqa: F401
        )

        # Django 5.2 has Tasks only through the django-tasks backport (the `tasks` extra):
        # without it the queue runs jobs as ever, and only QueueBackend is unavailable.
        if django.VERSION >= (6, 0) or importlib.util.find_spec("django_tasks") is not None:
            from . import tasks_backend  # noqa: F401

        # What a project that mounts the API must install (django_pg_jobqueue.E300/W301);
        # imports Django only.
        from .api import checks  # noqa: F401
