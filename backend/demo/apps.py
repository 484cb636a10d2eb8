from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def create_cache_tables(using="default", **kwargs):
    """After every `migrate`: the database caches' tables, which `migrate` alone does not
    create (idempotent: existing tables are left alone)."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo"

    def ready(self):
        from . import checks  # noqa: F401 - registers demo.E001

        # Once per migrate: post_migrate is sent for each app with models, which this one has
        # not; the queue's app always has them. (Django's test database gets the tables from
        # create_test_db itself.)
        post_migrate.connect(create_cache_tables, sender=apps.get_app_config("django_pg_jobqueue"),
                             dispatch_uid="demo.create_cache_tables")
