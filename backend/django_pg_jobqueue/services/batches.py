"""Batches: jobs enqueued together (`enqueue_batch`), whose callbacks are enqueued once every
member finished: `on_complete` always, `on_success` when every member succeeded, `on_failure`
when one did not (failed for good, was cancelled, or was deleted before the batch finished).

Who finishes a batch (docs/how-to/batches.md): `settle`, called right after a member's outcome
committed by whatever wrote it (services/finishing.py's hook, which every outcome writer
calls: the worker's completion and failure, whose statements return the member's batch, its
releases, the reaper, the expiry sweep, an operator's cancel of a job or of the batch), and by each
worker's reaper as a sweep (`settle_unfinished`), which catches what none of those finished (a
worker that died between an outcome and its settle). Every finish is one guarded statement
(sql.FINISH_BATCHES and its variants) in the transaction that enqueues the callbacks: exactly once.
"""
import json
import logging
from dataclasses import replace
from typing import Any

from .. import conf, db, sql
from ..arguments import PAYLOAD_ENCODER
from ..db import atomic as queue_atomic
from ..exceptions import InvalidJobArgument, JobArgumentTypeError
from ..models import JobBatch
from ..states import BATCH_CALLBACKS as CALLBACKS
from .enqueuing import enqueue_many_or_get
from .inserting import insert
from .preparing import NewJob, prepare_item

log = logging.getLogger("django_pg_jobqueue.batches")

# What a callback may set: the rest of enqueue()'s arguments (a delay, keys, `after`) would
# make "enqueued once when the batch finished" mean something else.
_CALLBACK_OPTIONS = frozenset({"type", "payload", "queue", "priority", "max_attempts",
                               "timeout_seconds", "retry_policy"})
# The key of a callback's payload that carries the batch (its id, counts and results).
BATCH_KEY = "batch"


def _callback(name: str, spec, *, from_api: bool, key_scope: str) -> dict:
    """A callback as stored (JobBatch.callbacks): its job's arguments, checked and resolved
    now (its type's defaults), as enqueue() checks them. InvalidJobArgument naming `name`."""
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict):
        raise JobArgumentTypeError(name, "must be a job type (str) or a dict of enqueue()'s "
                                         f"type, payload, queue, priority, max_attempts, "
                                         f"timeout_seconds, retry_policy; not {spec!r}"[:200])
    unknown = sorted(str(k) for k in spec if k not in _CALLBACK_OPTIONS)
    if unknown:
        raise JobArgumentTypeError(name, f"{unknown[0]!r} cannot be set on a callback; expected "
                                         f"{', '.join(sorted(_CALLBACK_OPTIONS))}")
    payload = spec.get("payload")
    if isinstance(payload, dict) and BATCH_KEY in payload:
        raise InvalidJobArgument(name, f"its payload must not have the key {BATCH_KEY!r}: the "
                                       "batch's counts (and results) are given under it")
    try:
        new = prepare_item(spec, from_api=from_api, key_scope=key_scope)
    except InvalidJobArgument as exc:
        raise InvalidJobArgument(name, f"{exc.argument}: {exc.detail}") from None
    return {"type": new.type, "queue": new.queue, "priority": new.priority,
            "max_attempts": new.max_attempts, "timeout_seconds": new.timeout_seconds,
            "retry_policy": new.retry_policy, "payload": new.payload}


def enqueue_batch(jobs: list[dict], *, on_complete=None, on_success=None, on_failure=None,
                  pass_results: bool = False, from_api: bool = False, key_scope: str = "",
                  may_name_jobs: bool = True) -> JobBatch:
    """Enqueue `jobs` (enqueue_many()'s items) as one batch, all or nothing, and return the
    batch (`.id`; `.jobs` its members; `.members`: every item's job, as enqueue_many returns).

    Callbacks (each a job type, or a dict of `type`, `payload`, `queue`, `priority`,
    `max_attempts`, `timeout_seconds`, `retry_policy`) are enqueued once, when every member
    finished: `on_complete` always, `on_success` when every member succeeded, `on_failure`
    when one did not. Each gets the batch in its payload, under "batch": {"id", "total",
    "succeeded", "failed", "cancelled"}, and, with `pass_results`, "results": the members'
    results in the order enqueued (None for one that did not succeed; None in all, and
    "results_too_large": true, when their JSON is over JOB_MAX_RESULT_BYTES).

    A member is a job this call created: an item whose idempotency or unique key an existing
    job holds returns that job, which does not join the batch. A batch with no member
    finishes at once. Raises InvalidJobArgument naming the argument (`.index` for an item);
    nothing is written then. `from_api`, `key_scope`, `may_name_jobs`: as enqueue_many_or_get's.
    """
    if not isinstance(jobs, (list, tuple)):
        raise JobArgumentTypeError("jobs", f"must be a list of dicts, not {type(jobs).__name__}")
    if not isinstance(pass_results, bool):
        raise JobArgumentTypeError("pass_results", f"must be true or false, not {pass_results!r}")
    callbacks = {name: _callback(name, spec, from_api=from_api, key_scope=key_scope)
                 for name, spec in zip(CALLBACKS, (on_complete, on_success, on_failure),
                                       strict=True) if spec is not None}
    # With JOB_SHARDS, a batch and its members are JOB_DATABASE's (one_database), whichever
    # shard's worker enqueues it.
    with db.on_database(conf.get().DATABASE if conf.get().SHARDS else None), queue_atomic():
        members = enqueue_many_or_get(list(jobs), from_api=from_api, key_scope=key_scope,
                                      may_name_jobs=may_name_jobs, one_database="jobs")
        created = [job for job, was_created in members if was_created]
        batch = JobBatch.objects.create(total=len(created), callbacks=callbacks,
                                        pass_results=pass_results)
        if created:
            db.fetch_all(sql.SET_BATCH_MEMBERS, {"batch_id": batch.id,
                                                 "ids": [job.id for job in created]})
        for job in created:
            job.batch_id = batch.id
        if not created:  # nothing to wait for: finished now, its callbacks enqueued
            _finish(sql.FINISH_BATCHES,
                    {"ids": [batch.id]})
            batch.refresh_from_db()
    batch.members = [job for job, _ in members]
    return batch


def settle(batch_ids) -> list[int]:
    """Finish those of these batches whose members all finished, enqueueing their callbacks;
    return the ids of those finished now. Called after a member's outcome committed."""
    ids = sorted({int(i) for i in batch_ids if i is not None})
    if ids:  # most members' outcomes leave some unfinished: a probe, no transaction
        ids = [row[0] for row in db.fetch_all(sql.BATCHES_DONE_NOW, {"ids": ids})]
    if not ids:
        return []
    return _finish(sql.FINISH_BATCHES, {"ids": ids})


def settle_after(batch_ids) -> None:
    """`settle` after a member's outcome, in the process that wrote it: a failure here (the
    database gone for a moment) must not undo or hide an outcome already committed, so it is
    logged, and the sweep finishes the batch instead."""
    ids = sorted({int(i) for i in batch_ids if i is not None})
    _settle_logged(settle, ids, f"batches {ids}")


def settle_after_jobs(job_ids: list[int]) -> None:
    """`settle_after` for the batches of these jobs (which just finished), looked up from
    them: for the outcome writers whose statements do not return the batch."""
    _settle_logged(lambda ids: _finish(sql.FINISH_BATCHES_OF_JOBS, {"ids": ids}),
                   list(job_ids), f"the batches of jobs {sorted(set(job_ids))[:20]}")


def _settle_logged(settle_them, ids: list[int], what: str) -> None:
    try:
        settle_them(ids)
    except Exception:  # noqa: BLE001 - the sweep catches what this missed
        log.exception("settling %s failed; the reaper's sweep will finish them", what)


def settle_unfinished(*, limit: int = 100) -> list[int]:
    """The sweep: finish every unfinished batch whose members all finished, `limit` per
    statement, until none is left. Returns the ids finished."""
    out: list[int] = []
    while True:
        finished = _finish(sql.FINISH_BATCHES_SWEEP,
                           {"limit": limit})
        out.extend(finished)
        if len(finished) < limit:
            return out


def _finish(statement: str, params: dict) -> list[int]:
    """One finish: the guarded update, then each finished batch's callbacks, all in one
    transaction (the update's row lock held to its end)."""
    with queue_atomic():
        rows = db.fetch_all(statement, params)
        for row in rows:
            _enqueue_callbacks(*row)
    return [row[0] for row in rows]


def _enqueue_callbacks(batch_id: int, total: int, succeeded: int, failed: int, cancelled: int,
                       callbacks: Any, pass_results: bool, _cancelled_batch: bool) -> None:
    if isinstance(callbacks, str):  # a raw jsonb column, as the prepared cursor loads it
        callbacks = json.loads(callbacks)
    all_succeeded = succeeded == total
    due = [name for name in CALLBACKS if name in callbacks
           and (name == "on_complete" or (name == "on_success") == all_succeeded)]
    log.info("batch %s finished: %s of %s succeeded, %s failed, %s cancelled; enqueueing %s",
             batch_id, succeeded, total, failed, cancelled, ", ".join(due) or "no callback")
    if not due:
        db.fetch_all(sql.SET_BATCH_CALLBACK_JOBS, {"id": batch_id, "jobs": "{}"})
        return
    summary: dict[str, Any] = {"id": batch_id, "total": total, "succeeded": succeeded,
                               "failed": failed, "cancelled": cancelled}
    if pass_results:
        summary.update(_results(batch_id))
    new_jobs = [_callback_job(callbacks[name], summary) for name in due]
    created = insert(new_jobs)
    db.fetch_all(sql.SET_BATCH_CALLBACK_JOBS, {
        "id": batch_id, "jobs": json.dumps({name: job.id for name, (job, _)
                                            in zip(due, created, strict=True)})})


def _results(batch_id: int) -> dict:
    limit = conf.get().MAX_RESULT_BYTES
    rows = db.fetch_all(sql.BATCH_RESULTS, {"id": batch_id, "max_bytes": limit})
    if rows and rows[0][1] > limit:
        return {"results": None, "results_too_large": True}
    return {"results": [None if text is None else json.loads(text) for text, _ in rows]}


_CALLBACK_TEMPLATE = NewJob(type="", payload={}, payload_json="{}", priority=0, queue="",
                            max_attempts=1, timeout_seconds=None, run_at=None, delay_seconds=0.0,
                            idempotency_key=None, fingerprint=None)


def _callback_job(spec: dict, summary: dict) -> NewJob:
    """A callback's job, from its arguments resolved at the enqueue (no registry needed: the
    process that finishes the batch may not know the callback's type)."""
    payload = {**(spec.get("payload") or {}), BATCH_KEY: summary}
    return replace(_CALLBACK_TEMPLATE, type=spec["type"], queue=spec["queue"],
                   priority=spec["priority"], max_attempts=spec["max_attempts"],
                   timeout_seconds=spec["timeout_seconds"], retry_policy=spec["retry_policy"],
                   payload=payload, payload_json=PAYLOAD_ENCODER.encode(payload))
