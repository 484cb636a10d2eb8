"""Put the queue's tables in a database of their own.

    DATABASES = {"default": {...}, "queue": {...}}
    JOB_DATABASE = "queue"
    DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]

The router sends the queue's models (reads, writes and migrations) to the `JOB_DATABASE`
alias, keeps them out of every other database, and keeps every other app's tables out of the
queue's database (when that is not "default"); where other apps' models are read and written
it leaves to the next router, or to "default". With JOB_DATABASE = "default" (the default)
it changes nothing. The aliases of JOB_SHARDS hold the queue's tables too (each a whole
queue: `migrate --database <alias>`), and the queue's models go to the shard a block works
on (`db.on_database`, `run_job_workers --shard`). Inside `db.reading()` (the API's reads, with `JOB_READ_DATABASE` set)
the queue's models are read from the replica. The package's own raw SQL and transactions use that alias too
(django_pg_jobqueue.db), so the router is what the ORM needs, and migrations.
"""
from . import conf, db

APP_LABEL = "django_pg_jobqueue"


def _shard_of(hints) -> str | None:
    """With JOB_SHARDS, the database (a shard's or JOB_DATABASE) a model instance came from
    (`refresh_from_db()`, `save()` of a job enqueued to a shard), or None."""
    instance = hints.get("instance")
    if instance is None:
        return None
    settings = conf.get()
    if settings.SHARDS and (instance._state.db in settings.SHARDS
                            or instance._state.db == settings.DATABASE):
        return instance._state.db
    return None


class JobQueueRouter:
    def db_for_read(self, model, **hints):
        if model._meta.app_label == APP_LABEL:
            return db.model_read_alias() or _shard_of(hints) or db.home_alias()
        return None

    def db_for_write(self, model, **hints):
        if model._meta.app_label == APP_LABEL:
            return _shard_of(hints) or db.home_alias()
        return None

    def allow_relation(self, obj1, obj2, **hints):
        labels = {obj1._meta.app_label, obj2._meta.app_label}
        if labels == {APP_LABEL}:
            return True
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        settings = conf.get()
        queue_db = settings.DATABASE
        if app_label == APP_LABEL:
            return db == queue_db or db in settings.SHARDS
        if db == queue_db and queue_db != "default" or db in settings.SHARDS:
            return False  # the queue's own database (and a shard's) holds the queue only
        return None
