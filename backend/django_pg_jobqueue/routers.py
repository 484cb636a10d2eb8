"""Put the queue's tables in a database of their own.

    DATABASES = {"default": {...}, "queue": {...}}
    JOB_DATABASE = "queue"
    DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]

The router sends the queue's models (reads, writes and migrations) to the `JOB_DATABASE`
alias, keeps them out of every other database, and keeps every other app's tables out of the
queue's database (when that is not "default"); where other apps' models are read and written
it leaves to the next router, or to "default". With JOB_DATABASE = "default" (the default)
it changes nothing. Inside `db.reading()` (the API's reads, with `JOB_READ_DATABASE` set)
the queue's models are read from the replica. The package's own raw SQL and transactions use that alias too
(django_pg_jobqueue.db), so the router is what the ORM needs, and migrations.
"""
from . import conf, db

APP_LABEL = "django_pg_jobqueue"


class JobQueueRouter:
    def db_for_read(self, model, **hints):
        if model._meta.app_label == APP_LABEL:
            return db.model_read_alias() or conf.get().DATABASE
        return None

    def db_for_write(self, model, **hints):
        if model._meta.app_label == APP_LABEL:
            return conf.get().DATABASE
        return None

    def allow_relation(self, obj1, obj2, **hints):
        labels = {obj1._meta.app_label, obj2._meta.app_label}
        if labels == {APP_LABEL}:
            return True
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        queue_db = conf.get().DATABASE
        if app_label == APP_LABEL:
            return db == queue_db
        if db == queue_db and queue_db != "default":
            return False  # the queue's own database holds the queue only
        return None
