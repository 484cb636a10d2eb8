"""apply_to_ids / apply_to_matching: an operator action (cancel, retry, delete: any of
job_actions.ACTIONS) on many jobs.

Each job goes through the action's single-job service (operations.cancel, operations.retry,
deleting.delete), so the guards are the same as for one job: a job the state machine refuses
is listed in `refused` with the reason, never forced.

Jobs are taken in batches of `batch_size` ids (BATCH_SIZE unless given), in id order, each
batch its own short transaction (each job inside it a savepoint: a refused job leaves the
others of its batch alone). A filter is walked by keyset, `id > <last id of the previous
batch>`, so a filter matching millions of jobs never holds one long transaction or one big
snapshot, every matching job is considered once per call (a retried job that fails again
while the call runs is not retried twice), and the call always ends.

A call may also be bounded (`max_jobs`, `max_seconds`: the API bounds each request so that it
answers well within a proxy's timeout): it then stops after the batch that reached the bound,
and its outcome says where it stopped (`after`, the last id considered) and how many matching
jobs lie beyond (`remaining`). The same call with `after=` that id goes on from there.

With shards (JOB_SHARDS), `apply_to_matching_everywhere` walks every database in shard number
order, the filter applied in each. A job's id says its shard (shards.py: shard n holds ids
n * 2**44 and up), so the ids of the walk only go up and one `after` says where it stopped in
all of them. A database that does not answer is skipped and named in `shards`. The dead
letter's retry by filter (bulk_retry.retry_matching: POST jobs/retry/) walks them the same
way, `retry_matching_everywhere`.
"""
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .. import fanout, shards
from ..db import atomic as queue_atomic
from ..exceptions import InvalidTransition, JobNotFound
from . import bulk_retry, job_actions

BATCH_SIZE = 500
MAX_REFUSED_LISTED = 100  # the refusals listed; `refused_count` counts them all


@dataclass
class BulkActionResult:
    """What an action on many jobs did: how many it was applied to, the refusals (the first
    MAX_REFUSED_LISTED, all counted), and where a bounded call stopped."""
    done: int = 0
    refused: list[dict] = field(default_factory=list)
    refused_count: int = 0
    batches: int = 0
    # A bounded call that stopped before the end: the last id it considered (go on with
    # after=<it>) and the matching jobs beyond it. None and 0 when it went to the end.
    after: int | None = None
    remaining: int = 0
    # Over every database (apply_to_matching_everywhere): each one's state (alias, number,
    # up, error); None for one database.
    shards: list[dict] | None = None

    def refuse(self, job_id, reason: str, status: str | None, detail: str) -> None:
        self.refused_count += 1
        if len(self.refused) < MAX_REFUSED_LISTED:
            self.refused.append({"id": job_id, "reason": reason, "status": status,
                                 "detail": detail})


def _service(action: str):
    return job_actions.get(action).service


def _batch_size(batch_size: int | None) -> int:
    size = BATCH_SIZE if batch_size is None else int(batch_size)
    if size < 1:
        raise ValueError("batch_size must be at least 1")
    return size


def _apply_batch(service, ids: Iterable[int], outcome: BulkActionResult, actor: str) -> None:
    with queue_atomic():
        for job_id in ids:
            try:
                service(job_id, actor=actor)
                outcome.done += 1
            except InvalidTransition as exc:
                outcome.refuse(job_id, "invalid_transition", exc.status, str(exc))
            except JobNotFound:
                outcome.refuse(job_id, "not_found", None, f"job {job_id} does not exist")
    outcome.batches += 1


def apply_to_ids(action: str, ids: Iterable[int], *, actor: str = "",
                 batch_size: int | None = None) -> BulkActionResult:
    """`action` (a name in job_actions.ACTIONS) on each of `ids` (duplicates once, in the
    order given). Raises ValueError for an unknown action or a bad batch size."""
    service, size = _service(action), _batch_size(batch_size)
    unique = list(dict.fromkeys(ids))
    outcome = BulkActionResult()
    for start in range(0, len(unique), size):
        _apply_batch(service, unique[start:start + size], outcome, actor)
    return outcome


def apply_to_matching(action: str, queryset, *, actor: str = "",
                      batch_size: int | None = None, after: int = 0,
                      max_jobs: int | None = None,
                      max_seconds: float | None = None,
                      into: BulkActionResult | None = None) -> BulkActionResult:
    """`action` on every job of `queryset` (a filtered Job queryset: the API's list filters)
    with an id above `after`, in batches keyed by id. With `max_jobs` or `max_seconds`, it
    stops after the batch that reaches either, and says where (`outcome.after`) and how many
    matching jobs remain. Raises ValueError for an unknown action, a bad batch size, `after`
    or bound. `into`: the outcome to count in (kept when a database stops answering midway).
    """
    service, size = _service(action), _batch_size(batch_size)
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise ValueError(f"after must be a job id, 0 or more; got {after!r}")
    if max_jobs is not None and max_jobs < 1:
        raise ValueError("max_jobs must be at least 1")
    if max_seconds is not None and max_seconds < 0:
        raise ValueError("max_seconds must be 0 or more")
    ids = queryset.order_by("id").values_list("id", flat=True)
    outcome = BulkActionResult() if into is None else into
    started, considered = time.monotonic(), 0
    while True:
        with queue_atomic():  # the batch's ids and its actions: one short transaction
            batch = list(ids.filter(id__gt=after)[:size])
            if not batch:
                return outcome
            _apply_batch(service, batch, outcome, actor)
        if len(batch) < size:
            return outcome
        after, considered = batch[-1], considered + len(batch)
        if ((max_jobs is not None and considered >= max_jobs)
                or (max_seconds is not None and time.monotonic() - started >= max_seconds)):
            outcome.remaining = ids.filter(id__gt=after).count()
            outcome.after = after if outcome.remaining else None
            return outcome


def apply_to_matching_everywhere(action: str, queryset, *, actor: str = "",
                                 batch_size: int | None = None, after: int = 0,
                                 max_jobs: int | None = None,
                                 max_seconds: float | None = None,
                                 shard: str | None = None) -> BulkActionResult:
    """`apply_to_matching` on every database of the queue (JOB_DATABASE and each shard), in
    shard number order, so in id order: `queryset` (not yet evaluated) runs in each, the
    counts are summed and the bounds shared. A call that stops at a bound says where (`after`,
    a job id: the databases below it are done) and how many matching jobs remain in this
    database and those after it. A database that does not answer, or stops answering (its
    batches done so far are counted), is skipped, and `shards` says so: the same request once
    it is back acts on its jobs. `shard`: that database alone (its alias: JOB_DATABASE's or
    a shard's). Raises ValueError as apply_to_matching does, and for a `shard` that names
    no database."""
    return _every_database(
        lambda **bounds: apply_to_matching(action, queryset, actor=actor,
                                           batch_size=batch_size, **bounds),
        remaining=lambda beyond: queryset.filter(id__gt=beyond).count(),
        after=after, max_jobs=max_jobs, max_seconds=max_seconds, only=shard)


def retry_matching_everywhere(*, actor: str = "", **filters) -> BulkActionResult:
    """The dead letter's retry by filter (bulk_retry.retry_matching, its `filters`) in every
    database of the queue, in shard number order, as apply_to_matching_everywhere walks them:
    `done` counts the jobs retried (not those of a database that stopped answering midway,
    whose batches before committed); a database that does not answer is skipped, and
    `shards` says so (the same request once it is back retries its jobs). Raises
    InvalidJobArgument as retry_matching does, before any database is written."""
    def retry_in_one(*, into: BulkActionResult, **_bounds) -> BulkActionResult:
        into.done += bulk_retry.retry_matching(**filters, actor=actor)
        return into

    return _every_database(retry_in_one)


def _every_database(step: Callable[..., BulkActionResult],
                    remaining: Callable[[int], int] | None = None, *, after: int = 0,
                    max_jobs: int | None = None, max_seconds: float | None = None,
                    only: str | None = None) -> BulkActionResult:
    """`step(after=, max_jobs=, max_seconds=, into=)` (a bulk write on the database it runs
    on, counting into `into`) on every database of the queue in shard number order, so in
    job id order, the bounds shared: the outcomes summed, `shards` each database's state. A
    step that stops at a bound says where (`into.after`); the databases after it are only
    counted (`remaining(after)`: the jobs left beyond that id, in the database it runs on).
    `only`: that database alone."""
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise ValueError(f"after must be a job id, 0 or more; got {after!r}")
    if only is not None and (wrong := shards.not_a_database(only)):
        raise ValueError(f"shard {wrong}")
    states: list[dict] = []
    total = BulkActionResult(shards=states)
    started = time.monotonic()
    stopped = False
    for alias in sorted(fanout.databases() if only is None else [only], key=shards.number_of):
        number = shards.number_of(alias)
        last_id = shards.id_range(number)[1]
        if after >= last_id:  # done by an earlier request
            states.append(fanout.Answer(alias, number).state())
            continue
        if stopped and remaining is not None:  # only counted: what is left beyond the stop
            beyond = after
            answer = fanout.on(alias, lambda: remaining(beyond))
            total.remaining += answer.value or 0
            states.append(answer.state())
            continue
        outcome = BulkActionResult()
        considered = total.done + total.refused_count
        answer = fanout.on(alias, lambda: step(
            after=after, max_jobs=None if max_jobs is None else max_jobs - considered,
            max_seconds=None if max_seconds is None
            else max(0.0, max_seconds - (time.monotonic() - started)), into=outcome))
        states.append(answer.state())
        total.done += outcome.done
        total.refused_count += outcome.refused_count
        total.refused += outcome.refused[:MAX_REFUSED_LISTED - len(total.refused)]
        total.batches += outcome.batches
        if answer.up and outcome.after is not None:  # stopped at a bound, inside this one
            total.after, total.remaining, after = outcome.after, outcome.remaining, outcome.after
            stopped = True
        elif ((max_jobs is not None and total.done + total.refused_count >= max_jobs)
              or (max_seconds is not None and time.monotonic() - started >= max_seconds)):
            after, stopped = last_id, True  # the bound reached at this database's end
    if stopped and total.after is None and total.remaining:
        total.after = after
    return total
