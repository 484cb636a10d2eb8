"""enqueue's second half: prepared jobs (`preparing.NewJob`) written with their `created`
events, one statement for one job and one for many; an idempotency or unique key already
held returns the job that holds it (replayed), and a job with `after=` waits blocked.
"""
import copy
import json
from contextlib import nullcontext
from datetime import datetime, timedelta

from django.db.models import signals
from django.db.models.base import ModelState

from .. import conf, db, sql, tracing
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..exceptions import (
    IdempotencyConflict,
)
from ..models import STATUS_IN_UNIQUE_STATES, Job
from ..states import (
    Status,
)
from . import claiming, dependencies
from .preparing import NewJob

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
_JOB_DEFAULTS = dict(zip(_JOB_FIELDS, _JOB_TEMPLATE, strict=True))


def _plain_init() -> bool:
    """Whether jobs may be built without Model.__init__: nothing listens to its signals.
    Asked once per insert, not per job of a batch."""
    return not (signals.pre_init.has_listeners(Job) or signals.post_init.has_listeners(Job))


def _new_job(new: NewJob, job_id: int, available_at: datetime, created_at: datetime,
             db_alias: str, plain_init: bool, expires_at: datetime | None = None) -> Job:
    values = {
        "id": job_id, "type": new.type, "queue": new.queue, "payload": new.payload,
        "priority": new.priority, "max_attempts": new.max_attempts,
        "timeout_seconds": new.timeout_seconds, "available_at": available_at,
        "created_at": created_at, "updated_at": created_at,
        "idempotency_key": new.idempotency_key, "request_fingerprint": new.fingerprint,
        "retry_policy": new.retry_policy, "unique_key": new.unique_key,
        "unique_states": new.unique_states, "concurrency_key": new.concurrency_key,
        "concurrency_key_limit": new.concurrency_key_limit, "fairness_key": new.fairness_key,
        "expires_at": expires_at, "debounce_key": new.debounce_key,
    }
    if new.key_ttl_seconds is not None:
        values["idempotency_expires_at"] = created_at + timedelta(seconds=new.key_ttl_seconds)
    if not plain_init:
        job = Job.from_db(db_alias, _JOB_FIELDS, [values.get(name, default) for name, default
                                                   in _JOB_DEFAULTS.items()])
        job.created = True
        return job
    # What from_db does, minus Model.__init__'s per-field setattr and its two signals, which
    # nothing listens to: most of enqueue_many's Python time for a batch of 1,000. The fields
    # this insert does not set take their defaults (_JOB_DEFAULTS), the others `values`.
    job = Job.__new__(Job)
    attributes = job.__dict__
    attributes.update(_JOB_DEFAULTS)
    attributes.update(values)
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
def insert(new_jobs: list[NewJob], *, may_name_jobs: bool = True) -> list[tuple[Job, bool]]:
    if any(new.concurrency_key is not None for new in new_jobs):
        claiming.note_keyed_jobs(True)  # this process's next claim looks for keyed jobs
    if claiming.fair_queues_known():  # and for jobs without a fairness key in a fair queue
        claiming.note_unkeyed_jobs({new.queue for new in new_jobs if new.fairness_key is None})
    if any(new.debounce_key is not None for new in new_jobs):
        if len(new_jobs) == 1:
            return [_insert_debounced(new_jobs[0])]
        # A batch with debounced jobs (never with `after`: preparing refuses both): one
        # statement per job, in input order, in one transaction. A debounce key given twice
        # updates the job the first one inserted, as two enqueues would.
        with queue_atomic():
            return [_insert_debounced(new) if new.debounce_key is not None
                    else _insert_one(new) for new in new_jobs]
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
        new.concurrency_key, new.concurrency_key_limit, new.fairness_key, new.expires_at,
        new.expires_in_seconds, tracing.carrier_json(),
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
    job_id, available_at, created_at, expires_at = rows[0][:4]
    return _new_job(new, job_id, available_at, created_at, queue_connection().alias,
                    _plain_init(), expires_at), True


def _insert_debounced(new: NewJob) -> tuple[Job, bool]:
    """A debounced job: inserted, due after its quiet period, or, while the job of its key
    is still queued, that job with this payload and its start pushed back (created False).
    One statement, arbitrated by job_debounce_key_unique (sql.ENQUEUE_ONE_DEBOUNCED)."""
    rows = db.fetch_all(sql.ENQUEUE_ONE_DEBOUNCED[conf.get().LISTEN_NOTIFY], {
        "type": new.type, "queue": new.queue, "payload": new.payload_json,
        "priority": new.priority, "max_attempts": new.max_attempts,
        "timeout_seconds": new.timeout_seconds, "period": new.debounce_seconds,
        "retry_policy": json.dumps(new.retry_policy) if new.retry_policy is not None else None,
        "concurrency_key": new.concurrency_key,
        "concurrency_key_limit": new.concurrency_key_limit,
        "fairness_key": new.fairness_key, "expires_at": new.expires_at,
        "expires_in": new.expires_in_seconds, "debounce_key": new.debounce_key,
        "trace": tracing.carrier_json(),
    })
    job_id, available_at, created_at, expires_at, inserted = rows[0][:5]
    if not inserted:  # the pending job, as it is now (its first enqueue's other options)
        job = Job.objects.get(pk=job_id)
        job.created = False
        return job, False
    return _new_job(new, job_id, available_at, created_at, queue_connection().alias,
                    _plain_init(), expires_at), True


def _sent(values: list) -> list | None:
    """A column of sql.ENQUEUE_MANY as sent: NULL when no job of the batch sets it (unnest pads
    it with NULLs), else the list."""
    return None if values.count(None) == len(values) else values


def _floats(values: list) -> list | None:
    """A float8 column, as `_sent`: psycopg refuses an array that mixes int and float (a TTL
    setting is an int, a validated delay a float)."""
    if values.count(None) == len(values):
        return None
    return [None if v is None else float(v) for v in values]


def _json(values: list) -> list | None:
    """A jsonb column, as `_sent`: each value as its JSON text."""
    if values.count(None) == len(values):
        return None
    return [None if v is None else json.dumps(v) for v in values]


def _columns(jobs: list[NewJob]) -> dict:
    """sql.ENQUEUE_MANY's parameters: one array per column, in input order, each value as
    validation left it (the payload as the JSON text it encoded, not encoded again); the
    columns no job sets, NULL."""
    return dict(zip(sql.ENQUEUE_MANY_COLUMNS, (
        [j.type for j in jobs], [j.queue for j in jobs], [j.payload_json for j in jobs],
        [j.priority for j in jobs], [j.max_attempts for j in jobs],
        _sent([j.timeout_seconds for j in jobs]), _sent([j.run_at for j in jobs]),
        _floats([j.delay_seconds or None for j in jobs]),
        _sent([j.idempotency_key for j in jobs]), _sent([j.fingerprint for j in jobs]),
        _floats([j.key_ttl_seconds for j in jobs]), _sent([j.unique_key for j in jobs]),
        _json([j.unique_states for j in jobs]), _json([j.retry_policy for j in jobs]),
        _sent([j.concurrency_key for j in jobs]),
        _sent([j.concurrency_key_limit for j in jobs]), _sent([j.fairness_key for j in jobs]),
        _sent([j.expires_at for j in jobs]),
        _floats([j.expires_in_seconds for j in jobs]),
    ), strict=True))


def _insert_many(new_jobs: list[NewJob]) -> list[tuple[Job, bool]]:
    keyed = any(_keyed(j) for j in new_jobs)
    statement = sql.ENQUEUE_MANY[keyed, conf.get().LISTEN_NOTIFY]
    params = _columns(new_jobs)
    params["trace"] = tracing.carrier_json()
    # One statement is atomic by itself. Only a batch with idempotency keys needs a
    # transaction around it, so that a conflicting key found afterwards undoes the batch.
    with queue_atomic() if keyed else nullcontext():
        if keyed:
            _release_expired_keys(new_jobs)
        rows = db.fetch_all(statement, params)
        alias, plain_init = queue_connection().alias, _plain_init()
        if not keyed:
            return [(_new_job(new, row[0], row[2], row[3], alias, plain_init, row[5]), True)
                    for new, row in zip(new_jobs, rows, strict=True)]
        if len(rows) == len(new_jobs):  # every one inserted: rows come back in input order
            return [(_new_job(new, row[0], row[2], row[3], alias, plain_init, row[5]), True)
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
                out.append((_new_job(new, row[0], row[2], row[3], alias, plain_init, row[5]),
                            True))
                continue
            mine = ("idempotency", new.idempotency_key) if new.idempotency_key is not None \
                else ("unique", new.unique_key)
            mine_row = inserted_by_key.pop(mine, None)
            if mine_row is not None and mine_row[4] == new.unique_key:
                job = _new_job(new, mine_row[0], mine_row[2], mine_row[3], alias, plain_init,
                               mine_row[5])
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
