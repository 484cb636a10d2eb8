"""enqueue: create queued jobs (one or many) with their `created` events, in one statement.

Called inside the caller's `transaction.atomic()`, the job is part of that transaction: it
becomes visible to workers only when the caller commits, and never exists if it rolls back.
The NOTIFY that wakes idle workers is transactional too: PostgreSQL delivers it on commit.

The public half lives here; the work is in two steps: `preparing.py` checks and resolves each
job's arguments (the pure checks are `arguments.py`'s), `inserting.py` writes the rows.
"""
import dataclasses
from contextlib import ExitStack
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.db import transaction

from .. import conf, db, shards
from ..exceptions import (
    InvalidJobArgument,
)
from ..models import Job
from ..retries import RetryPolicy
from .inserting import insert
from .preparing import NewJob, prepare, prepare_item


def enqueue_or_get(job_type: str, payload: dict | None = None, *, from_api: bool = False,
                   key_scope: str = "", may_name_jobs: bool = True,
                   **options) -> tuple[Job, bool]:
    """Enqueue, or get the job that holds the same idempotency key, unique key or throttle
    key, or the pending job of the same debounce key, updated (as Django's get_or_create):
    returns (job, created). `enqueue` is its thin form. `from_api=True` (the
    API's views): only the types of JOB_API_CREATABLE_TYPES and the tasks of
    JOB_API_CREATABLE_TASKS; anything else raises `NotCreatable`. `key_scope`: the API
    user's scope (keys.py), under which their unique and concurrency keys are stored.
    `may_name_jobs` False (an API user who may not see jobs): a job id in `after` is refused
    as one that does not exist."""
    new = prepare(job_type, payload, from_api=from_api, key_scope=key_scope, **options)
    if not conf.get().SHARDS:
        return insert([new], may_name_jobs=may_name_jobs)[0]
    target = shards.alias_for_queue(new.queue)
    _check_after_in_shard(new, target, [])
    with db.on_database(target):
        return insert([new], may_name_jobs=may_name_jobs)[0]


def _check_after_in_shard(new: NewJob, target: str, targets: list[str]) -> None:
    """A job waits only for jobs of its own shard (JOB_SHARDS): each id of its `after`, and
    each earlier item it names (`targets`: the items' databases), must be in `target`."""
    for ref in new.after or ():
        where = targets[ref[1]] if isinstance(ref, tuple) else shards.alias_for_job_id(ref)
        if where != target:
            named = f"item {ref[1]}" if isinstance(ref, tuple) else f"job {ref}"
            raise InvalidJobArgument(
                "after", f"{named} is in database {where!r} (JOB_SHARDS) and this job's queue "
                         f"{new.queue!r} in {target!r}: a job can wait only for jobs of its "
                         "own shard")


def enqueue(type: str, payload: dict | None = None, *, priority: int | None = None,
            queue: str | None = None, run_at: datetime | None = None,
            delay_seconds: float | timedelta | None = None, idempotency_key: str | None = None,
            max_attempts: int | None = None, timeout_seconds: int | None = None,
            retry_policy: RetryPolicy | dict | None = None, unique: dict | None = None,
            after: list | None = None, after_failure: str | None = None,
            concurrency_key: str | None = None, concurrency_key_limit: int | None = None,
            fairness_key: str | None = None, debounce: dict | None = None, throttle: dict | None = None,
            expires_at: datetime | None = None,
            expires_in_seconds: float | timedelta | None = None) -> Job:
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
    - `fairness_key` (1 to 200 characters, e.g. "tenant:a"): in a fair queue, claims take
      jobs round-robin across keys, so one key's backlog does not hold back the others
      (docs/how-to/fairness.md).
    - Enqueue policies (docs/how-to/enqueue-policies.md), each a dict of `key` (or `fields`,
      as `unique`'s) and `period_seconds` (above 0, at most a year): `debounce`: while the
      job of this type and key has not started, an enqueue replaces its payload and pushes
      its start to `period_seconds` from now (a burst of enqueues runs once, with the last
      payload; not with run_at, delay_seconds, idempotency_key, unique, throttle or after);
      `throttle`: at most one job of this type and key per period, the first one, which
      later enqueues return (not with unique).
    - `expires_at` (a timezone-aware datetime) or `expires_in_seconds` (above 0, at most a
      year), not both, and after the job may start: a job not started by then never runs;
      it ends cancelled with an `expired` event. The deadline holds for a retry's start too.

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
        fairness_key=fairness_key, debounce=debounce, throttle=throttle, expires_at=expires_at,
        expires_in_seconds=expires_in_seconds,
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
                   concurrency_key_limit: int | None = None, fairness_key: str | None = None,
                   debounce: dict | None = None, throttle: dict | None = None, expires_at: datetime | None = None,
                   expires_in_seconds: float | timedelta | None = None) -> Job:
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
        concurrency_key=concurrency_key, concurrency_key_limit=concurrency_key_limit,
        fairness_key=fairness_key, debounce=debounce, throttle=throttle, expires_at=expires_at,
        expires_in_seconds=expires_in_seconds)


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
                        may_name_jobs: bool = True,
                        one_database: str | None = None) -> list[tuple[Job, bool]]:
    """As `enqueue_many`, each job with whether it was created (False: an idempotent replay,
    the job an earlier enqueue with its key created, or the holder of its unique key).
    `may_name_jobs`: as `enqueue_or_get`'s. `one_database`: with JOB_SHARDS, the argument
    named when an item's queue is not in JOB_DATABASE (a batch's jobs must all be)."""
    prepared = []
    queues_seen: dict[str, bool] = {}  # the API's bounds: each queue looked up once
    for index, item in enumerate(jobs):
        try:
            prepared.append(prepare_item(item, from_api, key_scope, index, queues_seen))
        except InvalidJobArgument as exc:
            raise exc.at(index) from None
    if not prepared:
        return []
    if not conf.get().SHARDS:
        return insert(prepared, may_name_jobs=may_name_jobs)
    return _insert_by_shard(prepared, may_name_jobs, one_database)


def _insert_by_shard(prepared: list[NewJob], may_name_jobs: bool,
                     one_database: str | None) -> list[tuple[Job, bool]]:
    """enqueue_many with JOB_SHARDS: each shard's items in one statement on its database, all
    in one transaction per database, committed one database after the other (all or nothing
    within each database; a commit that fails after another database's leaves that one's
    jobs). `one_database`: the argument to name when the items must all be in JOB_DATABASE's
    queues (a batch's)."""
    targets = [shards.alias_for_queue(new.queue) for new in prepared]
    home = conf.get().DATABASE
    for index, (new, target) in enumerate(zip(prepared, targets, strict=True)):
        if one_database is not None and target != home:
            raise InvalidJobArgument(one_database, f"queue {new.queue!r} is in shard "
                                                   f"{target!r} (JOB_SHARDS): the jobs of a "
                                                   "batch must all be in JOB_DATABASE's "
                                                   "queues").at(index)
        try:
            _check_after_in_shard(new, target, targets)
        except InvalidJobArgument as exc:
            raise exc.at(index) from None
    groups: dict[str, list[int]] = {}
    for index, target in enumerate(targets):
        groups.setdefault(target, []).append(index)
    if len(groups) == 1:
        with db.on_database(targets[0]):
            return insert(prepared, may_name_jobs=may_name_jobs)
    results: list[tuple[Job, bool]] = [None] * len(prepared)  # type: ignore[list-item]
    with ExitStack() as stack:
        for target in groups:  # the database this thread works on: on its own connection
            stack.enter_context(transaction.atomic(
                using=db.alias() if target == db.home_alias() else target))
        for target, indexes in groups.items():
            local = {index: position for position, index in enumerate(indexes)}
            group = [_renumbered(prepared[i], local) for i in indexes]
            with db.on_database(target):
                for index, result in zip(indexes, insert(group, may_name_jobs=may_name_jobs),
                                         strict=True):
                    results[index] = result
    return results


def _renumbered(new: NewJob, local: dict[int, int]) -> NewJob:
    """`new` with the items its `after` names renumbered within its shard's group (`local`:
    the batch's index of each of the group's items -> its index in the group)."""
    if not new.after:
        return new
    return dataclasses.replace(new, after=[
        ("item", local[ref[1]]) if isinstance(ref, tuple) else ref for ref in new.after])
