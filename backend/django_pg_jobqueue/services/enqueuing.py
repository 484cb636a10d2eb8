"""enqueue: create queued jobs (one or many) with their `created` events, in one statement.

Called inside the caller's `transaction.atomic()`, the job is part of that transaction: it
becomes visible to workers only when the caller commits, and never exists if it rolls back.
The NOTIFY that wakes idle workers is transactional too: PostgreSQL delivers it on commit.
"""
import hashlib
from contextlib import nullcontext
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import signals
from django.db.models.base import ModelState

from .. import conf, db, sql, tracing
from ..exceptions import IdempotencyConflict, UnknownJobType
from ..models import Job
from ..registry import registry
from ..states import Status


@dataclass
class NewJob:
    type: str
    payload: dict
    priority: int
    queue: str
    max_attempts: int
    timeout_seconds: int | None
    run_at: datetime | None
    delay_seconds: float
    idempotency_key: str | None
    fingerprint: str | None


def _fingerprint(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _prepare(job_type, payload=None, *, priority=None, queue=None, run_at=None, delay=None,
             idempotency_key=None, max_attempts=None, timeout=None) -> NewJob:
    spec = registry.get(job_type)
    if spec is None:
        raise UnknownJobType(job_type)
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ValueError("payload must be a JSON object (a dict)")
    if isinstance(delay, timedelta):
        delay = delay.total_seconds()
    if run_at is not None and delay:
        raise ValueError("give run_at or delay, not both")
    priority = spec.priority if priority is None else int(priority)
    if not -100 <= priority <= 100:
        raise ValueError("priority must be between -100 and 100")
    settings = conf.get()
    max_attempts = max_attempts or spec.max_attempts or settings.DEFAULT_MAX_ATTEMPTS
    if timeout is None:
        timeout = spec.timeout_seconds or settings.DEFAULT_TIMEOUT_SECONDS
    queue = queue or spec.queue or "default"
    fingerprint = None
    if idempotency_key is not None:
        fingerprint = _fingerprint({
            "type": job_type, "payload": payload, "priority": priority, "queue": queue,
            "max_attempts": max_attempts, "timeout": timeout, "run_at": run_at, "delay": delay,
        })
    return NewJob(
        type=job_type, payload=payload, priority=priority, queue=queue,
        max_attempts=int(max_attempts), timeout_seconds=int(timeout) if timeout else None,
        run_at=run_at, delay_seconds=float(delay or 0), idempotency_key=idempotency_key,
        fingerprint=fingerprint,
    )


# Every job is created with its `created` event in the same statement (the event feed and the
# dashboard start from it; with tracing on, its data carries the producer's trace context) and,
# with LISTEN_NOTIFY on, a NOTIFY per queue that PostgreSQL delivers at commit. All times are
# the transaction's clock, now(). The two statements share these pieces:
_INSERT_INTO_JOBS = """INSERT INTO jobs (type, queue, payload, status, priority, attempts,
                      max_attempts, timeout_seconds, available_at, created_at, updated_at,
                      progress_message, idempotency_key, request_fingerprint)"""


def _created_events(trace_param: str) -> str:
    return f"""events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'created', 0, '',
           jsonb_build_object('queue', queue, 'priority', priority) || {trace_param}::jsonb, now()
    FROM ins
)"""


# One job (the common case: `enqueue()` from a view or a task): plain VALUES with scalar
# parameters, prepared once per connection.
_INSERT_ONE = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    VALUES (%s::text, %s::text, %s::jsonb, 'queued', %s::smallint, 0, %s::int, %s::int,
            COALESCE(%s::timestamptz, now() + make_interval(secs => %s::float8)), now(), now(),
            '', %s::text, %s::text)
    {on_conflict}
    RETURNING id, queue, priority, available_at, created_at
),
""" + _created_events("%s") + """
SELECT id, available_at, created_at {notify} FROM ins
"""

# Many jobs: one JSON array of row objects (a key left out is NULL), expanded in input order.
# One jsonb parameter is far cheaper to send than ten parallel arrays (psycopg dumps arrays
# element by element in Python), and the payloads travel as JSON inside it, encoded once.
_INSERT_MANY = """
WITH ins AS (
    """ + _INSERT_INTO_JOBS + """
    SELECT type, queue, payload, 'queued', priority, 0, max_attempts, timeout_seconds,
           COALESCE(run_at, now() + make_interval(secs => COALESCE(delay, 0))), now(), now(),
           '', idempotency_key, fingerprint
    FROM ROWS FROM (jsonb_to_recordset(%(rows)s::jsonb) AS (
            type text, queue text, payload jsonb, priority smallint, max_attempts int,
            timeout_seconds int, run_at timestamptz, delay float8, idempotency_key text,
            fingerprint text))
        WITH ORDINALITY AS input(type, queue, payload, priority, max_attempts, timeout_seconds,
                                 run_at, delay, idempotency_key, fingerprint, n)
    ORDER BY n
    {on_conflict}
    RETURNING id, queue, priority, idempotency_key, available_at, created_at
),
""" + _created_events("%(trace)s") + """
SELECT id, idempotency_key, available_at, created_at FROM ins
{notify_once}
ORDER BY id
"""

# Only a keyed insert names the arbiter: ON CONFLICT makes every row a speculative insertion
# (an extra WAL record per row) even when its key is NULL.
_ON_CONFLICT = "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
_NOTIFY = f", pg_notify('{sql.NOTIFY_CHANNEL}', queue)"
# A batch notifies once per queue, not once per row: PostgreSQL would fold the duplicates at
# commit anyway, but only after paying for each pg_notify call (a few us a row). An
# uncorrelated condition is evaluated once, before the rows are returned.
_NOTIFY_ONCE = f"""WHERE (SELECT count(pg_notify('{sql.NOTIFY_CHANNEL}', queue))
       FROM (SELECT DISTINCT queue FROM ins) AS queues) >= 0"""
_STATEMENTS = {
    (template, keyed, notify): template.format(
        on_conflict=_ON_CONFLICT if keyed else "", notify=_NOTIFY if notify else "",
        notify_once=_NOTIFY_ONCE if notify else "")
    for template in (_INSERT_ONE, _INSERT_MANY) for keyed in (False, True)
    for notify in (False, True)
}

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
 _UPDATED_AT, _KEY, _FINGERPRINT) = (_JOB_FIELDS.index(name) for name in (
    "id", "type", "queue", "payload", "priority", "max_attempts", "timeout_seconds",
    "available_at", "created_at", "updated_at", "idempotency_key", "request_fingerprint"))


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
    if not plain_init:
        return Job.from_db(db_alias, _JOB_FIELDS, values)
    # What from_db does, minus Model.__init__'s per-field setattr and its two signals, which
    # nothing listens to: most of enqueue_many's Python time for a batch of 1,000.
    job = Job.__new__(Job)
    job.__dict__.update(zip(_JOB_FIELDS, values))
    job._state = state = ModelState()
    state.adding, state.db = False, db_alias
    return job


def _replay(new: NewJob, existing: Job) -> tuple[Job, bool]:
    """The job an earlier enqueue created under the same key: the same request replays it,
    a different one is a conflict."""
    if existing.request_fingerprint != new.fingerprint:
        raise IdempotencyConflict(new.idempotency_key, existing.id)
    return existing, False


@tracing.traced_enqueue
def _insert(new_jobs: list[NewJob]) -> list[tuple[Job, bool]]:
    if len(new_jobs) == 1:
        return [_insert_one(new_jobs[0])]
    return _insert_many(new_jobs)


def _insert_one(new: NewJob) -> tuple[Job, bool]:
    keyed = new.idempotency_key is not None
    statement = _STATEMENTS[_INSERT_ONE, keyed, conf.get().LISTEN_NOTIFY]
    rows = db.fetch_all(statement, (
        new.type, new.queue, json.dumps(new.payload), new.priority, new.max_attempts,
        new.timeout_seconds, new.run_at, new.delay_seconds, new.idempotency_key,
        new.fingerprint, tracing.carrier_json(),
    ))
    if not rows:  # only a keyed insert can insert nothing: the key is taken
        return _replay(new, Job.objects.get(idempotency_key=new.idempotency_key))
    job_id, available_at, created_at = rows[0][:3]
    return _new_job(new, job_id, available_at, created_at, connection.alias, _plain_init()), True


def _row(new: NewJob) -> dict:
    """One job as a row object of _INSERT_MANY's input, its NULL columns left out."""
    row = {"type": new.type, "queue": new.queue, "payload": new.payload,
           "priority": new.priority, "max_attempts": new.max_attempts}
    if new.timeout_seconds is not None:
        row["timeout_seconds"] = new.timeout_seconds
    if new.run_at is not None:  # a string is left for PostgreSQL to parse, as a parameter was
        row["run_at"] = new.run_at.isoformat() if isinstance(new.run_at, datetime) else new.run_at
    if new.delay_seconds:
        row["delay"] = new.delay_seconds
    if new.idempotency_key is not None:
        row["idempotency_key"] = new.idempotency_key
        row["fingerprint"] = new.fingerprint
    return row


def _insert_many(new_jobs: list[NewJob]) -> list[tuple[Job, bool]]:
    keyed = any(j.idempotency_key is not None for j in new_jobs)
    statement = _STATEMENTS[_INSERT_MANY, keyed, conf.get().LISTEN_NOTIFY]
    params = {"rows": json.dumps([_row(j) for j in new_jobs]), "trace": tracing.carrier_json()}
    # One statement is atomic by itself. Only a batch with idempotency keys needs a
    # transaction around it, so that a conflicting key found afterwards undoes the batch.
    with transaction.atomic() if keyed else nullcontext():
        rows = db.fetch_all(statement, params)
        alias, plain_init = connection.alias, _plain_init()
        if not keyed:
            return [(_new_job(new, row[0], row[2], row[3], alias, plain_init), True)
                    for new, row in zip(new_jobs, rows)]
        inserted_by_key = {r[1]: r for r in rows if r[1] is not None}
        unkeyed = iter(r for r in rows if r[1] is None)
        missing_keys = [
            j.idempotency_key for j in new_jobs
            if j.idempotency_key is not None and j.idempotency_key not in inserted_by_key
        ]
        existing = {
            job.idempotency_key: job
            for job in Job.objects.filter(idempotency_key__in=missing_keys)
        } if missing_keys else {}
        out: list[tuple[Job, bool]] = []
        for new in new_jobs:
            if new.idempotency_key is not None and new.idempotency_key in existing:
                out.append(_replay(new, existing[new.idempotency_key]))
                continue
            row = inserted_by_key[new.idempotency_key] if new.idempotency_key else next(unkeyed)
            out.append((_new_job(new, row[0], row[2], row[3], alias, plain_init), True))
        return out


def enqueue_job(job_type: str, payload: dict | None = None, **options) -> tuple[Job, bool]:
    """Like `enqueue`, and also says whether the job was created (False: idempotent replay)."""
    return _insert([_prepare(job_type, payload, **options)])[0]


def enqueue(job_type: str, payload: dict | None = None, *, priority: int | None = None,
            queue: str | None = None, run_at: datetime | None = None,
            delay: float | timedelta | None = None, idempotency_key: str | None = None,
            max_attempts: int | None = None, timeout: int | None = None) -> Job:
    """Enqueue one job of a registered type and return it.

    - `priority`: -100..100, higher runs first (default: the type's default, else 0).
    - `queue`: the named queue (default: the type's queue, else "default").
    - `run_at` / `delay`: not runnable before this time / for this many seconds.
    - `idempotency_key`: a second enqueue with the same key and the same arguments returns
      the first job; with different arguments it raises `IdempotencyConflict`.
    - `max_attempts`, `timeout` (seconds): override the type's defaults.

    Inside `transaction.atomic()` the job commits or rolls back with the caller's work.
    Raises `UnknownJobType` for a type no handler is registered for, `ValueError` for bad
    arguments.
    """
    job, _ = enqueue_job(
        job_type, payload, priority=priority, queue=queue, run_at=run_at, delay=delay,
        idempotency_key=idempotency_key, max_attempts=max_attempts, timeout=timeout,
    )
    return job


def enqueue_many(jobs: list[dict]) -> list[Job]:
    """Enqueue many jobs in one statement, all or nothing.

    Each item is a dict of `enqueue`'s arguments: {"type": ..., "payload": ..., "priority": ...}.
    """
    prepared = [_prepare(item["type"], item.get("payload"), **{
        k: v for k, v in item.items() if k not in ("type", "payload")
    }) for item in jobs]
    if not prepared:
        return []
    return [job for job, _ in _insert(prepared)]
