from django.apps import AppConfig
from django.db.models.signals import post_migrate


def prepare_shard_ids(sender, using, verbosity=1, **kwargs) -> None:
    """After `migrate` on a database of JOB_SHARDS (or JOB_DATABASE, with shards set): bound
    its job ids to its shard's range, so that an id names its shard (services/shards.py)."""
    from . import conf  # here: loaded with the app, before the models

    settings = conf.get()
    if not settings.SHARDS or (using != settings.DATABASE and using not in settings.SHARDS):
        return
    from .services.shards import prepare_ids

    message = prepare_ids(using)
    if verbosity:
        print(f"  Job shard ids: {message}")


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

        post_migrate.connect(prepare_shard_ids, sender=self)
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
