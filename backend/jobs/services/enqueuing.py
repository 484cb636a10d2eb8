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


_INSERT = """
WITH input AS (
    SELECT * FROM unnest(%(types)s::text[], %(queues)s::text[], %(payloads)s::jsonb[],
                         %(priorities)s::smallint[], %(max_attempts)s::int[],
                         %(timeouts)s::int[], %(run_ats)s::timestamptz[], %(delays)s::float8[],
                         %(keys)s::text[], %(fingerprints)s::text[])
        WITH ORDINALITY AS u(type, queue, payload, priority, max_attempts, timeout_seconds,
                             run_at, delay, idempotency_key, fingerprint, n)
),
ins AS (
    INSERT INTO jobs (type, queue, payload, status, priority, attempts, max_attempts,
                      timeout_seconds, available_at, created_at, updated_at, progress_message,
                      idempotency_key, request_fingerprint)
    SELECT type, queue, payload, 'queued', priority, 0, max_attempts, timeout_seconds,
           COALESCE(run_at, now() + make_interval(secs => delay)), now(), now(), '',
           idempotency_key, fingerprint
    FROM input ORDER BY n
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue, priority, idempotency_key, available_at, created_at
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT id, 'created', 0, '',
           jsonb_build_object('queue', queue, 'priority', priority) || %(trace)s::jsonb, now()
    FROM ins
)
SELECT id, idempotency_key, available_at, created_at {notify} FROM ins ORDER BY id
"""


@tracing.traced_enqueue
def _insert(new_jobs: list[NewJob]) -> list[tuple[Job, bool]]:
    notify = (
        f", pg_notify('{sql.NOTIFY_CHANNEL}', queue)" if conf.get().LISTEN_NOTIFY else ""
    )
    params = {
        "types": [j.type for j in new_jobs],
        "queues": [j.queue for j in new_jobs],
        "payloads": [json.dumps(j.payload) for j in new_jobs],
        "priorities": [j.priority for j in new_jobs],
        "max_attempts": [j.max_attempts for j in new_jobs],
        "timeouts": [j.timeout_seconds for j in new_jobs],
        "run_ats": [j.run_at for j in new_jobs],
        "delays": [j.delay_seconds for j in new_jobs],
        "keys": [j.idempotency_key for j in new_jobs],
        "fingerprints": [j.fingerprint for j in new_jobs],
        "trace": tracing.carrier_json(),
    }
    # One statement is atomic by itself. Only a batch with idempotency keys needs a
    # transaction around it, so that a conflicting key found afterwards undoes the batch.
    needs_atomic = len(new_jobs) > 1 and any(j.idempotency_key for j in new_jobs)
    with transaction.atomic() if needs_atomic else nullcontext():
        rows = db.fetch_all(_INSERT.format(notify=notify), params)
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
                job = existing[new.idempotency_key]
                if job.request_fingerprint != new.fingerprint:
                    raise IdempotencyConflict(new.idempotency_key, job.id)
                out.append((job, False))
                continue
            row = inserted_by_key[new.idempotency_key] if new.idempotency_key else next(unkeyed)
            out.append((
                Job(
                    id=row[0], type=new.type, queue=new.queue, payload=new.payload,
                    status=Status.QUEUED, priority=new.priority, attempts=0,
                    max_attempts=new.max_attempts, timeout_seconds=new.timeout_seconds,
                    available_at=row[2], created_at=row[3], updated_at=row[3],
                    idempotency_key=new.idempotency_key, request_fingerprint=new.fingerprint,
                    progress_message="",
                ),
                True,
            ))
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
