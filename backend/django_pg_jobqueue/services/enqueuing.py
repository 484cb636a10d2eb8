"""enqueue: create queued jobs (one or many) with their `created` events, in one statement.

Called inside the caller's `transaction.atomic()`, the job is part of that transaction: it
becomes visible to workers only when the caller commits, and never exists if it rolls back.
The NOTIFY that wakes idle workers is transactional too: PostgreSQL delivers it on commit.
"""
import copy
import hashlib
import json
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.db.models import signals
from django.db.models.base import ModelState
from django.utils import timezone

from .. import catalogue, conf, db, keys, periodic, sql, tracing
from ..arguments import (
    check_concurrency_key,
    check_creatable,
    check_creatable_task,
    check_delay,
    check_idempotency_key,
    check_int,
    check_queue,
    check_retry_policy,
    check_run_at,
    check_unique,
    type_error,
    validate_payload,
)
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..exceptions import (
    IdempotencyConflict,
    InvalidJobArgument,
    JobArgumentTypeError,
    UnknownJobType,
)
from ..models import STATUS_IN_UNIQUE_STATES, Job
from ..registry import is_task_job, registry
from ..retries import RetryPolicy
from ..states import (
    MAX_ATTEMPTS_LIMIT,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    MAX_TYPE_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    Status,
)
from . import claiming, dependencies


@dataclass
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


def _check_api_bounds(named: dict[str, bool], *, queue: str, priority: int,
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
    if named["priority"] and priority > settings.API_MAX_PRIORITY:
        raise InvalidJobArgument("priority", f"must be at most {settings.API_MAX_PRIORITY} "
                                             "for a job created through the API "
                                             f"(JOB_API_MAX_PRIORITY), not {priority}")
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
    if run_at is not None and run_at > timezone.now() + timedelta(seconds=horizon):
        raise InvalidJobArgument("run_at", (
            f"must be at most {horizon} seconds from now for a job created through the API "
            f"(JOB_API_MAX_DELAY_SECONDS), not {run_at.isoformat()}"))


def _prepare(job_type, payload=None, *, priority=None, queue=None, run_at=None,
             delay_seconds=None, idempotency_key=None, max_attempts=None, timeout_seconds=None,
             retry_policy=None, unique=None, after=None, after_failure=None,
             from_api: bool = False, key_scope: str = "",
             concurrency_key=None, concurrency_key_limit=None,
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
        _check_api_bounds(named, queue=queue, priority=priority, timeout_seconds=timeout,
                          run_at=run_at, delay_seconds=delay_seconds, queues_seen=queues_seen)
    idempotency_key = check_idempotency_key(idempotency_key)
    concurrency_key, concurrency_key_limit = check_concurrency_key(concurrency_key,
                                                                    concurrency_key_limit)
    # An API user's key is theirs (keys.py): it never holds back another user's jobs.
    stored_concurrency_key = keys.scoped(key_scope, concurrency_key, MAX_CONCURRENCY_KEY_LENGTH)
    policy = check_retry_policy(retry_policy)
    unique_key = unique_states = unique_period = None
    if unique is not None:
        unique_key, unique_states, unique_period = check_unique(unique, job_type, payload,
                                                                 key_scope)
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
        if unique is not None:  # only then: keys stored before unique jobs existed replay
            request["unique"] = [unique_key, unique_states, unique_period]
        if after:
            request["after"] = [list(ref) if isinstance(ref, tuple) else ref
                                for ref in after] + [after_failure]
        if concurrency_key is not None:  # only then: fingerprints stored before still match
            request.update(concurrency_key=concurrency_key,
                           concurrency_key_limit=concurrency_key_limit)
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
    )


# enqueue()'s keyword arguments: the keys an enqueue_many() item may have besides "type" and
# "payload", and the fields of POST /api/v1/jobs/ (tests/test_vocabulary.py holds them together).
_ENQUEUE_OPTIONS = frozenset({"priority", "queue", "run_at", "delay_seconds", "idempotency_key",
                              "max_attempts", "timeout_seconds", "retry_policy", "unique",
                              "after", "after_failure", "concurrency_key",
                              "concurrency_key_limit"})


def _prepare_item(item, from_api: bool = False, key_scope: str = "",
                  index: int = 0, queues_seen: dict[str, bool] | None = None) -> NewJob:
    """One item of enqueue_many: a dict of enqueue's arguments."""
    if not isinstance(item, dict):
        raise type_error("jobs", "a list of dicts of enqueue()'s arguments", item)
    if "type" not in item:
        raise InvalidJobArgument("type", "is required")
    unknown = sorted(str(k) for k in item if k not in _ENQUEUE_OPTIONS | {"type", "payload"})
    if unknown:
        raise JobArgumentTypeError(unknown[0], "is not an argument of enqueue(); expected "
                                               f"type, payload, {', '.join(sorted(_ENQUEUE_OPTIONS))}")
    return _prepare(item["type"], item.get("payload"), from_api=from_api,
                    key_scope=key_scope, index=index, queues_seen=queues_seen,
                    **{k: v for k, v in item.items() if k in _ENQUEUE_OPTIONS})


# A new job is built the way a query builds one (`from_db`: positional values in field order,
# the fields this insert does not set at their model defaults): several times cheaper than
# keyword `Job(...)`, and the instance is what it is, a saved row (`_state.adding` False).
_JOB_FIELDS = [f.attname for f in Job._meta.concrete_fields]
_JOB_TEMPLATE = [
    None if f.primary_key or f.has_db_default() and not f.has_default() else f.get_default()
    for f in Job._meta.concrete_fields
]
_JOB_TEMPLATE[_JOB_FIELDS.index("status")] = Status.QUEUED
_JOB_TEMPLATE[_JOB_FIELDS.index("attempts")] = 0
_JOB_TEMPLATE[_JOB_FIELDS.index("progress_message")] = ""
(_ID, _TYPE, _QUEUE, _PAYLOAD, _PRIORITY, _MAX_ATTEMPTS, _TIMEOUT, _AVAILABLE_AT, _CREATED_AT,
 _UPDATED_AT, _KEY, _FINGERPRINT, _RETRY_POLICY, _KEY_EXPIRES, _UNIQUE_KEY, _UNIQUE_STATES,
 _CONCURRENCY_KEY, _CONCURRENCY_KEY_LIMIT) = (
    _JOB_FIELDS.index(name) for name in (
        "id", "type", "queue", "payload", "priority", "max_attempts", "timeout_seconds",
        "available_at", "created_at", "updated_at", "idempotency_key", "request_fingerprint",
        "retry_policy", "idempotency_expires_at", "unique_key", "unique_states",
        "concurrency_key", "concurrency_key_limit"))


def _plain_init() -> bool:
    """Whether jobs may be built without Model.__init__: nothing listens to its signals.
    Asked once per insert, not per job of a batch."""
    return not (signals.pre_init.has_listeners(Job) or signals.post_init.has_listeners(Job))


def _new_job(new: NewJob, job_id: int, available_at: datetime, created_at: datetime,
             db_alias: str, plain_init: bool) -> Job:
    values = _JOB_TEMPLATE.copy()
    values[_ID] = job_id
    values[_TYPE] = new.type
    values[_QUEUE] = new.queue
    values[_PAYLOAD] = new.payload
    values[_PRIORITY] = new.priority
    values[_MAX_ATTEMPTS] = new.max_attempts
    values[_TIMEOUT] = new.timeout_seconds
    values[_AVAILABLE_AT] = available_at
    values[_CREATED_AT] = values[_UPDATED_AT] = created_at
    values[_KEY] = new.idempotency_key
    values[_FINGERPRINT] = new.fingerprint
    values[_RETRY_POLICY] = new.retry_policy
    if new.key_ttl_seconds is not None:
        values[_KEY_EXPIRES] = created_at + timedelta(seconds=new.key_ttl_seconds)
    values[_UNIQUE_KEY] = new.unique_key
    values[_UNIQUE_STATES] = new.unique_states
    values[_CONCURRENCY_KEY] = new.concurrency_key
    values[_CONCURRENCY_KEY_LIMIT] = new.concurrency_key_limit
    if not plain_init:
        job = Job.from_db(db_alias, _JOB_FIELDS, values)
        job.created = True
        return job
    # What from_db does, minus Model.__init__'s per-field setattr and its two signals, which
    # nothing listens to: most of enqueue_many's Python time for a batch of 1,000.
    job = Job.__new__(Job)
    job.__dict__.update(zip(_JOB_FIELDS, values, strict=True))
    job._state = state = ModelState()
    state.adding, state.db = False, db_alias
    job.created = True
    return job


def _replay(new: NewJob, existing: Job) -> tuple[Job, bool]:
    """The job an earlier enqueue created under the same key: the same request replays it,
    a different one is a conflict. A unique job's duplicate returns the job that holds the
    unique key, whatever its request was (that is what unique means)."""
    if (new.idempotency_key is not None and existing.idempotency_key == new.idempotency_key
            and existing.request_fingerprint != new.fingerprint):
        raise IdempotencyConflict(new.idempotency_key, existing.id)
    existing.created = False
    return existing, False


def _holders(new_jobs: list[NewJob]) -> dict[tuple[str, str], Job]:
    """The jobs that hold the keys of these new jobs now, by ("idempotency", key) and
    ("unique", key): after an insert that left some out, read in a new snapshot (READ
    COMMITTED), so a holder that committed meanwhile is found."""
    keys = [j.idempotency_key for j in new_jobs if j.idempotency_key is not None]
    unique_keys = [j.unique_key for j in new_jobs if j.unique_key is not None]
    found: dict[tuple[str, str], Job] = {}
    if keys:
        for job in Job.objects.filter(idempotency_key__in=keys):
            found["idempotency", job.idempotency_key] = job
    if unique_keys:
        for job in Job.objects.filter(STATUS_IN_UNIQUE_STATES, unique_key__in=unique_keys):
            found["unique", job.unique_key] = job
    return found


def _holder(new: NewJob, holders: dict) -> Job | None:
    """The job that keeps `new` from being inserted: its idempotency key's, else its unique
    key's."""
    if new.idempotency_key is not None and ("idempotency", new.idempotency_key) in holders:
        return holders["idempotency", new.idempotency_key]
    if new.unique_key is not None:
        return holders.get(("unique", new.unique_key))
    return None


def _release_expired_keys(new_jobs: list[NewJob]) -> None:
    """Before the insert: jobs that hold these keys but no longer count give them up (an
    idempotency key past its expiry, a unique key enqueued longer ago than the period)."""
    periodic = [(j.unique_key, j.unique_period_seconds) for j in new_jobs
                if j.unique_period_seconds is not None]
    if periodic:
        db.fetch_all(sql.RELEASE_UNIQUE_KEYS_IF_OLDER_THAN_PERIOD, {
            "keys": [k for k, _ in periodic], "periods": [p for _, p in periodic]})
    if conf.get().IDEMPOTENCY_KEY_TTL_SECONDS is not None:
        keys = [j.idempotency_key for j in new_jobs if j.idempotency_key is not None]
        if keys:
            db.fetch_all(sql.RELEASE_IDEMPOTENCY_KEYS_IF_EXPIRED, {"keys": keys})


def _keyed(new: NewJob) -> bool:
    return new.idempotency_key is not None or new.unique_key is not None


@tracing.traced_enqueue
def _insert(new_jobs: list[NewJob], *, may_name_jobs: bool = True) -> list[tuple[Job, bool]]:
    if any(new.concurrency_key is not None for new in new_jobs):
        claiming.note_keyed_jobs(True)  # this process's next claim looks for keyed jobs
    if not any(new.after for new in new_jobs):
        if len(new_jobs) == 1:
            return [_insert_one(new_jobs[0])]
        return _insert_many(new_jobs)
    dependencies.check_batch([new.after or [] for new in new_jobs])
    # Jobs enqueued after others: inserted as any job, then made to wait for them in the
    # same transaction (services/dependencies.py), before any worker can see them.
    with queue_atomic():
        results = [_insert_one(new_jobs[0])] if len(new_jobs) == 1 else _insert_many(new_jobs)
        created = [(position, (job.id, new.after, new.after_failure))
                   for position, (new, (job, was_created)) in enumerate(zip(new_jobs, results))
                   if was_created and new.after]
        if created:
            statuses = dependencies.block(created, [job.id for job, _ in results],
                                          may_name_jobs=may_name_jobs)
            for job, _ in results:
                status = statuses.get(job.id)
                if status == Status.WAITING:
                    job.status = Status.WAITING
                elif status == Status.CANCELLED:  # it waited for a job that failed
                    job.refresh_from_db()
    return results


def _insert_one(new: NewJob) -> tuple[Job, bool]:
    keyed = _keyed(new)
    statement = sql.ENQUEUE_ONE[keyed, conf.get().LISTEN_NOTIFY]
    params = (
        new.type, new.queue, new.payload_json, new.priority, new.max_attempts,
        new.timeout_seconds, new.run_at, new.delay_seconds, new.idempotency_key,
        new.fingerprint, new.key_ttl_seconds, new.unique_key,
        None if new.unique_states is None else json.dumps(new.unique_states),
        json.dumps(new.retry_policy) if new.retry_policy is not None else None,
        new.concurrency_key, new.concurrency_key_limit, tracing.carrier_json(),
    )
    if keyed:  # no transaction needed: the release is guarded, the index arbitrates
        _release_expired_keys([new])
        for _ in range(3):
            rows = db.fetch_all(statement, params)
            if rows:
                break
            # Only a keyed insert can insert nothing: a key is taken. Its holder, unless
            # it left meanwhile (finished, or its transaction rolled back): then again.
            holder = _holder(new, _holders([new]))
            if holder is not None:
                return _replay(new, holder)
        else:
            raise RuntimeError(f"enqueue of {new.type!r}: its key was taken three times "
                               "and its holder gone each time")
    else:
        rows = db.fetch_all(statement, params)
    job_id, available_at, created_at = rows[0][:3]
    return _new_job(new, job_id, available_at, created_at, queue_connection().alias, _plain_init()), True


def _row(new: NewJob) -> str:
    """One job as a row object of sql.ENQUEUE_MANY's input (JSON text), its NULL columns left
    out. The payload goes in as the text validation encoded, not encoded again."""
    row = {"type": new.type, "queue": new.queue, "priority": new.priority,
           "max_attempts": new.max_attempts}
    if new.timeout_seconds is not None:
        row["timeout_seconds"] = new.timeout_seconds
    if new.run_at is not None:  # validated: an aware datetime, so the ISO text has an offset
        row["run_at"] = new.run_at.isoformat()
    if new.delay_seconds:
        row["delay"] = new.delay_seconds
    if new.idempotency_key is not None:
        row["idempotency_key"] = new.idempotency_key
        row["fingerprint"] = new.fingerprint
        if new.key_ttl_seconds is not None:
            row["key_ttl"] = new.key_ttl_seconds
    if new.unique_key is not None:
        row["unique_key"] = new.unique_key
        row["unique_states"] = new.unique_states
    if new.retry_policy is not None:
        row["retry_policy"] = new.retry_policy
    if new.concurrency_key is not None:
        row["concurrency_key"] = new.concurrency_key
        row["concurrency_key_limit"] = new.concurrency_key_limit
    return f'{json.dumps(row)[:-1]},"payload":{new.payload_json}}}'


def _insert_many(new_jobs: list[NewJob]) -> list[tuple[Job, bool]]:
    keyed = any(_keyed(j) for j in new_jobs)
    statement = sql.ENQUEUE_MANY[keyed, conf.get().LISTEN_NOTIFY]
    params = {"rows": f"[{','.join(_row(j) for j in new_jobs)}]", "trace": tracing.carrier_json()}
    # One statement is atomic by itself. Only a batch with idempotency keys needs a
    # transaction around it, so that a conflicting key found afterwards undoes the batch.
    with queue_atomic() if keyed else nullcontext():
        if keyed:
            _release_expired_keys(new_jobs)
        rows = db.fetch_all(statement, params)
        alias, plain_init = queue_connection().alias, _plain_init()
        if not keyed:
            return [(_new_job(new, row[0], row[2], row[3], alias, plain_init), True)
                    for new, row in zip(new_jobs, rows, strict=True)]
        if len(rows) == len(new_jobs):  # every one inserted: rows come back in input order
            return [(_new_job(new, row[0], row[2], row[3], alias, plain_init), True)
                    for new, row in zip(new_jobs, sorted(rows), strict=True)]
        # Some were left out: match the inserted rows to the input by their keys (a row of
        # the batch with neither key is always inserted, in input order).
        inserted_by_key: dict[tuple[str, str | None], tuple] = {
            ("idempotency", r[1]) if r[1] is not None else ("unique", r[4]): r
            for r in rows if r[1] is not None or r[4] is not None}
        unkeyed = iter(sorted(r for r in rows if r[1] is None and r[4] is None))
        holders = _holders(new_jobs)
        out: list[tuple[Job, bool]] = []
        in_batch: dict[tuple[str, str], Job] = {}  # a key given twice in one batch: the first
        for new in new_jobs:
            if not _keyed(new):
                row = next(unkeyed)
                out.append((_new_job(new, row[0], row[2], row[3], alias, plain_init), True))
                continue
            mine = ("idempotency", new.idempotency_key) if new.idempotency_key is not None \
                else ("unique", new.unique_key)
            mine_row = inserted_by_key.pop(mine, None)
            if mine_row is not None and mine_row[4] == new.unique_key:
                job = _new_job(new, mine_row[0], mine_row[2], mine_row[3], alias, plain_init)
                for kind, key in (("idempotency", new.idempotency_key), ("unique", new.unique_key)):
                    if key is not None:
                        in_batch[kind, key] = job
                out.append((job, True))
                continue
            holder = _holder(new, in_batch)
            if holder is not None:  # another instance: the first item's says it was created
                holder = copy.copy(holder)
            else:
                holder = _holder(new, holders)
            if holder is None:
                raise RuntimeError(f"enqueue_many: the job of {new.type!r} was left out and "
                                   "no job holds its key")
            out.append(_replay(new, holder))
        return out


def enqueue_or_get(job_type: str, payload: dict | None = None, *, from_api: bool = False,
                   key_scope: str = "", may_name_jobs: bool = True,
                   **options) -> tuple[Job, bool]:
    """Enqueue, or get the job that holds the same idempotency key or unique key (as Django's
    get_or_create): returns (job, created). `enqueue` is its thin form. `from_api=True` (the
    API's views): only the types of JOB_API_CREATABLE_TYPES and the tasks of
    JOB_API_CREATABLE_TASKS; anything else raises `NotCreatable`. `key_scope`: the API
    user's scope (keys.py), under which their unique and concurrency keys are stored.
    `may_name_jobs` False (an API user who may not see jobs): a job id in `after` is refused
    as one that does not exist."""
    return _insert([_prepare(job_type, payload, from_api=from_api, key_scope=key_scope,
                             **options)], may_name_jobs=may_name_jobs)[0]


def enqueue(type: str, payload: dict | None = None, *, priority: int | None = None,
            queue: str | None = None, run_at: datetime | None = None,
            delay_seconds: float | timedelta | None = None, idempotency_key: str | None = None,
            max_attempts: int | None = None, timeout_seconds: int | None = None,
            retry_policy: RetryPolicy | dict | None = None, unique: dict | None = None,
            after: list | None = None, after_failure: str | None = None,
            concurrency_key: str | None = None, concurrency_key_limit: int | None = None) -> Job:
    """Enqueue one job of a registered type and return it (the row as stored), its `created`
    attribute False when an existing job was returned instead (an idempotent replay, or the
    job that holds the same unique key).

    - `payload`: a dict that encodes to JSON PostgreSQL can store: string keys, no NUL
      characters or lone surrogates, no NaN or infinities, nested at most
      `states.MAX_PAYLOAD_DEPTH` deep, at most JOB_MAX_PAYLOAD_BYTES of JSON.
    - `priority`: an int from `states.PRIORITY_MIN` to `PRIORITY_MAX` (-100..100), higher runs
      first (default: the type's, else 0).
    - `queue`: a queue name matching `states.QUEUE_NAME_PATTERN` (default: the type's queue,
      else "default").
    - `type`: a registered job type (a `@handler`'s name).
    - `run_at`: a timezone-aware datetime from 2000-01-01 UTC (`states.RUN_AT_MIN`): not
      runnable before it. `delay_seconds`: seconds (a number or a timedelta), 0 to
      `states.MAX_DELAY_SECONDS`. Not both.
    - `idempotency_key`: 1 to 255 characters; a second enqueue with the same key and the same
      arguments returns the first job; with different arguments it raises `IdempotencyConflict`.
      With JOB_IDEMPOTENCY_KEY_TTL_SECONDS set, the key replays only that long.
    - `unique`: at most one job of this type and key counts at a time; a duplicate returns it.
      A dict of `key` (a str, 1 to `states.MAX_UNIQUE_KEY_LENGTH` characters) or `fields` (a
      list of payload keys whose values make the key; neither: the whole payload), `states`
      (the statuses in which a job counts, at least "queued" and "running"; default: those
      two, or every status when a period is given) and `period_seconds` (a job counts only
      within this many seconds of its enqueue). See docs/how-to/unique-jobs.md.
    - `after`: a list of job ids (or Job objects), at most JOB_MAX_AFTER: the job waits
      (status "waiting") until every one of them succeeded. `after_failure`: what it does
      when one fails for good or is cancelled, "cancel" (the default: it is cancelled too,
      the reason in its timeline) or "run" (it runs anyway once they all finished). In
      enqueue_many, an item may also wait for an earlier item of its batch: {"item": i}.
      See docs/how-to/dependencies.md.
    - `max_attempts` (1 to `states.MAX_ATTEMPTS_LIMIT`) and `timeout_seconds` (whole seconds,
      1 to `states.MAX_TIMEOUT_SECONDS`): override the type's defaults.
    - `retry_policy`: this job's own `RetryPolicy` (or its JSON shape: `{"delays_seconds":
      [1, 5, 30]}`, `{"base_seconds": 2, "factor": 3, "max_seconds": 600}`, with `jitter`,
      `retry_on`, `give_up_on` exception names): replaces its type's policy. Data only, as
      through the API: a function policy is for handlers and tasks (docs/how-to/retries.md).
    - `concurrency_key` (1 to 200 characters, e.g. "customer:42") and `concurrency_key_limit`
      (1 to 1000, default 1): at most that many jobs with this key run at once, across every
      worker; the others wait, without holding back jobs of other keys
      (docs/how-to/concurrency-keys.md).

    The names are the REST API's (`POST /api/v1/jobs/`) and `enqueue_many()` items' keys.

    Inside `transaction.atomic()` the job commits or rolls back with the caller's work.
    Raises `InvalidJobArgument` (a ValueError; `JobArgumentTypeError`, also a TypeError, for
    a value of the wrong type; `UnknownJobType` for a type no handler is registered for;
    `JobPayloadTooLarge`) naming the argument in `.argument`. Nothing is written then.
    """
    job, _ = enqueue_or_get(
        type, payload, priority=priority, queue=queue, run_at=run_at,
        delay_seconds=delay_seconds, idempotency_key=idempotency_key,
        max_attempts=max_attempts, timeout_seconds=timeout_seconds,
        retry_policy=retry_policy, unique=unique, after=after, after_failure=after_failure,
        concurrency_key=concurrency_key, concurrency_key_limit=concurrency_key_limit,
    )
    return job


async def aenqueue(type: str, payload: dict | None = None, *, priority: int | None = None,
                   queue: str | None = None, run_at: datetime | None = None,
                   delay_seconds: float | timedelta | None = None,
                   idempotency_key: str | None = None, max_attempts: int | None = None,
                   timeout_seconds: int | None = None,
                   retry_policy: RetryPolicy | dict | None = None, unique: dict | None = None,
                   after: list | None = None, after_failure: str | None = None,
                   concurrency_key: str | None = None,
                   concurrency_key_limit: int | None = None) -> Job:
    """`enqueue()` for async code (an async view, an async handler): the same arguments, the
    same checks and the same exceptions, because it is `enqueue()`, run by
    `sync_to_async` on the thread Django keeps for the request's synchronous work (its
    database connection, and the transaction of a `sync_to_async` function calling it).

    To enqueue in the same transaction as a model write, put both in one synchronous function
    run with `sync_to_async` (Django's `atomic()` is sync-only): see docs/how-to/async.md.
    """
    return await sync_to_async(enqueue)(
        type, payload, priority=priority, queue=queue, run_at=run_at,
        delay_seconds=delay_seconds, idempotency_key=idempotency_key,
        max_attempts=max_attempts, timeout_seconds=timeout_seconds, retry_policy=retry_policy,
        unique=unique, after=after, after_failure=after_failure,
        concurrency_key=concurrency_key, concurrency_key_limit=concurrency_key_limit)


def enqueue_many(jobs: list[dict], *, from_api: bool = False) -> list[Job]:
    """Enqueue many jobs in one statement, all or nothing.

    Each item is a dict of `enqueue`'s arguments: {"type": ..., "payload": ..., "priority": ...}.
    Every item is validated before anything is written: a refused item raises
    `InvalidJobArgument` with `.index` set to its position, and no job of the batch exists.
    A job whose idempotency key or unique key is held (by an earlier job, or by an earlier
    item of the batch) is not created: that job comes back in its place, `created` False.
    `from_api=True`: as `enqueue_or_get`'s.
    """
    return [job for job, _ in enqueue_many_or_get(jobs, from_api=from_api)]


async def aenqueue_many(jobs: list[dict]) -> list[Job]:
    """`enqueue_many()` for async code: the same items, checks and exceptions (it is
    `enqueue_many()`, run by `sync_to_async` as `aenqueue` is)."""
    return await sync_to_async(enqueue_many)(jobs)


def enqueue_many_or_get(jobs: list[dict], *, from_api: bool = False, key_scope: str = "",
                        may_name_jobs: bool = True) -> list[tuple[Job, bool]]:
    """As `enqueue_many`, each job with whether it was created (False: an idempotent replay,
    the job an earlier enqueue with its key created, or the holder of its unique key).
    `may_name_jobs`: as `enqueue_or_get`'s."""
    prepared = []
    queues_seen: dict[str, bool] = {}  # the API's bounds: each queue looked up once
    for index, item in enumerate(jobs):
        try:
            prepared.append(_prepare_item(item, from_api, key_scope, index, queues_seen))
        except InvalidJobArgument as exc:
            raise exc.at(index) from None
    if not prepared:
        return []
    return _insert(prepared, may_name_jobs=may_name_jobs)
