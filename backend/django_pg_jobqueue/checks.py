"""System checks that look past a setting's own value, at what it names (conf.py checks each
value's form, E001 and up):

    E104  TASKS names this package's QueueBackend where Django has no Tasks framework (Django
          5.2 without the django-tasks backport): nothing would read TASKS, and every task
          would stay unrun, silently;
    E402  a JOB_API_CREATABLE_TYPES entry no handler registers: the API would refuse it as
          unknown, while the setting says it may be created;
    E403  a JOB_API_CREATABLE_TASKS entry that does not import as a Django task;
    E404  JOB_READ_DATABASE is set but DATABASE_ROUTERS lacks JobQueueRouter, or names
          JOB_DATABASE itself: the API's raw reads would go to the replica and its model reads
          to the primary, one page mixing two moments;
    E405  JOB_SHARDS is set but DATABASE_ROUTERS lacks JobQueueRouter: the queue's models
          (the API's pages, the admin) would read and write the default database whatever
          a job's shard;
    E406  JOB_SHARDS with JOB_TRANSACTION_POOLER and LISTEN: JOB_LISTEN_DATABASE_URL is one
          direct connection, to JOB_DATABASE; a shard's workers would listen through the
          pooler (not supported yet);
    W401  a cache in CACHES is Django's database cache and its table does not exist: every
          read of that cache fails, the login throttle's among them (the admin's login answers
          500). A warning, not an error, so that `migrate` (which runs the checks) still runs
          before `createcachetable`; it queries the database only when a database cache is
          configured, and says nothing when the database cannot be reached.
"""
import importlib.util

import django
from django.conf import settings
from django.core import checks
from django.utils.module_loading import import_string

from . import conf
from .registry import registry

TASKS_BACKEND_PREFIX = "django_pg_jobqueue."
ROUTER = "django_pg_jobqueue.routers.JobQueueRouter"
DATABASE_CACHE = "django.core.cache.backends.db.DatabaseCache"


def tasks_framework_available() -> bool:
    """Django 6.0 and newer has django.tasks; Django 5.2 has it through the backport only."""
    return django.VERSION >= (6, 0) or importlib.util.find_spec("django_tasks") is not None


@checks.register("django_pg_jobqueue")
def check_tasks_framework(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    tasks = getattr(settings, "TASKS", None)
    if not isinstance(tasks, dict) or tasks_framework_available():
        return []
    return [checks.Error(
        f"TASKS[{alias!r}] names {entry['BACKEND']}, but Django {django.get_version()} has no "
        "Tasks framework without the django-tasks backport: nothing reads TASKS, and no task "
        "can be enqueued to this queue.",
        hint="pip install 'django-pg-jobqueue[tasks]' (the backport), or upgrade to Django 6.0 "
             "or newer, whose django.tasks is built in.",
        obj="TASKS", id="django_pg_jobqueue.E104")
        for alias, entry in tasks.items()
        if isinstance(entry, dict)
        and str(entry.get("BACKEND", "")).startswith(TASKS_BACKEND_PREFIX)]


@checks.register("django_pg_jobqueue")
def check_read_database(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    values = conf.configured()
    replica = values.get("READ_DATABASE", "")
    if not replica or conf.read_database_alias(replica) is not None:
        return []  # unset, or malformed (conf's own check says so)
    routers = _routers()
    if replica == values.get("DATABASE", "default"):
        problem = (f"JOB_READ_DATABASE names {replica!r}, which is JOB_DATABASE itself.",
                   "Name the alias of a streaming replica of JOB_DATABASE, or leave it empty.")
    elif ROUTER not in routers:
        problem = ("JOB_READ_DATABASE is set but DATABASE_ROUTERS does not list "
                   "JobQueueRouter: the API's model reads would stay on JOB_DATABASE while "
                   "its other reads go to the replica.",
                   f'DATABASE_ROUTERS = ["{ROUTER}"] (before routers of your own).')
    else:
        return []
    return [checks.Error(problem[0], hint=problem[1], obj="JOB_READ_DATABASE",
                         id="django_pg_jobqueue.E404")]


def _routers() -> list[str]:
    return [r if isinstance(r, str) else f"{type(r).__module__}.{type(r).__name__}"
            for r in getattr(settings, "DATABASE_ROUTERS", [])]


@checks.register("django_pg_jobqueue")
def check_shards(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    values = conf.configured()
    shards = values.get("SHARDS", {})
    if not shards or conf.shard_map(shards) is not None:
        return []  # unset, or malformed (conf's own check, E122, says so)
    found: list[checks.CheckMessage] = []
    if ROUTER not in _routers():
        found.append(checks.Error(
            "JOB_SHARDS is set but DATABASE_ROUTERS does not list JobQueueRouter: the "
            "queue's models would read and write one database whatever a job's shard, and "
            "`migrate --database <shard>` would not create the queue's tables there.",
            hint=f'DATABASE_ROUTERS = ["{ROUTER}"] (before routers of your own).',
            obj="JOB_SHARDS", id="django_pg_jobqueue.E405"))
    if values.get("TRANSACTION_POOLER") and values.get("LISTEN_NOTIFY", True):
        found.append(checks.Error(
            "JOB_SHARDS with JOB_TRANSACTION_POOLER: JOB_LISTEN_DATABASE_URL reaches "
            "JOB_DATABASE only, and a shard's workers cannot LISTEN through the pooler.",
            hint="Set JOB_LISTEN_NOTIFY = False (the workers poll), or leave the pooler "
                 "out of the shards' connections.",
            obj="JOB_SHARDS", id="django_pg_jobqueue.E406"))
    return found


@checks.register("django_pg_jobqueue")
def check_creatable(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Every type JOB_API_CREATABLE_TYPES lists has a handler, and every path
    JOB_API_CREATABLE_TASKS lists is a Django task (a malformed list is conf's E051/E052)."""
    values = conf.configured()
    types = values.get("API_CREATABLE_TYPES", ())
    tasks = values.get("API_CREATABLE_TASKS", ())
    found: list[checks.CheckMessage] = []
    if conf.job_type_list(types) is None:
        found.extend(checks.Error(
            f"JOB_API_CREATABLE_TYPES lists {name!r}, and no handler registers that job type: "
            "the API would refuse it as unknown.",
            hint="Register it with @handler in an installed app's handlers.py (or a module of "
                 "JOB_EXTRA_HANDLER_MODULES), or remove it from the list. Registered: "
                 + (", ".join(repr(s.name) for s in registry.all()
                             if s.name != conf.DJANGO_TASK_TYPE) or "none") + ".",
            obj="JOB_API_CREATABLE_TYPES", id="django_pg_jobqueue.E402")
            for name in types if name not in registry)
    if conf.task_path_list(tasks) is None:
        found.extend(checks.Error(
            f"JOB_API_CREATABLE_TASKS lists {path!r}: {problem}",
            hint="List each task by its module_path, e.g. 'myapp.tasks.send_welcome' for "
                 "@task def send_welcome in myapp/tasks.py.",
            obj="JOB_API_CREATABLE_TASKS", id="django_pg_jobqueue.E403")
            for path in tasks if (problem := _task_problem(path)))
    return found


def _task_problem(path: str) -> str | None:
    """What keeps `path` from being a Django task, in words; None when it is one."""
    if not tasks_framework_available():
        return "Django tasks need Django 6.0 or newer, or the django-tasks backport."
    from .tasks_compat import Task  # here, where the framework is known to be there

    try:
        obj = import_string(path)
    except ImportError as exc:
        return f"it does not import ({exc})."
    if not isinstance(obj, Task):
        return "it is not a Django task (decorate the function with @task)."
    return None


@checks.register(checks.Tags.caches)
def check_cache_tables(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    from django.core.cache import caches
    from django.db import DatabaseError, connections, router

    caches_setting = getattr(settings, "CACHES", None)
    if not isinstance(caches_setting, dict):
        return []
    found: list[checks.CheckMessage] = []
    for alias, entry in caches_setting.items():
        if not isinstance(entry, dict) or entry.get("BACKEND") != DATABASE_CACHE:
            continue
        cache = caches[alias]
        using = router.db_for_write(cache.cache_model_class)
        try:
            with connections[using].cursor() as cursor:
                exists = cache._table in connections[using].introspection.table_names(cursor)
        except (DatabaseError, RuntimeError):
            # No database to ask (not created yet, unreachable, or a test without database
            # access): the database's own errors say so better than this check.
            return []
        if not exists:
            throttle = ("; the login throttle counts in it (JOB_THROTTLE_CACHE), so every "
                        "login it guards answers 500") if alias == getattr(
                settings, "JOB_THROTTLE_CACHE", conf.default("JOB_THROTTLE_CACHE")) else ""
            found.append(checks.Warning(
                f"CACHES[{alias!r}] is Django's database cache and its table "
                f"{cache._table!r} does not exist in DATABASES[{using!r}]: every read and "
                f"write of the cache fails{throttle}.",
                hint="Run `python manage.py createcachetable` (after `migrate`).",
                obj="CACHES", id="django_pg_jobqueue.W401"))
    return found
