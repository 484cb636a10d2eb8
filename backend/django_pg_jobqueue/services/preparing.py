"""enqueue's first half: every argument of a job checked and resolved into a `NewJob`.

The pure checks are `arguments.py`'s; here is what needs the rest of the package: the job
type's defaults (the registry, the task options), the API's bounds (JOB_API_*, whether a
queue exists), dependencies' own checks. Nothing is written; `inserting.py` writes what this
prepares.
"""
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .. import catalogue, conf, keys, periodic
from ..arguments import (
    check_concurrency_key,
    check_creatable,
    check_creatable_task,
    check_debounce,
    check_delay,
    check_expiry,
    check_fairness_key,
    check_idempotency_key,
    check_int,
    check_queue,
    check_retry_policy,
    check_run_at,
    check_throttle,
    check_unique,
    type_error,
    validate_payload,
)
from ..exceptions import (
    InvalidJobArgument,
    JobArgumentTypeError,
    UnknownJobType,
)
from ..registry import is_task_job, registry
from ..states import (
    MAX_ATTEMPTS_LIMIT,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    MAX_TYPE_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
)
from . import dependencies


# Slots: a batch builds one per item, and a dataclass of this many fields is built about
# three times faster into slots than into an instance __dict__.
@dataclass(slots=True)
class NewJob:
    type: str
    payload: dict
    payload_json: str  # the payload as the JSON text stored (compact, UTF-8)
    priority: int
    queue: str
    max_attempts: int
    timeout_seconds: int | None
    run_at: datetime | None
    delay_seconds: float
    idempotency_key: str | None
    fingerprint: str | None
    retry_policy: dict | None = None  # retries.RetryPolicy's JSON shape: this job's own
    key_ttl_seconds: float | None = None  # the idempotency key's expiry, from the enqueue
    unique_key: str | None = None  # "<type>:<key>"
    unique_states: list[str] | None = None
    unique_period_seconds: float | None = None
    after: list | None = None  # job ids and ("item", i) references (services/dependencies.py)
    after_failure: str = "cancel"
    concurrency_key: str | None = None
    concurrency_key_limit: int | None = None
    # Fair shares (docs/how-to/fairness.md): in a fair queue, claims go round-robin across keys.
    fairness_key: str | None = None
    # Enqueue policies (docs/how-to/enqueue-policies.md): a deadline (one of the two: an
    # instant, or seconds from the insert's now()), and a debounce key with its quiet period
    # (a throttle is a unique key with a period: unique_key, unique_period_seconds).
    expires_at: datetime | None = None
    expires_in_seconds: float | None = None
    debounce_key: str | None = None
    debounce_seconds: float | None = None


def _fingerprint(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _api_may_use_queue(queue: str, queues_seen: dict[str, bool] | None) -> bool:
    """Whether a job created through the API may name `queue` (JOB_API_QUEUES; by default, a
    queue that exists). `queues_seen`: the answers already given for this request."""
    allowed = conf.get().API_QUEUES
    if allowed is not None:
        return queue in allowed
    if queues_seen is not None and queue in queues_seen:
        return queues_seen[queue]
    exists = catalogue.queue_exists(queue)
    if queues_seen is not None:
        queues_seen[queue] = exists
    return exists


def check_api_bounds(named: dict[str, bool], *, queue: str, priority: int,
                      timeout_seconds: int | None, run_at: datetime | None,
                      delay_seconds: float, queues_seen: dict[str, bool] | None) -> None:
    """The operator's bounds on what an API user may choose (JOB_API_QUEUES,
    JOB_API_MAX_PRIORITY, JOB_API_MAX_DELAY_SECONDS, JOB_API_MAX_TIMEOUT_SECONDS): beyond
    them, InvalidJobArgument naming the field. What the caller left out takes the type's
    default, which is the code's choice and not bounded here."""
    settings = conf.get()
    if named["queue"] and not _api_may_use_queue(queue, queues_seen):
        where = ("one of JOB_API_QUEUES" if settings.API_QUEUES is not None else
                 "a queue that exists (declared by a handler, a Tasks backend or a schedule, "
                 "or holding jobs)")
        raise InvalidJobArgument("queue", f"{queue!r} is not a queue the API may send jobs "
                                          f"to: name {where}, or leave queue out")
    if named["priority"]:
        check_api_priority(priority)
    if (named["timeout_seconds"] and timeout_seconds is not None
            and timeout_seconds > settings.API_MAX_TIMEOUT_SECONDS):
        raise InvalidJobArgument("timeout_seconds", (
            f"must be at most {settings.API_MAX_TIMEOUT_SECONDS} for a job created through the "
            f"API (JOB_API_MAX_TIMEOUT_SECONDS), not {timeout_seconds}"))
    horizon = settings.API_MAX_DELAY_SECONDS
    if delay_seconds > horizon:
        raise InvalidJobArgument("delay_seconds", (
            f"must be at most {horizon} for a job created through the API "
            f"(JOB_API_MAX_DELAY_SECONDS), not {delay_seconds:g}"))
    check_api_run_time(run_at)


def check_api_priority(priority: int) -> None:
    """JOB_API_MAX_PRIORITY: the highest priority an API user may give a job."""
    highest = conf.get().API_MAX_PRIORITY
    if priority > highest:
        raise InvalidJobArgument("priority", f"must be at most {highest} for a job created "
                                             "through the API (JOB_API_MAX_PRIORITY), "
                                             f"not {priority}")


def check_api_run_time(run_at: datetime | None) -> None:
    """JOB_API_MAX_DELAY_SECONDS: how far ahead an API user may set a job's run time."""
    horizon = conf.get().API_MAX_DELAY_SECONDS
    if run_at is not None and run_at > timezone.now() + timedelta(seconds=horizon):
        raise InvalidJobArgument("run_at", (
            f"must be at most {horizon} seconds from now for a job created through the API "
            f"(JOB_API_MAX_DELAY_SECONDS), not {run_at.isoformat()}"))


def prepare(job_type, payload=None, *, priority=None, queue=None, run_at=None,
             delay_seconds=None, idempotency_key=None, max_attempts=None, timeout_seconds=None,
             retry_policy=None, unique=None, after=None, after_failure=None,
             from_api: bool = False, key_scope: str = "",
             concurrency_key=None, concurrency_key_limit=None, fairness_key=None,
             debounce=None, throttle=None, expires_at=None, expires_in_seconds=None,
             index: int | None = None, queues_seen: dict[str, bool] | None = None) -> NewJob:
    """Every argument of one job checked and resolved against the type's defaults.
    Arguments left None take the type's default, else the setting's. `from_api`: the caller
    is the API (an untrusted client), which may create only what the host opened to it."""
    if not isinstance(job_type, str):
        raise type_error("type", "a registered job type (a str)", job_type)
    # A Django task's job is typed by its task's path (registry.is_task_job): `django_task`
    # with a payload naming the task (as the API and schedules may still say) becomes that.
    asked_type = job_type
    task_path = payload.get("task") if isinstance(payload, dict) else None
    if (job_type == conf.DJANGO_TASK_TYPE and isinstance(task_path, str)
            and 0 < len(task_path) <= MAX_TYPE_LENGTH and task_path not in registry):
        job_type = task_path
    is_task = is_task_job(job_type, payload)
    spec = registry.get(conf.DJANGO_TASK_TYPE if is_task else job_type)
    if spec is None and from_api and asked_type in conf.get().API_CREATABLE_TASKS:
        # A creatable task's path as the type, its payload not naming the task: not unknown.
        raise InvalidJobArgument("payload", f"a Django task's job names its task in the payload: "
                                            f"{{'task': {asked_type!r}, 'args': [...], "
                                            "'kwargs': {...}, 'backend': 'default'}")
    if spec is None:
        raise UnknownJobType(asked_type, creatable=catalogue.creatable_types() if from_api else None)
    if from_api:
        check_creatable(conf.DJANGO_TASK_TYPE if is_task else job_type)
    payload, payload_json = validate_payload(payload)
    if from_api and is_task:
        check_creatable_task(payload)
    run_at = check_run_at(run_at)
    delay = delay_seconds
    delay_seconds = check_delay(delay)
    if run_at is not None and delay_seconds:
        raise InvalidJobArgument("delay_seconds", "give run_at or delay_seconds, not both")
    settings = conf.get()
    # What the caller named, before the type's defaults fill the rest (the API's bounds).
    named = {"queue": queue is not None, "priority": priority is not None,
             "timeout_seconds": timeout_seconds is not None}
    priority = check_int("priority", spec.priority if priority is None else priority,
                          PRIORITY_MIN, PRIORITY_MAX)
    queue = check_queue(spec.queue or "default" if queue is None else queue)
    if max_attempts is None:
        max_attempts = spec.max_attempts or settings.DEFAULT_MAX_ATTEMPTS
    max_attempts = check_int("max_attempts", max_attempts, 1, MAX_ATTEMPTS_LIMIT)
    timeout = timeout_seconds
    if timeout is None:
        timeout = spec.timeout_seconds or settings.DEFAULT_TIMEOUT_SECONDS
    if timeout is not None:
        timeout = check_int("timeout_seconds", timeout, 1, MAX_TIMEOUT_SECONDS)
    if from_api:
        check_api_bounds(named, queue=queue, priority=priority, timeout_seconds=timeout,
                          run_at=run_at, delay_seconds=delay_seconds, queues_seen=queues_seen)
    idempotency_key = check_idempotency_key(idempotency_key)
    concurrency_key, concurrency_key_limit = check_concurrency_key(concurrency_key,
                                                                    concurrency_key_limit)
    # An API user's key is theirs (keys.py): it never holds back another user's jobs.
    stored_concurrency_key = keys.scoped(key_scope, concurrency_key, MAX_CONCURRENCY_KEY_LENGTH)
    fairness_key = check_fairness_key(fairness_key)
    stored_fairness_key = keys.scoped(key_scope, fairness_key, MAX_CONCURRENCY_KEY_LENGTH)
    policy = check_retry_policy(retry_policy)
    unique_key = unique_states = unique_period = None
    if unique is not None:
        unique_key, unique_states, unique_period = check_unique(unique, job_type, payload,
                                                                 key_scope)
    throttled = unique is None and throttle is not None
    if unique is not None and throttle is not None:
        raise InvalidJobArgument("throttle", "give unique or throttle, not both")
    if throttled:
        unique_key, unique_states, unique_period = check_throttle(throttle, job_type, payload,
                                                                   key_scope)
    debounce_key = debounce_seconds = None
    if debounce is not None:
        debounce_key, debounce_seconds = check_debounce(debounce, job_type, payload, key_scope)
        if from_api and debounce_seconds > settings.API_MAX_DELAY_SECONDS:
            raise InvalidJobArgument("debounce", (
                f"debounce['period_seconds'] must be at most {settings.API_MAX_DELAY_SECONDS} "
                "for a job created through the API (JOB_API_MAX_DELAY_SECONDS)"))
        _check_debounce_alone(run_at=run_at, delay_seconds=delay_seconds,
                              idempotency_key=idempotency_key, unique=unique,
                              throttle=throttle, after=after)
    expires_at, expires_in = check_expiry(expires_at, expires_in_seconds)
    _check_expires_after_start(expires_at, expires_in, run_at=run_at,
                               delay_seconds=debounce_seconds or delay_seconds)
    after, after_failure = dependencies.check_after(after, after_failure, index=index)
    fingerprint = key_ttl = None
    if idempotency_key is not None:
        request = {
            # a task's as `django_task`: keys stored before tasks had their own types replay
            "type": conf.DJANGO_TASK_TYPE if is_task else job_type, "payload": payload,
            "priority": priority, "queue": queue,
            # the keys "timeout" and "delay" are the arguments' names when fingerprints were
            # first stored: kept, so that a key stored then still replays
            "max_attempts": max_attempts, "timeout": timeout, "run_at": run_at,
            "delay": delay.total_seconds() if isinstance(delay, timedelta) else delay,
        }
        if policy is not None:  # only when given: keys stored before it existed still replay
            request["retry_policy"] = policy
        if unique is not None or throttled:  # only then: keys stored before them replay
            request["unique"] = [unique_key, unique_states, unique_period]
        if expires_at is not None or expires_in is not None:  # as for the others: only then
            request["expires"] = [expires_at, expires_in]
        if after:
            request["after"] = [list(ref) if isinstance(ref, tuple) else ref
                                for ref in after] + [after_failure]
        if concurrency_key is not None:  # only then: fingerprints stored before still match
            request.update(concurrency_key=concurrency_key,
                           concurrency_key_limit=concurrency_key_limit)
        if fairness_key is not None:  # only then: fingerprints stored before still match
            request["fairness_key"] = fairness_key
        fingerprint = _fingerprint(request)
        # A periodic schedule's keys never expire: they are how each tick runs once
        # (periodic.py; the pruner keeps the newest for the same reason).
        if not idempotency_key.startswith(f"{periodic.KEY_PREFIX}:"):
            key_ttl = settings.IDEMPOTENCY_KEY_TTL_SECONDS
    return NewJob(
        type=job_type, payload=payload, payload_json=payload_json, priority=priority,
        queue=queue, max_attempts=max_attempts, timeout_seconds=timeout, run_at=run_at,
        delay_seconds=delay_seconds, idempotency_key=idempotency_key, fingerprint=fingerprint,
        retry_policy=policy,
        key_ttl_seconds=key_ttl, unique_key=unique_key, unique_states=unique_states,
        unique_period_seconds=unique_period, after=after, after_failure=after_failure,
        concurrency_key=stored_concurrency_key, concurrency_key_limit=concurrency_key_limit,
        fairness_key=stored_fairness_key, expires_at=expires_at, expires_in_seconds=expires_in, debounce_key=debounce_key,
        debounce_seconds=debounce_seconds,
    )


def _check_debounce_alone(*, run_at, delay_seconds, idempotency_key, unique, throttle,
                          after) -> None:
    """A debounced job starts its quiet period after the last enqueue of its key, and that
    enqueue updates the pending job rather than adding one: no other start time, and no
    other key (an idempotency, unique or throttle key) or dependency that would make the
    enqueue keep the first job or a second one wait."""
    for name, given in (("run_at", run_at is not None), ("delay_seconds", bool(delay_seconds)),
                        ("idempotency_key", idempotency_key is not None),
                        ("unique", unique is not None), ("throttle", throttle is not None),
                        ("after", bool(after))):
        if given:
            raise InvalidJobArgument(name, f"give debounce or {name}, not both (a debounced "
                                           "job starts debounce['period_seconds'] after its "
                                           "key's last enqueue)")


def _check_expires_after_start(expires_at: datetime | None, expires_in: float | None, *,
                               run_at: datetime | None, delay_seconds: float) -> None:
    """A deadline at or before the job may first start would drop it unrun, every time."""
    if expires_at is None and expires_in is None:
        return
    now = timezone.now()
    start = run_at if run_at is not None else now + timedelta(seconds=delay_seconds)
    deadline = expires_at if expires_at is not None else now + timedelta(seconds=expires_in or 0)
    if deadline <= start:
        argument = "expires_at" if expires_at is not None else "expires_in_seconds"
        raise InvalidJobArgument(argument, "must be after the job may start (its run_at, "
                                           "delay_seconds or debounce period): it could "
                                           "never run")


# enqueue()'s keyword arguments: the keys an enqueue_many() item may have besides "type" and
# "payload", and the fields of POST /api/v1/jobs/ (tests/contracts/test_vocabulary.py holds them together).
_ENQUEUE_OPTIONS = frozenset({"priority", "queue", "run_at", "delay_seconds", "idempotency_key",
                              "max_attempts", "timeout_seconds", "retry_policy", "unique",
                              "after", "after_failure", "concurrency_key",
                              "concurrency_key_limit", "fairness_key", "debounce", "throttle",
                              "expires_at", "expires_in_seconds"})
_ITEM_KEYS = _ENQUEUE_OPTIONS | {"type", "payload"}  # what an enqueue_many() item may hold


def prepare_item(item, from_api: bool = False, key_scope: str = "",
                  index: int = 0, queues_seen: dict[str, bool] | None = None) -> NewJob:
    """One item of enqueue_many: a dict of enqueue's arguments."""
    if not isinstance(item, dict):
        raise type_error("jobs", "a list of dicts of enqueue()'s arguments", item)
    if "type" not in item:
        raise InvalidJobArgument("type", "is required")
    if not _ITEM_KEYS.issuperset(item):
        unknown = sorted(str(k) for k in item if k not in _ITEM_KEYS)
        raise JobArgumentTypeError(unknown[0], "is not an argument of enqueue(); expected "
                                               f"type, payload, {', '.join(sorted(_ENQUEUE_OPTIONS))}")
    return prepare(item["type"], item.get("payload"), from_api=from_api,
                    key_scope=key_scope, index=index, queues_seen=queues_seen,
                    **{k: v for k, v in item.items() if k in _ENQUEUE_OPTIONS})

