"""Periodic jobs: cron schedules, each tick enqueued exactly once however many workers run.

Declare entries in settings (or the JOB_PERIODIC environment variable, as JSON):

    JOB_PERIODIC = {
        "nightly-report": {"cron": "0 3 * * *", "timezone": "Europe/Paris",
                           "type": "report_generate", "payload": {"pages": 20}},
        "cleanup": {"cron": "*/15 * * * *", "task": "myapp.tasks.cleanup", "kwargs": {"days": 7}},
    }

or with the decorator, on a `@handler` function or a Django `@task` (in an app's
`handlers.py` or `tasks.py`, which are imported at start-up):

    @periodic(cron="0 * * * *", timezone="America/New_York")
    @handler("hourly_digest")
    def hourly_digest(ctx, payload): ...

Cron expressions are parsed by croniter (five fields, or six with seconds last) in the entry's
time zone (IANA name, default UTC), so "0 9 * * *" in Europe/Paris follows daylight saving.

This module declares (entries, their ticks and keys, the schedule as the console shows it);
services/schedules.py enqueues a tick; worker/periodic.py is the thread that does it.

Exactly once: every worker process runs a `PeriodicEnqueuer`; each enqueues the ticks that
are due with the idempotency key `periodic:<name>:<tick in UTC, ISO 8601>`. The unique index
on the key lets one insert win and turns the others into no-ops: no leader to elect or lose.

Missed ticks: while no worker runs, nothing is enqueued. When a worker process starts, it
enqueues only the latest tick that is due (if no other process did), never the backlog: a
schedule that missed a night of hourly ticks runs once on start-up, not eight times. While it
runs, a process enqueues every tick since its previous pass (so a slow pass skips nothing),
unless more than `MAX_CATCH_UP` are due at once (after a database outage): then, again, only
the latest.
"""
import logging
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone as dj_timezone
from django.utils.module_loading import import_string

from .compat import UTC
from .exceptions import ScheduleNotFound
from .registry import registry
from .states import PRIORITY_MAX, PRIORITY_MIN

log = logging.getLogger("django_pg_jobqueue.periodic")

MAX_CATCH_UP = 10  # ticks one pass enqueues at most; beyond that, only the latest
MAX_WAIT_SECONDS = 60.0  # a pass at least this often, so settings and clocks are re-read
KEY_PREFIX = "periodic"
MANUAL = "manual"  # a run-now job's key: periodic:<name>:manual:<random> (services/schedules.py)


@dataclass(frozen=True)
class PeriodicEntry:
    """One schedule: what to enqueue (a job `type` or a Django `task` path) and when."""

    name: str
    cron: str
    timezone: str = "UTC"
    type: str | None = None  # a registered job type ...
    task: str | None = None  # ... or the module path of a Django @task
    payload: dict = field(default_factory=dict)  # for `type`
    args: list = field(default_factory=list)  # for `task`
    kwargs: dict = field(default_factory=dict)  # for `task`
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    timeout_seconds: int | None = None
    source: str = "settings"  # or "decorator"

    # -- validation --------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """What is wrong with this entry, in words; [] when it can run."""
        out = []
        if not self.name or len(self.name) > 100 or ":" in self.name:
            out.append("the name must have 1 to 100 characters and no ':'")
        if not isinstance(self.cron, str) or not croniter.is_valid(self.cron):
            out.append(f"invalid cron expression {self.cron!r}")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            out.append(f"unknown time zone {self.timezone!r}")
        if (self.type is None) == (self.task is None):
            out.append("give exactly one of 'type' (a job type) or 'task' (a Django task path)")
        elif self.type is not None and self.type not in registry:
            out.append(f"no handler is registered for job type {self.type!r}")
        elif self.task is not None:
            try:
                self.load_task()
            except (ImportError, ValueError) as exc:
                out.append(str(exc))
        if not isinstance(self.payload, dict):
            out.append("'payload' must be an object")
        if not isinstance(self.args, list | tuple) or not isinstance(self.kwargs, dict):
            out.append("'args' must be a list and 'kwargs' an object")
        if self.priority is not None and not (
                isinstance(self.priority, int) and not isinstance(self.priority, bool)
                and PRIORITY_MIN <= self.priority <= PRIORITY_MAX):
            out.append(f"'priority' must be a whole number between {PRIORITY_MIN} and "
                       f"{PRIORITY_MAX}")
        return out

    def load_task(self):
        # The Tasks framework may be absent (Django 5.2 without the backport): imported here.
        from .tasks.options import QueueTask
        from .tasks_compat import Task

        try:
            task = import_string(self.task)
        except ImportError as exc:
            raise ImportError(f"cannot import task {self.task!r}: {exc}") from exc
        if not isinstance(task, Task):
            raise ValueError(f"{self.task!r} is not a Django task (decorate it with @task)")
        if not isinstance(task, QueueTask):
            raise ValueError(f"task {self.task!r} does not use django_pg_jobqueue.tasks_backend.QueueBackend, "
                             "so its ticks could not be enqueued exactly once")
        return task

    # -- ticks -------------------------------------------------------------------------------
    def _local(self, moment: datetime) -> datetime:
        return moment.astimezone(ZoneInfo(self.timezone))

    def latest_tick(self, now: datetime) -> datetime:
        """The latest tick at or before `now` (UTC)."""
        it = croniter(self.cron, self._local(now) + timedelta(microseconds=1))
        return it.get_prev(datetime).astimezone(UTC)

    def next_tick(self, now: datetime) -> datetime:
        """The first tick strictly after `now` (UTC)."""
        return croniter(self.cron, self._local(now)).get_next(datetime).astimezone(UTC)

    def ticks_between(self, after: datetime, until: datetime, limit: int) -> list[datetime]:
        """Ticks in (after, until], at most `limit` + 1 of them (the caller checks the limit)."""
        it = croniter(self.cron, self._local(after))
        out = []
        while len(out) <= limit:
            tick = it.get_next(datetime).astimezone(UTC)
            if tick > until:
                break
            out.append(tick)
        return out

    def key(self, tick: datetime) -> str:
        return f"{KEY_PREFIX}:{self.name}:{tick.astimezone(UTC).isoformat()}"

    def manual_key(self) -> str:
        """A run-now job's key: `periodic:<name>:manual:<random>`, new for every run."""
        return f"{KEY_PREFIX}:{self.name}:{MANUAL}:{uuid.uuid4().hex}"


# -- the declared entries ---------------------------------------------------------------------
_declared: dict[str, PeriodicEntry] = {}
_discovered = False


def periodic(cron: str, *, timezone: str = "UTC", name: str | None = None,
             payload: dict | None = None, args: list | None = None, kwargs: dict | None = None,
             queue: str | None = None, priority: int | None = None,
             max_attempts: int | None = None, timeout_seconds: int | None = None):
    """Run the decorated `@handler` function or Django `@task` on a cron schedule.

    Put it above `@handler(...)` / `@task(...)`. `name` defaults to the job type, or to the
    task's module path. Invalid entries are reported by `manage.py check` (django_pg_jobqueue.E201)."""

    def decorate(obj):
        try:
            from .tasks_compat import Task
        except ImportError:  # no Tasks framework (Django 5.2 without the backport): no task
            Task = None

        common = dict(cron=cron, timezone=timezone, queue=queue, priority=priority,
                      max_attempts=max_attempts, timeout_seconds=timeout_seconds,
                      source="decorator")
        if Task is not None and isinstance(obj, Task):
            entry = PeriodicEntry(name=name or obj.module_path, task=obj.module_path,
                                  args=list(args or []), kwargs=dict(kwargs or {}), **common)
        else:
            spec = next((s for s in registry.all() if s.func is obj), None)
            if spec is None:
                raise ImproperlyConfigured(
                    f"@periodic goes above @handler(...) or @task(...); {obj!r} is neither")
            entry = PeriodicEntry(name=name or spec.name, type=spec.name,
                                  payload=dict(payload or {}), **common)
        _declared[entry.name] = entry
        return obj

    return decorate


def _discover() -> None:
    """Import every installed app's handlers.py and tasks.py, where decorated entries live."""
    global _discovered
    if not _discovered:
        from django.utils.module_loading import autodiscover_modules

        autodiscover_modules("handlers", "tasks")
        _discovered = True


_ENTRY_KEYS = {"cron", "timezone", "type", "task", "payload", "args", "kwargs", "queue",
               "priority", "max_attempts", "timeout_seconds"}


def entries() -> list[PeriodicEntry]:
    """Every schedule: settings.JOB_PERIODIC, then decorated ones. Raises
    ImproperlyConfigured for a malformed settings entry or a name declared twice."""
    _discover()
    configured = getattr(settings, "JOB_PERIODIC", None) or {}
    if not isinstance(configured, dict):
        raise ImproperlyConfigured("JOB_PERIODIC must be a dict: {name: {cron: ..., type: ...}}")
    out: dict[str, PeriodicEntry] = {}
    for name, spec in configured.items():
        if not isinstance(spec, dict) or "cron" not in spec:
            raise ImproperlyConfigured(f"JOB_PERIODIC[{name!r}] must be a dict with a 'cron'")
        unknown = set(spec) - _ENTRY_KEYS
        if unknown:
            raise ImproperlyConfigured(
                f"JOB_PERIODIC[{name!r}]: unknown keys {sorted(unknown)}; "
                f"expected some of {sorted(_ENTRY_KEYS)}")
        out[name] = PeriodicEntry(name=name, **spec)
    for name, entry in _declared.items():
        if name in out:
            raise ImproperlyConfigured(
                f"periodic entry {name!r} is declared both in JOB_PERIODIC and with @periodic")
        out[name] = entry
    return sorted(out.values(), key=lambda e: e.name)


def entry(name: str) -> PeriodicEntry:
    """The declared entry named `name`; ScheduleNotFound when none is."""
    for found in entries():
        if found.name == name:
            return found
    raise ScheduleNotFound(name)


@checks.register("django_pg_jobqueue")
def check_periodic(app_configs=None, **kwargs):
    try:
        found = entries()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="django_pg_jobqueue.E200")]
    return [
        checks.Error(f"periodic entry {e.name!r}: {problem}", id="django_pg_jobqueue.E201")
        for e in found for problem in e.problems()
    ]


# -- the selector for the API -------------------------------------------------------------------
def schedule(now: datetime | None = None) -> list[dict]:
    """Each entry with its next run and its latest due tick's job (None if not enqueued):
    when that job ran (started_at, finished_at) apart from the tick's time (last_tick_at).

    [{"name", "cron", "timezone", "type", "task", "payload", "args", "kwargs", "queue",
      "priority", "max_attempts", "timeout_seconds", "source", "valid", "problems", "paused",
      "next_run_at", "last_tick_at",
      "last_job": {"id", "status", "started_at", "finished_at"} | None}, ...]
    """
    from .models import Job, ScheduleSetting  # @periodic is imported before the models load

    now = now or dj_timezone.now()
    rows, by_key = [], {}
    paused = set(ScheduleSetting.objects.filter(paused=True).values_list("name", flat=True))
    for entry in entries():
        problems = entry.problems()
        row = {**asdict(entry), "valid": not problems, "problems": problems,
               "paused": entry.name in paused,
               "next_run_at": None, "last_tick_at": None, "last_job": None}
        if not any(p.startswith(("invalid cron", "unknown time zone")) for p in problems):
            row["next_run_at"] = entry.next_tick(now)
            row["last_tick_at"] = entry.latest_tick(now)
            by_key[entry.key(row["last_tick_at"])] = row
        rows.append(row)
    for key, job_id, status, started_at, finished_at in Job.objects.filter(
            idempotency_key__in=list(by_key)).values_list(
            "idempotency_key", "id", "status", "started_at", "finished_at"):
        by_key[key]["last_job"] = {"id": job_id, "status": status, "started_at": started_at,
                                   "finished_at": finished_at}
    return rows


def paused_names() -> set[str]:
    """The schedules an operator paused (services/schedules.py)."""
    from .models import ScheduleSetting  # @periodic is imported before the models load

    return set(ScheduleSetting.objects.filter(paused=True).values_list("name", flat=True))
