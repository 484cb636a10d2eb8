"""The catalogue: what the code and the settings declare, read by everything above it.

- the queues that exist (`declared_queues`: handlers, Tasks backends, schedules;
  `queue_exists`: declared, holding jobs, or with a setting), which the operator's writes and
  the API's bounds check against;
- the job types (`job_types`: registered handlers and Django tasks, with the defaults a job of
  each gets and whether the API may create it; `creatable_types`);
- the rate limits in force (`rate_limits_in_force`: JOB_RATE_LIMITS, and over them those set
  at run time), and which of those names a key comes under (`key_match`: the rate limits'
  keys and the fair queues' weights).

It reads the registry, the task options and the periodic declarations, and counts rows; it
writes nothing.
"""
from collections.abc import Iterable

from django.conf import settings

from . import conf, periodic
from .models import Job, QueueSetting, RateLimit
from .registry import registry


def declared_queues() -> set[str]:
    """The queues named by the code and the settings: handlers, Tasks backends, schedules."""
    names = {spec.queue for spec in registry.all() if spec.queue}
    for alias in getattr(settings, "TASKS", {}) or {}:
        config = settings.TASKS[alias]
        if isinstance(config, dict) and str(config.get("BACKEND", "")).startswith("django_pg_jobqueue."):
            queues = config.get("QUEUES") or []
            if isinstance(queues, (list, tuple)):
                names.update(q for q in queues if isinstance(q, str))
    try:
        names.update(e.queue for e in periodic.entries() if isinstance(e.queue, str))
    except Exception:  # noqa: BLE001, S110 - a malformed JOB_PERIODIC is its own check's to report
        pass
    return names


def queue_exists(queue: str, *, setting_counts: bool = True) -> bool:
    """Whether `queue` holds jobs, is declared (`declared_queues`), or has a setting."""
    return (queue in declared_queues()
            or Job.objects.filter(queue=queue).exists()
            or setting_counts and QueueSetting.objects.filter(queue=queue).exists())


def job_types() -> list[dict]:
    """The registered handler types with the defaults a job of that type gets, and whether
    the API may create it (JOB_API_CREATABLE_TYPES; django_task: JOB_API_CREATABLE_TASKS,
    its example payload then the first listed task)."""
    settings = conf.get()
    types = []
    for spec in registry.all():
        example = spec.payload_example
        if spec.name == conf.DJANGO_TASK_TYPE:
            creatable = bool(settings.API_CREATABLE_TASKS)
            if creatable:
                example = {"task": settings.API_CREATABLE_TASKS[0], "args": [], "kwargs": {},
                           "backend": "default"}
        else:
            creatable = spec.name in settings.API_CREATABLE_TYPES
        types.append({
            "name": spec.name,
            "description": spec.description,
            "queue": spec.queue or "default",
            "priority": spec.priority,
            "max_attempts": spec.max_attempts or settings.DEFAULT_MAX_ATTEMPTS,
            "timeout_seconds": spec.timeout_seconds or settings.DEFAULT_TIMEOUT_SECONDS,
            "payload_example": example,
            "creatable": creatable,
        })
    return types + _task_types(settings)


def _task_types(settings) -> list[dict]:
    """Django tasks as job types (their jobs are typed by the task's path): the tasks this
    process has loaded and those the API may create, with their @task_options defaults."""
    task_spec = registry.get(conf.DJANGO_TASK_TYPE)
    if task_spec is None:  # no Tasks backend here
        return []
    # Here, where the framework is known to be there: Django 5.2 without the backport has none,
    # and the task options subclass its Task.
    from .tasks import options

    paths = sorted({p for p in (*options.known_task_paths(), *settings.API_CREATABLE_TASKS)
                    if options.task_job_type(p) == p and p not in registry})
    types = []
    for path in paths:
        task = options.known_task(path)
        declared = options.declared_options(path)
        description = ((getattr(task.func, "__doc__", None) or "").strip().split("\n")[0]
                       if task is not None else "")
        types.append({
            "name": path,
            "description": description or "A Django task.",
            "queue": task.queue_name if task is not None else "default",
            "priority": task.priority if task is not None else 0,
            "max_attempts": (declared and declared.max_attempts) or settings.DEFAULT_MAX_ATTEMPTS,
            "timeout_seconds": ((declared and declared.timeout_seconds)
                                or settings.DEFAULT_TIMEOUT_SECONDS),
            "payload_example": {"task": path, "args": [], "kwargs": {}, "backend": "default"},
            "creatable": path in settings.API_CREATABLE_TASKS,
        })
    return types


# A rate limit: (kind: "queue", "type" or "key", name or key pattern, max_starts, period_seconds).
RateLimitRow = tuple[str, str, int, float]


def rate_limits_in_force() -> list[RateLimitRow]:
    """The rate limits in force now (conf's rate_limits_in_force), read afresh (the claim
    caches them a second)."""
    return conf.get().rate_limits_in_force(
        RateLimit.objects.values_list("kind", "name", "max_starts", "period_seconds"))


def creatable_types() -> list[str]:
    """The job types the API may create (what GET /api/v1/job-types/ marks creatable)."""
    return [t["name"] for t in job_types() if t["creatable"]]


def key_match(key: str, names: Iterable[str]) -> str | None:
    """Which of `names` a key comes under, as the claim picks it (sql.key_match: the fair
    claim's weights, the rate limits' keys): `key` itself, else the longest prefix (a name
    ending in `*`, `customer:*`) it starts with; None when none does."""
    names = list(names)
    if key in names:
        return key
    return max((n for n in names if n.endswith("*") and key.startswith(n[:-1])), key=len,
               default=None)


def limit_for(kind: str, name: str, limits: list[RateLimitRow]) -> RateLimitRow | None:
    """The limit of a queue or type named `name`, or of the key `name` (`key_match`)."""
    if kind != "key":
        return next((r for r in limits if r[0] == kind and r[1] == name), None)
    keyed = [r for r in limits if r[0] == "key"]
    match = key_match(name, (r[1] for r in keyed))
    return next((r for r in keyed if r[1] == match), None)
