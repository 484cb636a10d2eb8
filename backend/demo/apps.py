from django.apps import AppConfig
from django.db.models.signals import post_migrate


def create_cache_tables(using="default", **kwargs):
    """After every `migrate` (and the test database's creation): the database caches' tables,
    which `migrate` alone does not create (idempotent: existing tables are left alone)."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo"

    def ready(self):
        from . import checks  # noqa: F401 - registers demo.E001

        post_migrate.connect(create_cache_tables, sender=self,
                             dispatch_uid="demo.create_cache_tables")
