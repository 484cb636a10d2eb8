"""Every JOB_* setting: its type, default, allowed values and documentation, defined once.

Each field of `QueueConf` is one setting (`LEASE_SECONDS` is `JOB_LEASE_SECONDS`). Its
metadata holds what the docs' settings reference is rendered from (`doc`, `group`) and what
`manage.py check` validates (`rule`, `check_id`). The queue reads its settings only through
`get()`, which raises ImproperlyConfigured on a bad value; `check_settings` (registered as a
system check when this module is imported, which the app's `ready()` does) reports every
bad value at once as a `django_pg_jobqueue.E0xx` error. Tests change settings with
`override_settings`, which clears `get()`'s cache.
"""
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cache

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from .durations import parse_retention
from .states import (
    MAX_DELAY_SECONDS,
    MAX_QUEUE_NAME_LENGTH,
    MAX_RATE_WEIGHT,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_RE,
    RATE_LIMIT_KINDS,
    rate_limit_problem,
)

PREFIX = "JOB_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")
RATE_PATTERN = re.compile(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)")
MAX_ATTEMPTS_LIMIT = 1000  # the API's limit on max_attempts
MAX_TIMEOUT_SECONDS = 30 * 86400  # the API's limit on timeout_seconds
DJANGO_TASK_TYPE = "django_task"  # the job type of Django tasks (tasks_backend.JOB_TYPE)


# --- rules: each returns None when the value is allowed, else what is allowed -----------------
Rule = Callable[[object], str | None]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(minimum: float, *, above: bool = False, maximum: float | None = None,
           none: str | None = None) -> Rule:
    """A finite int or float >= minimum (> minimum with above=True), at most maximum; None
    too when `none` says what None means."""
    bound = f"greater than {minimum:g}" if above else f"at least {minimum:g}"
    if maximum is not None:
        bound += f" and at most {maximum:g}"
    if none:
        bound += f", or None ({none})"

    def rule(value):
        if value is None and none:
            return None
        ok = _is_number(value) and (value > minimum if above else value >= minimum)
        if ok and (maximum is None or value <= maximum):
            return None
        return f"a number (int or float) {bound}"

    return rule


def whole(minimum: int, *, maximum: int | None = None, none: str | None = None) -> Rule:
    """An int >= minimum (at most maximum); None too when `none` says what None means."""
    allowed = f"a whole number (int) at least {minimum}"
    if maximum is not None:
        allowed += f" and at most {maximum}"
    if none:
        allowed += f", or None ({none})"

    def rule(value):
        if value is None and none:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum and (
                maximum is None or value <= maximum):
            return None
        return allowed

    return rule


def boolean(value) -> str | None:
    return None if isinstance(value, bool) else "True or False (a bool)"


def text(value) -> str | None:
    return None if isinstance(value, str) else "a string"


def one_of(*choices: str) -> Rule:
    def rule(value):
        return None if value in choices else "one of " + ", ".join(repr(c) for c in choices)

    return rule


def rate(value) -> str | None:
    if isinstance(value, str) and RATE_PATTERN.fullmatch(value):
        return None
    return "a rate such as '600/min': a whole number, '/', then s, min, hour or day"


def retention(value) -> str | None:
    from datetime import timedelta

    if value is None or isinstance(value, (str, timedelta)) or _is_number(value):
        try:
            parse_retention(value)
            return None
        except ValueError:
            pass
    return ("a duration such as '90s', '15m', '12h', '7d' or '2w' (or seconds as a number, or "
            "a timedelta), or '', 'off' or None to keep the jobs forever")


def module_list(value) -> str | None:
    if isinstance(value, (list, tuple)) and all(
            isinstance(m, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", m) for m in value):
        return None
    return ("a list of dotted module paths, e.g. ['django_pg_jobqueue.builtin_handlers'] "
            "(a list, not one comma-separated string)")


def callable_paths(value) -> str | None:
    if isinstance(value, (list, tuple)) and all(
            isinstance(m, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", m) for m in value):
        return None
    return "a list of dotted paths to callables, e.g. ['myproject.jobs.tenant_middleware']"


def job_type_list(value) -> str | None:
    if isinstance(value, (list, tuple)) and all(
            isinstance(t, str) and 0 < len(t) <= 100 for t in value):
        if DJANGO_TASK_TYPE in value:
            return (f"a list of job type names without {DJANGO_TASK_TYPE!r}: Django tasks are "
                    "opened to the API one by one, by their paths in JOB_API_CREATABLE_TASKS")
        return None
    return ("a list of job type names, e.g. ['email_send', 'report_generate'] (a list, not one "
            "comma-separated string)")


def queue_list(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and all(
            isinstance(q, str) and 0 < len(q) <= MAX_QUEUE_NAME_LENGTH and QUEUE_NAME_RE.fullmatch(q)
            for q in value):
        return None
    return ("a list of queue names, e.g. ['default', 'reports'] (a list, not one "
            "comma-separated string), or None (the queues that exist)")


def task_path_list(value) -> str | None:
    if isinstance(value, (list, tuple)) and all(
            isinstance(m, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", m) for m in value):
        return None
    return ("a list of Django task paths, each the task's module_path "
            "(e.g. ['myapp.tasks.send_welcome'])")


def rate_limit_list(value) -> str | None:
    """A list of rate limits, each {"queue"|"type"|"key": name, "max_starts": n,
    "period_seconds": s}."""
    allowed = ('a list of dicts, each naming one "queue", "type" or "key" (a key or a prefix '
               'ending in "*") with "max_starts" and "period_seconds"')
    if not isinstance(value, (list, tuple)):
        return allowed
    for entry in value:
        kinds = [k for k in RATE_LIMIT_KINDS if isinstance(entry, dict) and k in entry]
        if (not isinstance(entry, dict) or len(kinds) != 1
                or set(entry) != {kinds[0], "max_starts", "period_seconds"}):
            return f"{allowed}; not {entry!r}"
        problem = rate_limit_problem(kinds[0], entry[kinds[0]], entry["max_starts"],
                                     entry["period_seconds"])
        if problem is not None:
            return f"{allowed}; in {entry!r}, {problem[0]} must be {problem[1]}"
    return None


def rate_weight_map(value) -> str | None:
    if isinstance(value, dict) and all(
            isinstance(t, str) and isinstance(w, int) and not isinstance(w, bool)
            and 1 <= w <= MAX_RATE_WEIGHT for t, w in value.items()):
        return None
    return f"a dict of job type names to whole numbers from 1 to {MAX_RATE_WEIGHT}"


def conninfo(value) -> str | None:
    """'' (not set), or a libpq connection string or URL that psycopg can parse."""
    if value == "":
        return None
    if isinstance(value, str):
        import psycopg

        try:
            psycopg.conninfo.conninfo_to_dict(value)
            return None
        except psycopg.ProgrammingError:
            pass
    return ("'' or a PostgreSQL connection URL (postgres://user@host:5432/dbname) or libpq "
            "connection string (host=... dbname=...)")


def database_alias(value) -> str | None:
    """An alias of DATABASES."""
    aliases = list(getattr(settings, "DATABASES", {}))
    if isinstance(value, str) and value in aliases:
        return None
    return "an alias of DATABASES: " + ", ".join(repr(a) for a in aliases)


def read_database_alias(value) -> str | None:
    """An alias of DATABASES, or empty for none."""
    if value == "":
        return None
    problem = database_alias(value)
    return problem and f"{problem}, or '' (reads stay on JOB_DATABASE)"


# Shards by queue (JOB_SHARDS): a shard's number is the top bits of its jobs' ids, so that an
# id names its shard without a lookup (shards.py). Ids are below 2**53 (a JavaScript number
# holds them exactly): 44 bits of id per shard, shard numbers 1 to 511 (0 is JOB_DATABASE).
SHARD_ID_BITS = 44
MAX_SHARD_NUMBER = (2**53 - 1) >> SHARD_ID_BITS


def shard_patterns_overlap(a: str, b: str) -> bool:
    """Whether a queue name could match both patterns (a name, or a prefix ending in "*")."""
    if a.endswith("*") and b.endswith("*"):
        return a[:-1].startswith(b[:-1]) or b[:-1].startswith(a[:-1])
    if a.endswith("*"):
        return b.startswith(a[:-1])
    if b.endswith("*"):
        return a.startswith(b[:-1])
    return a == b


def _shard_pattern_ok(pattern) -> bool:
    name = pattern[:-1] if isinstance(pattern, str) and pattern.endswith("*") else pattern
    return isinstance(name, str) and len(name) <= MAX_QUEUE_NAME_LENGTH and (
        name == "" and pattern == "*" or QUEUE_NAME_RE.fullmatch(name) is not None)


def shard_map(value) -> str | None:
    """{alias: {"number": n, "queues": [name or "prefix*", ...]}}: each alias in DATABASES
    and not JOB_DATABASE, numbers distinct, no queue name matched by two shards."""
    allowed = ('a dict of DATABASES aliases to {"number": 1 to '
               f'{MAX_SHARD_NUMBER}, "queues": [queue names, or prefixes ending in "*"]}}')
    if not isinstance(value, dict):
        return allowed
    aliases = getattr(settings, "DATABASES", {})
    home = getattr(settings, PREFIX + "DATABASE", "default")
    numbers: dict[int, str] = {}
    patterns: list[tuple[str, str]] = []
    for alias, entry in value.items():
        if alias not in aliases:
            return f"{allowed}; {alias!r} is not an alias of DATABASES"
        if alias == home:
            return (f"{allowed}; {alias!r} is JOB_DATABASE, which holds every queue no shard "
                    "names")
        if not isinstance(entry, dict) or set(entry) != {"number", "queues"}:
            return f"{allowed}; not {entry!r} for {alias!r}"
        number, queues = entry["number"], entry["queues"]
        if (not isinstance(number, int) or isinstance(number, bool)
                or not 1 <= number <= MAX_SHARD_NUMBER):
            return f"{allowed}; {alias!r} has number {number!r}"
        if number in numbers:
            return f"{allowed}; {alias!r} and {numbers[number]!r} both have number {number}"
        numbers[number] = alias
        # No queue: a shard being retired, kept for the jobs it still holds (found by id).
        if (not isinstance(queues, (list, tuple))
                or not all(_shard_pattern_ok(q) for q in queues)):
            return f"{allowed}; {alias!r} has queues {queues!r}"
        for pattern in queues:
            for other_alias, other in patterns:
                if other_alias != alias and shard_patterns_overlap(pattern, other):
                    return (f"{allowed}; {pattern!r} of {alias!r} and {other!r} of "
                            f"{other_alias!r} overlap: a queue would belong to both")
            patterns.append((alias, pattern))
    return None


def cache_alias(value) -> str | None:
    if isinstance(value, str) and value in getattr(settings, "CACHES", {}):
        return None
    known = ", ".join(repr(a) for a in getattr(settings, "CACHES", {})) or "none"
    return f"the alias of a cache in CACHES (a str; CACHES has {known})"


def setting(default, *, check_id: int | None, rule: Rule | None, group: str, doc: str,
            type_doc: str | None = None, **kwargs):
    """A QueueConf field: its default and the metadata the check and the docs read
    (`type_doc`: the type as the reference shows it, when the annotation says too little)."""
    metadata = {"check_id": None if check_id is None else f"django_pg_jobqueue.E{check_id:03d}",
                "rule": rule, "group": group,
                "doc": " ".join(doc.split()), "type_doc": type_doc}
    if callable(default):
        return field(default_factory=default, metadata=metadata, **kwargs)
    return field(default=default, metadata=metadata, **kwargs)


# Groups, in the order the reference shows them.
GROUPS = {
    "workers": "Workers",
    "retries": "Retries, timeouts and attempts",
    "producers": "Producers and periodic jobs",
    "api": "The REST API",
    "outcomes": "Results and errors",
    "retention": "Retention and pruning",
    "observability": "Logs, metrics and tracing",
    "database": "Databases and poolers",
}


@dataclass(frozen=True)
class QueueConf:
    # -- workers ---------------------------------------------------------------------------------
    LEASE_SECONDS: float = setting(30.0, check_id=1, rule=number(1), group="workers", doc="""
        How long a claim owns a job without renewal. Workers renew their leases every
        `min(lease / 3, 2 s)`; the jobs of a worker that died run again this long (plus up to
        one reaper interval) after it died. `run_job_workers --lease-seconds` overrides it.""")
    WORKER_THREADS: int = setting(4, check_id=2, rule=whole(1), group="workers", doc="""
        Executor threads per `run_job_workers` process (`--threads` overrides it). They hold
        no queue connection of their own: the worker's writes share its pool
        (JOB_WORKER_POOL_SIZE), and a handler's own queries open a connection only when it
        makes them (docs/how-to/scaling.md).""")
    POLL_INTERVAL_SECONDS: float = setting(1.0, check_id=3, rule=number(0, above=True),
                                           group="workers", doc="""
        How often an idle worker polls for due jobs when no NOTIFY wakes it: retries and
        delayed jobs become due without one.""")
    POLL_JITTER_SECONDS: float = setting(0.25, check_id=4, rule=number(0), group="workers", doc="""
        A random extra wait, up to this long, added to each idle poll so that workers spread
        out.""")
    POLL_INTERVAL_MAX_SECONDS: float = setting(5.0, check_id=90, rule=number(0, above=True),
                                               group="workers", doc="""
        The longest an idle worker waits between polls while its LISTEN connection is up. Each
        poll that finds nothing doubles the wait, from `JOB_POLL_INTERVAL_SECONDS` up to this;
        a job found by a poll or a backlog brings it back (one found on a notification leaves
        it: the notifications work). Jobs enqueued now wake workers by NOTIFY, and
        jobs that become due later (delayed jobs, retries) by the maintenance leader's stager,
        which notifies their queues every `JOB_POLL_INTERVAL_SECONDS`; so the wait bounds only
        what a lost notification can cost. Set it equal to `JOB_POLL_INTERVAL_SECONDS` to poll
        at one rate.""")
    RATE_LIMIT_POLL_SECONDS: float = setting(0.05, check_id=116, rule=number(0, above=True),
                                             group="workers", doc="""
        How often an idle lane claims again while a rate limit applies to its claims and it
        found jobs within the limit's longest period (docs/how-to/rate-limits.md): a full
        window holds jobs back without a notification saying when it frees, so the lane looks
        again this soon (plus a jitter up to half of it) rather than backing off. Each look is
        one claim under the limits' lock; a larger value costs fewer claims and leaves more of
        the allowed rate unused.""")
    FETCH_COOLDOWN_SECONDS: float = setting(0.25, check_id=93, rule=number(0), group="workers",
                                            doc="""
        How long a worker's lane waits before it claims again on a notification, after a claim
        on a notification found nothing (another process, or another host, had taken the
        job): the notifications meanwhile fold into one claim at its end. With many hosts
        woken by every job of a trickle, each claims at most once per cooldown instead of
        once per job. A lane whose claims find jobs never waits it, and a process of a
        supervisor that is cooling down passes a wake-up to another process of its host. 0
        turns it off.""")
    WAKE_JITTER_SECONDS: float | None = setting(
        None, check_id=94, rule=number(0, none="0.002 under a supervisor, 0 for a lone process"),
        group="workers", doc="""
        A random wait, up to this long, before a notified worker claims, so that the processes
        of several hosts woken by one job do not all claim in the same instant. It adds at most
        this much to the pickup of a job enqueued to idle workers. The default, None, is
        0.002 s for the children of `run_job_workers --processes N` and 0 for a lone
        `run_job_workers`, whose pickup it would slow for no claim it saves on its own; a
        number applies to every worker process (many hosts each running one process may set
        it); 0 turns it off.""")
    MAINTENANCE_LEADER: bool = setting(True, check_id=91, rule=boolean, group="workers", doc="""
        Run the maintenance loops (the reaper, the pruner with the partition manager, the
        periodic enqueuer and the stager) in one worker process per database, the leader,
        elected through a lease row in `job_leader` that the leader renews with its heartbeat;
        when it stops beating, another process takes over within
        `JOB_LEADER_LEASE_SECONDS`. False runs them in every process, as several at once do no
        harm (each takes its rows with SKIP LOCKED), only work.""")
    LEADER_LEASE_SECONDS: float | None = setting(
        None, check_id=92, rule=number(0.5, none="three heartbeats"), group="workers", doc="""
        How long the maintenance leader's lease lasts without a heartbeat renewing it. The
        default, three heartbeats, is `JOB_LEASE_SECONDS` capped at 6 s (the heartbeat comes
        every third of `JOB_LEASE_SECONDS`, at most every 2 s), so a killed leader's lease
        ends no later than the leases of the jobs it held: handing maintenance over never
        delays the reaping of its own jobs. A killed leader is replaced within this plus one
        heartbeat.""")
    LISTEN_NOTIFY: bool = setting(True, check_id=5, rule=boolean, group="workers", doc="""
        Wake idle workers with PostgreSQL's LISTEN/NOTIFY when a job is enqueued (on commit),
        and producers waiting for a job's outcome (`wait()`) when it finishes.
        Behind a transaction pooler, LISTEN needs the direct connection of
        `JOB_LISTEN_DATABASE_URL`; False makes the workers poll every
        `JOB_POLL_INTERVAL_SECONDS` instead, and waiters every half second.""")
    SHUTDOWN_GRACE_SECONDS: float = setting(25.0, check_id=6, rule=number(0), group="workers", doc="""
        On SIGTERM or SIGINT, how long running handlers may finish before their jobs are
        released back to the queue (the attempt not charged). Keep it below your process
        manager's kill timeout.""")
    TIMEOUT_GRACE_SECONDS: float = setting(5.0, check_id=80, rule=number(0), group="workers",
                                           doc="""
        How long a handler may keep running past its job's `timeout_seconds` before it counts
        as stuck. Its attempt is failed as timed out when the timeout passes (retried or failed
        by its policy, like any error); a handler still running this much later is stuck:
        logged, counted (`jobqueue_stuck_handlers`) and noted on its job's timeline. Under the
        supervisor (`run_job_workers --processes N`), its process is then ended and replaced
        (a hard timeout); in a single unsupervised process its thread cannot be stopped and is
        left to run.""")
    REAPER_INTERVAL_SECONDS: float = setting(5.0, check_id=7, rule=number(0, above=True),
                                             group="workers", doc="""
        How often each worker process's reaper requeues (or fails, when attempts are spent)
        the running jobs whose lease expired.""")
    CLAIM_BATCH_SIZE: int = setting(200, check_id=8, rule=whole(1), group="workers", doc="""
        The most jobs one claim statement takes (`--batch-size` overrides it). A lane
        claims one job per idle thread plus its prefetch, so the claim grows with the backlog
        (the prefetch depth doubles while claims come back full and their jobs all find a
        thread) up to this cap, and shrinks back to the idle threads when the queue runs dry.""")
    PREFETCH: int = setting(128, check_id=9, rule=whole(0), group="workers", doc="""
        The most jobs each lane claims ahead of its idle threads while the queue has a
        backlog; 0 turns prefetching off (`--prefetch` overrides it). The depth adapts: it
        starts at 1, doubles each time the prefetched jobs all found a thread, and halves (then
        pauses 30 s) when one waited a second without a thread, which goes back to the queue
        uncharged; and it never holds more than the lane's threads start within 0.1 s at its
        handlers' mean duration (one job ahead for CPU-bound jobs of 0.1 s on one thread, so
        that when a backlog ends no process still holds a queue of them while the others idle).
        A prefetched job is already `running` (its worker is `<process>-prefetch`
        until a thread takes it: the thread has its own id recorded, and waits for that
        write, before the handler runs) and its lease is renewed; if its process dies before
        a thread took it, it goes back to the queue uncharged; no lane prefetches while a
        concurrency limit applies to its queues or to any job type. See the performance page.""")
    STATEMENT_TIMEOUT_MS: int = setting(30000, check_id=10, rule=whole(0), group="workers", doc="""
        PostgreSQL `statement_timeout` of worker sessions, in milliseconds (and twice that, at
        least 60 s, for `idle_in_transaction_session_timeout`), so that no worker query or
        transaction hangs; 0 sets no limit.""")
    PREPARED_STATEMENTS: bool = setting(True, check_id=11, rule=boolean, group="workers", doc="""
        Run the hot-path statements (claim, complete, renew, enqueue) as server-side prepared
        statements, planned once per connection. `JOB_TRANSACTION_POOLER = True` turns them
        off; so does False here (e.g. behind any pooler that cannot keep them).""")
    EXTRA_HANDLER_MODULES: tuple[str, ...] = setting(
        (), check_id=12, rule=module_list, group="workers", type_doc="list of str", doc="""
        Modules of `@handler` functions to import at start-up, besides every installed app's
        `handlers.py`: for example `["django_pg_jobqueue.builtin_handlers"]` registers the
        deterministic `noop`, `sleep`, `flaky` and `fail` job types. Name here, too, a module
        of Django tasks that lies outside your installed apps' packages: the worker imports
        no other task module.""")
    MIDDLEWARE: tuple[str, ...] = setting(
        (), check_id=54, rule=callable_paths, group="workers", type_doc="list of str", doc="""
        Dotted paths to callables wrapping every handler call, in workers and in
        `testing.drain`: `middleware(call_next, ctx, job)` runs the rest of the chain with
        `call_next()` and returns its result (or raises). The first listed is the outermost;
        the built-in tracing wrapper (JOB_OTEL_ENABLED) comes before them all. For a tenant
        context, error reporting or metrics without editing the worker.""")
    ERROR_HOOKS: tuple[str, ...] = setting(
        (), check_id=55, rule=callable_paths, group="workers", type_doc="list of str", doc="""
        Dotted paths to callables called as `hook(job, exception, outcome)` once for every
        failed attempt, in workers and in `testing.drain`, after its failure is written:
        `outcome` is `"queued"` when a retry follows, else `"failed"`. Failures the handler
        raised come with its exception; the others (an unknown job type, a transaction the
        handler left open, a timeout, an expired lease: told by the process that reaped it)
        with an `AttemptFailed` whose `reason` names them, and a result that cannot be stored
        with its `UnstorableResult`. A snooze, a cancel or a lost lease are not failures; a
        success never looks the hooks up. A hook that raises is logged and ignored.""")

    # -- retries, timeouts, attempts ---------------------------------------------------------------
    RETRY_BASE_SECONDS: float = setting(1.0, check_id=13, rule=number(0), group="retries", doc="""
        Retry backoff base: after attempt *n* fails, the next one waits `base * 2^n` seconds,
        randomised by `JOB_RETRY_JITTER`, at most `JOB_RETRY_MAX_SECONDS`.""")
    RETRY_MAX_SECONDS: float = setting(3600.0, check_id=14, rule=number(0), group="retries", doc="""
        The cap on a single retry delay, in seconds; at least `JOB_RETRY_BASE_SECONDS`.""")
    RETRY_JITTER: float = setting(0.2, check_id=15, rule=number(0, maximum=1), group="retries",
                                  doc="""
        The fraction (0 to 1) of each retry delay that is randomised, so that the retries of a
        batch that failed together spread out.""")
    DEFAULT_MAX_ATTEMPTS: int = setting(3, check_id=16, rule=whole(1, maximum=MAX_ATTEMPTS_LIMIT),
                                        group="retries", doc="""
        Attempts for a job whose enqueue call and handler do not say.""")
    DEFAULT_TIMEOUT_SECONDS: int | None = setting(
        600, check_id=17, rule=whole(1, maximum=MAX_TIMEOUT_SECONDS, none="no time limit"),
        group="retries", doc="""
        The per-attempt time limit, in seconds, of a job whose enqueue call and handler do not
        say; None sets no limit. At the deadline the attempt fails (retryably) and the handler
        is asked to stop (`ctx.should_stop()`).""")

    UNKNOWN_TYPE_FAIL_AFTER_SECONDS: int | None = setting(
        86400, check_id=64, rule=whole(0, none="never: it waits for such a worker forever"),
        group="retries", doc="""
        A worker that claims a job whose type it has no handler for gives it back without
        charging the attempt, for a worker that has one (a rolling deploy: the new code's
        producers run before all of its workers). Once no worker has known the type for this
        many seconds since the first gave it back, the next worker to claim it fails it for
        good, saying so (a type that was removed, or a producer that names a type no worker
        has). 0 fails it at the first claim, as before rolling deploys were safe.""")
    UNKNOWN_TYPE_SKIP_SECONDS: float = setting(30.0, check_id=65, rule=number(0), group="retries",
                                               doc="""
        After a worker process gives back a job of a type it has no handler for, it claims no
        job of that type for this many seconds, so that a worker that knows it gets it; then
        it looks again (once per period, at most one job of that type per process).""")

    # -- results and errors ----------------------------------------------------------------------
    MAX_RESULT_BYTES: int = setting(1048576, check_id=33, rule=whole(16), group="outcomes", doc="""
        The largest result a handler may return, in bytes of JSON. A larger one fails its job
        for good (`bad_result`), as a result that is not JSON does.""")
    MAX_ERROR_CHARS: int = setting(10000, check_id=34, rule=whole(100), group="outcomes", doc="""
        An error message longer than this keeps its first characters and ends with
        `[cut: N more characters]`.""")
    MAX_TRACEBACK_CHARS: int = setting(20000, check_id=35, rule=whole(100), group="outcomes",
                                       doc="""
        A traceback longer than this keeps its last characters (where the error was raised)
        and starts with `[cut: N earlier characters]`.""")

    # -- producers -----------------------------------------------------------------------------
    PERIODIC: dict = setting(dict, check_id=None, rule=None, group="producers", hash=False,  # noqa: RUF009
                             type_doc="dict of dicts", doc="""
        Periodic jobs: `{name: {"cron": "0 3 * * *", "timezone": "Europe/Paris", "type":
        "report_generate", "payload": {...}}}`, or `"task": "myapp.tasks.cleanup"` with
        `"args"` and `"kwargs"` for a Django task; optional keys `queue`, `priority`,
        `max_attempts`, `timeout_seconds`. Each tick is enqueued once, whichever worker process gets
        there first. `manage.py check` reports a malformed value (`django_pg_jobqueue.E200`)
        and each bad entry (`django_pg_jobqueue.E201`).""")

    RATE_LIMITS: tuple = setting(
        (), check_id=114, rule=rate_limit_list, group="producers", type_doc="list of dicts",
        hash=False,
        doc="""
        Rate limits declared in code: `[{"type": "email_send", "max_starts": 20,
        "period_seconds": 1}, {"key": "customer:*", "max_starts": 2, "period_seconds": 1},
        {"queue": "reports", "max_starts": 100, "period_seconds": 60}]`: at most `max_starts`
        jobs start in any sliding `period_seconds`, enforced in the claim across every worker
        (docs/how-to/rate-limits.md). A limit set at run time (`set_rate_limit`, the API, the
        admin) for the same queue, type or key replaces the declared one.""")
    RATE_WEIGHTS: dict = setting(dict, check_id=115, rule=rate_weight_map, group="producers",  # noqa: RUF009
                                 hash=False, type_doc="dict of str to int", doc="""
        What one start of a job type weighs against its rate limits, `{"report_generate":
        5}`: a job type not named weighs 1.""")

    MAX_AFTER: int = setting(100, check_id=95, rule=whole(1, maximum=10000), group="producers",
                             doc="""
        The most jobs one job may wait for (`after=`): more is InvalidJobArgument naming
        `after` from Python and a 400 from the API. The enqueue locks the row of each job named
        until it commits (that lock orders it against the job's completion), so the bound keeps
        that transaction, and the time a worker's write on those rows can wait for it, short.""")
    MAX_AFTER_PER_BATCH: int = setting(1000, check_id=96, rule=whole(1, maximum=100000),
                                       group="producers", doc="""
        The most distinct existing jobs one `enqueue_many()` call (or one request to
        `/api/v1/jobs/bulk/`) may name in its jobs' `after` lists together (`{"item": i}`
        references to the batch's own jobs do not count): more is InvalidJobArgument naming
        `after`, at the job where the count is passed, and a 400 from the API. Through the
        API each entry of `after` also counts against JOB_CREATE_RATE as one job.""")

    # -- the REST API -------------------------------------------------------------------------
    MAX_PAYLOAD_BYTES: int = setting(65536, check_id=18, rule=whole(2), group="api", doc="""
        The largest payload of a job, in UTF-8 bytes of its compact JSON (no spaces, no
        \\u escapes), measured once by the service layer: `enqueue()` refuses a larger one
        with JobPayloadTooLarge and the API with 413, the same payloads.""")
    API_PUBLIC_READ: bool = setting(False, check_id=19, rule=boolean, group="api", doc="""
        True lets anonymous clients read jobs, events, queues and figures through the API;
        writes always need an authenticated user with the permission.""")
    CREATE_RATE: str = setting("600/min", check_id=20, rule=rate, group="api", doc="""
        The per-user throttle on job creation through the API (429 beyond), in DRF's
        `number/period` form: `10/s`, `600/min`, `5000/hour`, `100000/day`. It counts jobs,
        not requests: a bulk request of n jobs spends n, and each entry of a job's `after` list
        spends one more (a dependency costs the enqueue as much as a job); a request that would
        spend more than the rate allows per period is a 400. Only jobs created are charged (not a 400, an idempotent
        replay or a 409). Counted in the queue's database (table `job_throttle_windows`), exact
        across every process that serves the API; not in JOB_THROTTLE_CACHE.""")
    MAX_QUEUE_DEPTH: int | None = setting(None, check_id=21, rule=whole(1, none="no limit"),
                                          group="api", doc="""
        Backpressure: with this many queued jobs, the API refuses new ones with 503
        `queue_full` and a `Retry-After` header; None sets no limit. `enqueue()` from Python
        is not limited.""")
    LOGIN_RATE: str = setting("30/min", check_id=37, rule=rate, group="api", doc="""
        Login attempts per client address, right or wrong, across the API's `auth/login/` and
        every login view wrapped in `django_pg_jobqueue.security.throttle_login` (429 beyond).
        The client is REMOTE_ADDR, or what JOB_TRUSTED_PROXY_COUNT says; IPv6 clients are
        counted by their /64.""")
    API_CREATABLE_TYPES: tuple[str, ...] = setting(
        (), check_id=51, rule=job_type_list, group="api", type_doc="list of str", doc="""
        The job types that the API (`POST jobs/`, `POST jobs/bulk/`) and so the dashboard's
        create form may create. Any other type is refused with 400 (an error on `type`) and
        nothing is written; `job-types/` marks each type `creatable` or not. Empty, the
        default: the API creates no job at all. List only handlers whose payload
        any user with `add_job` may choose freely. `enqueue()` from your own code is not
        limited: it creates any registered type. Django tasks are not listed here but in
        `JOB_API_CREATABLE_TASKS`. `manage.py check` reports a listed type that no handler
        registers (`django_pg_jobqueue.E402`). See the threat model page.""")
    API_CREATABLE_TASKS: tuple[str, ...] = setting(
        (), check_id=52, rule=task_path_list, group="api", type_doc="list of str", doc="""
        The Django tasks (`@task` functions, by their `module_path`, e.g.
        `"myapp.tasks.send_welcome"`) that the API may create, as jobs of that type (or of
        type `django_task`, which becomes that) with `{"task": path, "args": [...],
        "kwargs": {...}, "backend": alias}` as payload. Any
        other path is refused with 400 (an error on `payload`). Empty, the
        default: the API cannot create `django_task` jobs. A task's own `.enqueue()` is not
        limited. `manage.py check` reports a listed path that does not import as a Django
        task (`django_pg_jobqueue.E403`).""")
    # Bounds of the jobs the API creates (services/enqueuing.py, from_api=True): what an
    # add_job user may choose, so that none can take over the workers or the metrics.
    API_QUEUES: tuple[str, ...] | None = setting(
        None, check_id=110, rule=queue_list, group="api", type_doc="list of str or None", doc="""
        The queues a job created through the API may name in `queue`. None, the default: a
        queue that exists, one a registered handler, a Tasks backend's `QUEUES` or a periodic
        schedule declares, or one that holds jobs or has a setting (the queues `pause` accepts).
        A list: only those. Any other queue is a 400 naming `queue`, so that an API user
        cannot make up queues (each one a new label series of `/metrics`, a queue no worker
        may serve). A job that names no queue takes its type's, whatever this says.""")
    API_MAX_PRIORITY: int = setting(
        0, check_id=111, rule=whole(PRIORITY_MIN, maximum=PRIORITY_MAX), group="api", doc=f"""
        The highest `priority` a job created through the API may give (enqueue() takes
        {PRIORITY_MIN} to {PRIORITY_MAX}, higher first). 0, the default: an API user's job
        never goes ahead of the jobs your code enqueues at the default priority. Higher is
        a 400 naming `priority`; a job that gives none takes its type's priority.""")
    API_MAX_DELAY_SECONDS: int = setting(
        30 * 86400, check_id=112, rule=whole(0, maximum=MAX_DELAY_SECONDS), group="api",
        doc="""How far ahead a job created through the API may be scheduled, in seconds:
        `delay_seconds` at most this, `run_at` at most this far from now. 30 days by default;
        beyond, a 400 naming the field. A job parked until 9999 holds its row (and its unique
        key) for as long as the database lives.""")
    API_MAX_TIMEOUT_SECONDS: int = setting(
        86400, check_id=113, rule=whole(1, maximum=MAX_TIMEOUT_SECONDS), group="api", doc="""
        The longest `timeout_seconds` a job created through the API may give: one day by
        default (enqueue() takes up to 30 days). Longer is a 400 naming `timeout_seconds`; a
        job that gives none takes its type's timeout.""")
    API_PASSWORD_LOGIN: bool = setting(False, check_id=53, rule=boolean, group="api", doc="""
        True turns on the dashboard's own password form and `POST auth/login/`. That login
        accepts any active user of the site (not only staff), starts a session that is valid
        on the whole site, and does not go through the host's SSO or two-factor login: turn
        it on only where the Django password is the site's login anyway (the demo project
        does). False, the default: `auth/login/` answers 404 and the dashboard sends people to
        `LOGIN_URL` (the admin's login when that is where it points) and uses the session
        they come back with.""")
    TRUSTED_PROXY_COUNT: int = setting(0, check_id=36, rule=whole(0, maximum=10), group="api", doc="""
        How many proxies in front of Django append the client's address to X-Forwarded-For
        (a load balancer: 1). The throttles then count the address the outermost one appended.
        0, the default, reads REMOTE_ADDR only and never X-Forwarded-For, which any client can
        write. Set it only when every request passes through that many proxies: otherwise a
        client that reaches Django directly picks its own address.""")
    THROTTLE_CACHE: str = setting("default", check_id=38, rule=cache_alias, group="api", doc="""
        The alias of the cache in CACHES that the login throttle (JOB_LOGIN_RATE) counts in
        (job creation counts in the queue's database). It must be shared by every process that
        serves the API (the database cache, Redis, Memcached): a LocMemCache counts per
        process, so n gunicorn workers give a client n times the rate (`check --deploy` warns,
        django_pg_jobqueue.W043).""")

    # -- retention -------------------------------------------------------------------------------
    RETENTION_SUCCEEDED: str = setting("7d", check_id=22, rule=retention, group="retention",
                                   type_doc="duration or None", doc="""
        How long succeeded jobs and their events are kept: `"90s"`, `"15m"`, `"12h"`, `"7d"`,
        `"2w"` (or seconds as a number, or a `timedelta`); `""`, `"off"` or None keeps them
        forever.""")
    RETENTION_FAILED: str = setting("30d", check_id=23, rule=retention, group="retention",
                                   type_doc="duration or None", doc="""
        How long failed jobs and their events are kept (the same form).""")
    RETENTION_CANCELLED: str = setting("7d", check_id=24, rule=retention, group="retention",
                                   type_doc="duration or None", doc="""
        How long cancelled jobs and their events are kept (the same form).""")
    IDEMPOTENCY_KEY_TTL_SECONDS: int | None = setting(
        None, check_id=61, rule=whole(1, none="keys never expire"), group="retention",
        doc="""
        How long an idempotency key replays, in seconds from its job's enqueue: within it, the
        same key and request return the first job; after it, the next enqueue with the key
        creates a new job and takes the key over (the old job keeps its history, its
        `idempotency_key` cleared). None: a key replays for as long as its job is kept.
        Stored per job as `idempotency_expires_at` when it is enqueued. Periodic schedules'
        keys never expire (each tick must run once). See docs/how-to/unique-jobs.md.""")
    PRUNE_INTERVAL_SECONDS: float = setting(300.0, check_id=25, rule=number(0), group="retention",
                                            doc="""
        How often each worker process's pruner deletes the jobs past their retention; 0 turns
        it off (then run `manage.py prune_jobs` from cron).""")
    PRUNE_BATCH_SIZE: int = setting(1000, check_id=26, rule=whole(1), group="retention", doc="""
        Jobs deleted per transaction by the pruner and by `prune_jobs`.""")

    EVENTS_PARTITION_INTERVAL: str = setting("day", check_id=46, rule=one_of("hour", "day", "week"),
                                             group="retention", doc="""
        The time range of each `job_events` partition: `"hour"`, `"day"` or `"week"` (UTC,
        weeks from Monday). A partition is dropped whole once its range is older than the
        shortest retention and its events belong to jobs past their retention (the few of
        kept jobs are moved out first); size it so that a partition holds some millions of
        events at most (see the scaling guide). A change applies from the first range not
        yet covered.""")
    EVENTS_PARTITIONS_AHEAD: int = setting(3, check_id=45, rule=whole(1, maximum=366),
                                           group="retention", doc="""
        How many `job_events` partitions the pruner (and `prune_jobs`) keeps created beyond
        the current one. Events that no partition covers (the pruner off for longer) go to
        the default partition, and move into their own partition when it is created.""")

    # -- observability ---------------------------------------------------------------------------
    WORKER_LOG_LEVEL: str = setting("INFO", check_id=27, rule=one_of(*LOG_LEVELS),
                                    group="observability", doc="""
        The level of the `django_pg_jobqueue` loggers: `INFO` logs retries, failures, cancels,
        snoozes, lost leases and requeues; `DEBUG` adds every success, poll, claim and
        renewal; `WARNING` keeps only failures and lost leases.""")
    LOG_FORMAT: str = setting("text", check_id=28, rule=one_of(*LOG_FORMATS),
                              group="observability", doc="""
        `json` writes one JSON object per log line, with the job's id, type, attempt and worker
        id as fields (`job_id`, `job_type`, `attempt`, `worker_id`); `text` writes plain
        lines.""")
    METRICS_TOKEN: str = setting("", check_id=29, rule=text, group="observability", doc="""
        When set, `GET /metrics` requires `Authorization: Bearer <token>`; empty leaves it
        public.""")
    METRICS_WINDOW_SECONDS: float = setting(300.0, check_id=30, rule=number(1),
                                            group="observability", doc="""
        The sliding window, in seconds, of the `*_recent` metrics and histograms.""")
    METRICS_STATEMENT_TIMEOUT_MS: int = setting(5000, check_id=31, rule=whole(1),
                                                group="observability", doc="""
        The ceiling, in milliseconds, on a metrics scrape's queries; a slower scrape answers
        503 instead of piling up.""")
    OTEL_ENABLED: bool = setting(False, check_id=32, rule=boolean, group="observability", doc="""
        OpenTelemetry spans around enqueue and execution. Needs the `otel` extra
        (`opentelemetry-api`) and an SDK with an exporter, configured the usual
        OpenTelemetry way.""")

    # -- databases and poolers -------------------------------------------------------------------
    DATABASE: str = setting("default", check_id=42, rule=database_alias, group="database", doc="""
        The alias of `DATABASES` that holds the queue's tables: the workers, `enqueue()`, the
        API, the admin, the metrics and the Tasks backend use it, and migrations go there when
        the project adds `django_pg_jobqueue.routers.JobQueueRouter` to `DATABASE_ROUTERS`.
        An enqueue is part of the caller's transaction only when that transaction is on this
        alias (`transaction.atomic(using=...)`).""")
    READ_DATABASE: str = setting("", check_id=120, rule=read_database_alias, group="database",
                                 doc="""
        The alias of `DATABASES` of a streaming replica of `JOB_DATABASE`: the API's reads
        (job lists and details, the events feed, queues, workers, schedules, metrics; so the
        dashboard's pages) go there, while every write, the claim, the workers, the admin and
        the health check stay on `JOB_DATABASE`. A replica more than
        `JOB_READ_MAX_LAG_SECONDS` behind, or one that does not answer, is left aside: those
        reads go to `JOB_DATABASE` until it catches up (checked at most once a second per
        process). Each such response says where it read from and how far behind
        (`X-Job-Read-From`, `X-Job-Read-Lag`). Empty: every read on `JOB_DATABASE`.""")
    READ_MAX_LAG_SECONDS: float = setting(30.0, check_id=121, rule=number(0),
                                          group="database", doc="""
        How stale, in seconds, a page read from `JOB_READ_DATABASE` may be: a replica
        further behind than this is left aside until it catches up.""")
    SHARDS: dict = setting(dict, check_id=122, rule=shard_map, group="database",  # noqa: RUF009
                           hash=False, type_doc="dict", doc="""
        Shards by queue: `{"shard_b": {"number": 1, "queues": ["emails", "reports*"]}}` puts
        the queues named (a name, or a prefix ending in `*`) in the database of the
        `DATABASES` alias `shard_b`, a whole queue of its own (its jobs, events, leader and
        listener); every other queue stays in `JOB_DATABASE`. `number` (1 to 511, never
        reused) is the top bits of the shard's job ids, so that an id names its shard:
        `manage.py migrate --database shard_b` sets its ids' range up. `enqueue()` sends a job
        to its queue's shard, `run_job_workers --shard shard_b` works one shard, and the API's
        job pages, cancel and retry find a job's shard from its id. Needs
        `JobQueueRouter` in `DATABASE_ROUTERS`; see docs/how-to/scaling.md, "Shards by
        queue". Empty (the default): one database.""")
    TRANSACTION_POOLER: bool = setting(False, check_id=40, rule=boolean, group="database", doc="""
        True when the queue's database connection goes through a transaction-mode pooler
        (PgBouncer `pool_mode = transaction`): prepared statements are off whatever
        `JOB_PREPARED_STATEMENTS` says, the workers' statement and idle-transaction timeouts
        are set with `SET LOCAL` in each transaction rather than once per session, and LISTEN
        runs on the direct connection of `JOB_LISTEN_DATABASE_URL`. Needs
        `DISABLE_SERVER_SIDE_CURSORS = True` on the `DATABASES` entry.""")
    LISTEN_DATABASE_URL: str = setting("", check_id=41, rule=conninfo, group="database", doc="""
        A direct (session) connection to the queue's database, for LISTEN only (one
        connection per worker process, and one per process that waits for outcomes):
        `postgres://user:password@db-host:5432/dbname`.
        Empty: LISTEN uses the queue's `DATABASES` entry. Required with
        `JOB_TRANSACTION_POOLER` unless `JOB_LISTEN_NOTIFY` is False.""")
    WORKER_POOL_SIZE: int | None = setting(
        None, check_id=50, rule=whole(1, none="the number of lanes plus 3"), group="database",
        doc="""
        The most server connections a worker process's machinery holds at once: its
        lanes (one claiming thread per --queues group), the completer, the starter (prefetched jobs' starts), the
        renewer, the reaper, the pruner, the periodic enqueuer and the executors' own outcome
        writes share one bounded pool of
        connections to the queue's database (Django's psycopg pool, on a private alias).
        The LISTEN connection comes on top (one per process), and so do the connections
        handlers open themselves, each only for the length of its job.""")

    @property
    def use_prepared_statements(self) -> bool:
        """JOB_PREPARED_STATEMENTS, unless a transaction pooler is in front."""
        return self.PREPARED_STATEMENTS and not self.TRANSACTION_POOLER

    def validate(self) -> "QueueConf":
        """Raise ImproperlyConfigured naming every bad setting; return self when all are fine."""
        found = problems({f.name: getattr(self, f.name) for f in fields(self)})
        if found:
            raise ImproperlyConfigured("; ".join(p.message for p in found))
        return self

    def declared_rate_limits(self) -> list[tuple[str, str, int, float]]:
        """JOB_RATE_LIMITS as (kind, name, max_starts, period_seconds)."""
        rows = []
        for entry in self.RATE_LIMITS:
            kind = next(k for k in RATE_LIMIT_KINDS if k in entry)
            rows.append((kind, entry[kind], int(entry["max_starts"]),
                         float(entry["period_seconds"])))
        return rows

    def rate_limits_in_force(self, set_at_run_time) -> list[tuple[str, str, int, float]]:
        """The rate limits in force: those set at run time (`set_at_run_time`: rows of
        job_rate_limits), and those JOB_RATE_LIMITS declares for a queue, type or key that has
        none set; in (kind, name) order."""
        merged = {(r[0], r[1]): r for r in self.declared_rate_limits()}
        merged.update({(kind, name): (kind, name, int(m), float(p))
                       for kind, name, m, p in set_at_run_time})
        return sorted(merged.values())

    def retention(self, status: str):
        """How long finished jobs of `status` are kept (a timedelta), or None: forever."""
        return parse_retention(getattr(self, f"RETENTION_{str(status).upper()}"))


@dataclass(frozen=True)
class Problem:
    setting: str  # JOB_LEASE_SECONDS
    value: object
    allowed: str
    id: str

    @property
    def message(self) -> str:
        return f"{self.setting} = {self.value!r} is not allowed: it must be {self.allowed}."


def problems(values: dict) -> list[Problem]:
    """Every problem of `values` ({field name: value}; absent fields take their default)."""
    found = []
    by_name = {f.name: f for f in fields(QueueConf)}
    for name, value in values.items():
        f = by_name[name]
        rule = f.metadata["rule"]
        allowed = rule(value) if rule is not None else None
        if allowed is not None:
            found.append(Problem(PREFIX + name, value, allowed, f.metadata["check_id"]))
    base = values.get("RETRY_BASE_SECONDS", by_name["RETRY_BASE_SECONDS"].default)
    cap = values.get("RETRY_MAX_SECONDS", by_name["RETRY_MAX_SECONDS"].default)
    if _is_number(base) and _is_number(cap) and 0 <= base and cap < base:
        found.append(Problem("JOB_RETRY_MAX_SECONDS", cap,
                             f"at least JOB_RETRY_BASE_SECONDS ({base!r})",
                             by_name["RETRY_MAX_SECONDS"].metadata["check_id"]))
    found.extend(_pooler_problems(values, by_name))
    return found


def _pooler_problems(values: dict, by_name: dict) -> list[Problem]:
    """What a transaction pooler needs besides the switch: a direct connection for LISTEN,
    and no server-side cursors (Django's, WITH HOLD in autocommit, outlive a transaction)."""
    def value(name):
        return values.get(name, by_name[name].default)

    if value("TRANSACTION_POOLER") is not True:
        return []
    found = []
    if value("LISTEN_NOTIFY") is True and value("LISTEN_DATABASE_URL") == "":
        found.append(Problem(
            "JOB_LISTEN_DATABASE_URL", "", "a direct (not pooled) connection URL when "
            "JOB_TRANSACTION_POOLER is True and JOB_LISTEN_NOTIFY is True: LISTEN cannot work "
            "through a transaction pooler (or set JOB_LISTEN_NOTIFY = False to poll only)",
            by_name["LISTEN_DATABASE_URL"].metadata["check_id"]))
    alias = value("DATABASE")
    entry = getattr(settings, "DATABASES", {}).get(alias)
    if entry is not None and not entry.get("DISABLE_SERVER_SIDE_CURSORS"):
        found.append(Problem(
            "JOB_TRANSACTION_POOLER", True, f"False unless DATABASES[{alias!r}] sets "
            "DISABLE_SERVER_SIDE_CURSORS = True: Django's server-side cursors do not survive a "
            "transaction pooler", by_name["TRANSACTION_POOLER"].metadata["check_id"]))
    if entry is not None and (entry.get("OPTIONS") or {}).get("server_side_binding"):
        found.append(Problem(
            "JOB_TRANSACTION_POOLER", True, f"False unless DATABASES[{alias!r}]['OPTIONS'] "
            "leaves server_side_binding off: the per-transaction SET LOCAL limits ride in "
            "the statement's own simple query", by_name["TRANSACTION_POOLER"].metadata["check_id"]))
    return found


def configured() -> dict:
    """The JOB_* settings the project sets, by field name."""
    return {f.name: getattr(settings, PREFIX + f.name) for f in fields(QueueConf)
            if hasattr(settings, PREFIX + f.name)}


@cache
def get() -> QueueConf:
    """The queue's settings, validated: raises ImproperlyConfigured on any bad value."""
    values = configured()
    found = problems(values)
    if found:
        raise ImproperlyConfigured("; ".join(p.message for p in found))
    for name in ("EXTRA_HANDLER_MODULES", "MIDDLEWARE", "ERROR_HOOKS", "API_CREATABLE_TYPES",
                 "API_CREATABLE_TASKS", "API_QUEUES"):
        if values.get(name) is not None:
            values[name] = tuple(values[name])
    return QueueConf(**values)


def default(name: str):
    """The default of a setting, by its name (JOB_LEASE_SECONDS)."""
    f = next(f for f in fields(QueueConf) if PREFIX + f.name == name)
    return f.default_factory() if callable(f.default_factory) else f.default


def extra_handler_modules() -> tuple[str, ...]:
    """JOB_EXTRA_HANDLER_MODULES for the app's start-up. A bad value gives () here, so that
    `manage.py check` can report it (and any other bad setting) instead of a traceback."""
    value = getattr(settings, PREFIX + "EXTRA_HANDLER_MODULES", ())
    return tuple(value) if module_list(value) is None else ()


@checks.register("django_pg_jobqueue")
def check_settings(app_configs=None, **kwargs) -> list[checks.Error]:
    """`manage.py check`: one error per bad JOB_* setting, naming it, its value and what is
    allowed."""
    return [checks.Error(p.message, hint=f"Remove {p.setting} to use its default, "
                                         f"{default(p.setting)!r}.", obj=p.setting, id=p.id)
            for p in problems(configured())]


@receiver(setting_changed)
def _reset(setting, **kwargs):
    if setting.startswith(PREFIX):
        get.cache_clear()
