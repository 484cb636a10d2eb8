"""The job state machine, as pure data: statuses, event kinds and the allowed transitions.

No ORM imports here. Services (services/) are the only code that moves a job between
statuses, and each move they make must appear in TRANSITIONS; tests/services/test_state_machine.py
keeps the two in step.

    queued    -- a worker claims it ------------------------------> running
    running   -- the handler returns ----------------------------> succeeded
    running   -- the handler raises, attempts left -------------> queued   (retry, with backoff)
    running   -- the handler raises, attempts spent / permanent --> failed
    running   -- the lease expired (reaper) ---------------------> queued | failed
    running   -- graceful shutdown, snooze ---------------------> queued   (attempt not charged)
    running   -- a durable wait (sleep_until, wait_for_signal) -> queued   (parked: not charged,
                                                                          due at its time or signal)
    running   -- cancel requested and the handler stopped -------> cancelled
    queued    -- cancel -----------------------------------------> cancelled
    queued    -- not started by its expires_at (reaper) ---------> cancelled (event `expired`)
    failed    -- manual retry ----------------------------------> queued
    cancelled -- manual retry ----------------------------------> queued
    queued    -- enqueued after=[...] (same transaction) --------> waiting  (blocked)
    queued    -- retried, a dependency not succeeded (same stmt) -> waiting  (blocked)
    waiting   -- every dependency succeeded --------------------> queued   (unblocked)
    waiting   -- a dependency failed or was cancelled ----------> cancelled

A waiting job (services/dependencies.py) is out of the claim's reach: the claim reads only
queued rows (sql.CLAIM and its partial index), so it costs nothing more for dependencies.
"""
import re
from datetime import datetime

from .compat import UTC, StrEnum

# -- Bounds of a job's arguments --------------------------------------------------------------
# `services.enqueue` / `enqueue_many` (and through them the Tasks backend, the API and the
# admin) refuse anything outside these; see services/enqueuing.py and docs/how-to/enqueue.md.
# The database's check constraints hold the priority range too (models.py).

# Higher runs first. The same range as Django's Tasks (django.tasks.base.TASK_MIN_PRIORITY).
PRIORITY_MIN = -100
PRIORITY_MAX = 100
# A queue name: 1 to 100 of ASCII letters, digits and _ . : - (URL-safe: the API names queues
# in its paths). 100 is Job.queue's max_length.
QUEUE_NAME_PATTERN = r"[A-Za-z0-9_.:-]+"
QUEUE_NAME_RE = re.compile(QUEUE_NAME_PATTERN)  # use .fullmatch()
MAX_QUEUE_NAME_LENGTH = 100
MAX_ATTEMPTS_LIMIT = 1000
MAX_TIMEOUT_SECONDS = 30 * 86400  # a timeout, in seconds: at most 30 days
MAX_DELAY_SECONDS = 366 * 86400  # a delay: at most a year (a leap year)
# run_at: from 2000-01-01 UTC to the end of year 9999 UTC (what Python's datetime holds). An
# older one would go ahead of every job waiting since then and drive the oldest-runnable-age
# gauge to decades; a past run_at after it simply runs now.
RUN_AT_MIN = datetime(2000, 1, 1, tzinfo=UTC)
MAX_IDEMPOTENCY_KEY_LENGTH = 255  # Job.idempotency_key's max_length
MAX_TYPE_LENGTH = 100  # Job.type's max_length (a Django task's path longer than this: django_task)
# A unique job's key (enqueue(unique={"key": ...})): stored as "<type>:key:<key>" in
# Job.unique_key (max_length 300, a type being at most 100 characters); under an API user's
# scope ("<type>:api:<user id>:key:<key>") a key too long for the column is stored as its
# SHA-256 instead (services/enqueuing.py).
MAX_UNIQUE_KEY_LENGTH = 190
MAX_UNIQUE_KEY_STORED_LENGTH = 300  # Job.unique_key's max_length
MAX_UNIQUE_PERIOD_SECONDS = 366 * 86400  # unique for at most a year
# Enqueue policies (docs/how-to/enqueue-policies.md). A debounce or throttle key is built as a
# unique key is ("<type>:<scope>debounce:key:<key>", "...:throttle:key:<key>"), in a column of
# the same width; its period_seconds (the quiet time a debounced job waits for, the window a
# throttled key admits one job in) is above 0 and at most a year (a debounce's, as a delay).
MAX_POLICY_PERIOD_SECONDS = 366 * 86400
# expires_at / expires_in_seconds: a job not started by then never runs (it ends cancelled,
# its `expired` event saying why). At most a year ahead, as a delay.
MAX_EXPIRES_IN_SECONDS = 366 * 86400
# A concurrency key (Job.concurrency_key's max_length) and its limit: at most that many jobs
# of one key run at once (services/claiming.py, docs/how-to/concurrency-keys.md).
MAX_CONCURRENCY_KEY_LENGTH = 200
MAX_CONCURRENCY_KEY_LIMIT = 1000
# Rate limits (services/rate_limits.py, docs/how-to/rate-limits.md): what one limits (a queue,
# a job type, the jobs of a concurrency key or key prefix), its longest period (a day: the
# starts log keeps one row per start for as long as the longest period), the most one start
# may weigh.
RATE_LIMIT_KINDS = ("queue", "type", "key")
MAX_RATE_PERIOD_SECONDS = 86400
MAX_RATE_WEIGHT = 1_000_000
# Priority aging (QueueSetting.aging_seconds): one step of priority per at most a day waited.
MAX_AGING_SECONDS = 86400
# A host's override of a queue's threads (services/worker_overrides.py): at most this many of
# the host's threads may run the queue's jobs at once (0: none, as if stopped on that host).
MAX_OVERRIDE_THREADS = 10_000
# A host's name as its workers report it (job_workers.hostname) and overrides name it.
MAX_HOSTNAME_LENGTH = 200
HOSTNAME_RE = re.compile(r"[A-Za-z0-9_.:-]+")
# Fair shares' weights (QueueSetting.fairness_weights): a key of weight w takes w turns per
# round; at most MAX_FAIRNESS_WEIGHT, and at most MAX_FAIRNESS_WEIGHTS keys or patterns
# weighted per queue (the claim reads them all, once a second per worker process).
MAX_FAIRNESS_WEIGHT = 100
MAX_FAIRNESS_WEIGHTS = 1000


def rate_limit_problem(kind, name, max_starts, period_seconds) -> tuple[str, str] | None:
    """What is wrong with a rate limit, as (the argument, what it must be), or None: one rule
    for the setting (JOB_RATE_LIMITS), the service and the API."""
    if kind not in RATE_LIMIT_KINDS:
        return "kind", "one of " + ", ".join(repr(k) for k in RATE_LIMIT_KINDS)
    if not isinstance(name, str) or not 0 < len(name) <= MAX_CONCURRENCY_KEY_LENGTH:
        return "name", f"a non-empty str of at most {MAX_CONCURRENCY_KEY_LENGTH} characters"
    if kind != "key" and name.endswith("*"):
        return "name", "a queue's or a type's name: only a key limit takes a prefix ending in '*'"
    if isinstance(max_starts, bool) or not isinstance(max_starts, int) or not (
            1 <= max_starts <= MAX_RATE_WEIGHT):
        return "max_starts", f"a whole number from 1 to {MAX_RATE_WEIGHT}"
    if isinstance(period_seconds, bool) or not isinstance(period_seconds, (int, float)) or not (
            0 < period_seconds <= MAX_RATE_PERIOD_SECONDS):
        return "period_seconds", f"a number of seconds above 0, at most {MAX_RATE_PERIOD_SECONDS}"
    return None
# How deeply the JSON the queue stores may nest: a payload's objects and arrays, a handler's
# result, a log line's data (PostgreSQL's jsonb parser and Python's json module both recurse,
# and how deep Python's encoder goes before RecursionError differs between versions; a value
# nested deeper is almost always a bug, or circular). One limit, held before encoding.
MAX_JSON_DEPTH = 64
MAX_PAYLOAD_DEPTH = MAX_JSON_DEPTH
# A job id is a positive bigint (jobs.id).
MAX_JOB_ID = 2**63 - 1


def parse_job_id(value) -> int | None:
    """A job id from a URL, a search box or a caller, or None when it cannot be one. Pure:
    reads (selectors, the API's filters) and writes (services) both use it."""
    try:
        job_id = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return job_id if 0 < job_id <= MAX_JOB_ID else None


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    WAITING = "waiting"  # enqueued after=[...]: not runnable until its dependencies succeed


class State(StrEnum):
    """The states an operator thinks in (River's), for filtering and counting: each job is in
    exactly one. The three queued ones split `queued` by `available_at` (compared with the
    database's clock) and `attempts`; the others are the status of the same name.

    available  queued, due now (available_at <= now): the next claim may take it
    scheduled  queued, due later, never attempted (a delay or run_at)
    retryable  queued, due later, attempted before (waiting out a retry's backoff)
    running    running
    succeeded  succeeded (River's "completed")
    failed     failed: attempts spent or a permanent error (River's "discarded")
    cancelled  cancelled
    """

    AVAILABLE = "available"
    SCHEDULED = "scheduled"
    RETRYABLE = "retryable"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


QUEUED_STATES = frozenset({State.AVAILABLE, State.SCHEDULED, State.RETRYABLE})

TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})
RETRYABLE_BY_OPERATOR = frozenset({Status.FAILED, Status.CANCELLED})
# A batch's callbacks (services/batches.py), in the order they are enqueued when it finishes:
# on_complete always, on_success when every member succeeded, on_failure when one did not.
BATCH_CALLBACKS = ("on_complete", "on_success", "on_failure")


# The worker id a prefetch buffer claims jobs under: `<process id>-prefetch` (worker/prefetch.py).
# A job still owned by it never started: an executor restamps its own id before the handler runs.
PREFETCH_WORKER_SUFFIX = "-prefetch"


class EventKind(StrEnum):
    CREATED = "created"
    # Written by the claim before history v2 only, and still read (old history keeps its
    # rows): an attempt's start is now carried by the event that ends it (data.started_at,
    # data.lease_token, its worker_id; sql.attempt_start), and by the job row while it runs.
    CLAIMED = "claimed"
    LEASE_RENEWED = "lease_renewed"
    PROGRESS = "progress"
    LOG = "log"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY_SCHEDULED = "retry_scheduled"
    LEASE_EXPIRED = "lease_expired"
    LEASE_LOST = "lease_lost"  # a worker's write was refused: its lease token no longer matches
    TIMED_OUT = "timed_out"
    RELEASED = "released"
    SNOOZED = "snoozed"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLED = "cancelled"
    RETRIED = "retried"
    BLOCKED = "blocked"  # queued -> waiting: enqueued after other jobs
    UNBLOCKED = "unblocked"  # waiting -> queued: every job it waited for succeeded
    EDITED = "edited"  # an operator changed a queued or waiting job's priority or run time
    EXPIRED = "expired"  # queued -> cancelled: not started by its expires_at (the reaper's sweep)
    PARKED = "parked"  # running -> queued, uncharged: a durable wait (ctx.sleep_until, wait_for_signal)
    SIGNALLED = "signalled"  # a signal was sent to the job (send_signal), waking it if parked for it



class OperatorAction(StrEnum):
    """What an operator did, as the audit log records it (services/audit_log.py): the name of
    the service that did it. The job actions are job_actions.ACTIONS' names (and `edit`)."""
    CANCEL = "cancel"
    RETRY = "retry"
    RERUN = "rerun"
    RUN_NOW = "run_now"
    EDIT = "edit"
    DELETE = "delete"
    PAUSE_QUEUE = "pause_queue"
    RESUME_QUEUE = "resume_queue"
    SET_QUEUE_LIMIT = "set_queue_limit"
    SET_QUEUE_FAIRNESS = "set_queue_fairness"
    SET_QUEUE_AGING = "set_queue_aging"
    SET_FAIRNESS_WEIGHTS = "set_fairness_weights"
    RUN_SCHEDULE = "run_schedule"
    PAUSE_SCHEDULE = "pause_schedule"
    RESUME_SCHEDULE = "resume_schedule"
    SET_RATE_LIMIT = "set_rate_limit"
    REMOVE_RATE_LIMIT = "remove_rate_limit"
    CANCEL_BATCH = "cancel_batch"
    SET_WORKER_OVERRIDE = "set_worker_override"
    REMOVE_WORKER_OVERRIDE = "remove_worker_override"


class AuditTarget(StrEnum):
    """What an audit log entry's `target` names: a job's id, a queue's or a schedule's name,
    a rate limit's scope (`type:email_send`, `key:customer:*`), a batch's id."""
    JOB = "job"
    QUEUE = "queue"
    SCHEDULE = "schedule"
    RATE_LIMIT = "rate_limit"
    BATCH = "batch"

# (from, to) -> the transition's name. The name is the verb used by the service, the event
# kind that records it, the API action and the admin action.
TRANSITIONS: dict[tuple[Status, Status], str] = {
    (Status.QUEUED, Status.RUNNING): "claim",
    (Status.RUNNING, Status.SUCCEEDED): "complete",
    (Status.RUNNING, Status.FAILED): "fail",
    (Status.RUNNING, Status.QUEUED): "requeue",  # retry_scheduled, lease_expired, released, snoozed, parked
    (Status.RUNNING, Status.CANCELLED): "cancel",
    (Status.QUEUED, Status.CANCELLED): "cancel",
    (Status.FAILED, Status.QUEUED): "retry",
    (Status.CANCELLED, Status.QUEUED): "retry",
    (Status.QUEUED, Status.WAITING): "block",
    (Status.WAITING, Status.QUEUED): "unblock",
    (Status.WAITING, Status.CANCELLED): "cancel",
}

# What a dependant does when a job it waits for fails for good or is cancelled
# (enqueue(after_failure=...)): be cancelled too (the default), or run anyway.
AFTER_FAILURE_CANCEL = "cancel"
AFTER_FAILURE_RUN = "run"
AFTER_FAILURE_CHOICES = (AFTER_FAILURE_CANCEL, AFTER_FAILURE_RUN)


def can_transition(source: str, target: str) -> bool:
    return (Status(source), Status(target)) in TRANSITIONS

