"""Job dependencies: jobs enqueued after=[...] wait (status `waiting`) until every job they
wait for succeeded, then are unblocked (queued); a dependency that fails for good or is
cancelled cancels them, or, for `after_failure="run"`, lets them run anyway.

Who moves a job in and out of `waiting` (docs/how-to/dependencies.md):
- in: `block`, called by services.enqueue in the enqueue's own transaction; and the retry
  statement (sql.RETRY_JOBS, RETRY_FAILED_BATCH), which puts a retried job whose dependencies
  have not all succeeded back in `waiting`, then `settle_jobs` of those;
- out: `settle`, called by whatever finished a dependency (the completion, a failure for good,
  a cancel, the reaper) right after it, and by each worker's reaper as a sweep
  (`settle_waiting`), which catches what none of those settled (a worker that died between
  its completion and the settle). Every move is one guarded statement (sql.SETTLE_DEPENDANTS and its variants).
"""
import json
from numbers import Integral

from .. import conf, db, sql
from ..exceptions import InvalidJobArgument, JobArgumentTypeError
from ..states import AFTER_FAILURE_CANCEL, AFTER_FAILURE_CHOICES


def check_after(after, after_failure, *, index: int | None = None) -> tuple[list, str]:
    """`after` as a list of job ids (int) and ("item", i) references to earlier items of the
    same enqueue_many batch (`{"item": i}`, i < index), and the after_failure policy."""
    if after_failure is None:
        after_failure = AFTER_FAILURE_CANCEL
    if not isinstance(after_failure, str) or after_failure not in AFTER_FAILURE_CHOICES:
        raise InvalidJobArgument("after_failure", f"must be one of {', '.join(AFTER_FAILURE_CHOICES)}"
                                                  f", not {after_failure!r}")
    if after is None:
        return [], after_failure
    if not isinstance(after, (list, tuple)):
        raise JobArgumentTypeError("after", f"must be a list of job ids, not "
                                            f"{type(after).__name__}")
    limit = conf.get().MAX_AFTER
    refs: list = []
    for entry in after:
        job_id = getattr(entry, "pk", entry)  # a Job, or its id
        ref: int | tuple[str, int]
        if isinstance(job_id, Integral) and not isinstance(job_id, bool):
            if not 0 < int(job_id) < 2 ** 63:
                raise InvalidJobArgument("after", f"{job_id} is not a job id")
            ref = int(job_id)
        elif isinstance(entry, dict) and set(entry) == {"item"}:
            item = entry["item"]
            if index is None:
                raise InvalidJobArgument("after", "{'item': i} names an earlier item of the "
                                                  "same enqueue_many() batch: use job ids here")
            if not (isinstance(item, int) and not isinstance(item, bool) and 0 <= item < index):
                raise InvalidJobArgument("after", f"{{'item': {item!r}}} must name an earlier "
                                                  f"item of the batch (here: 0 to {index - 1})"
                                         if index else f"{{'item': {item!r}}} must name an "
                                                       "earlier item of the batch (the first "
                                                       "has none)")
            ref = ("item", item)
        else:
            raise JobArgumentTypeError("after", "must list job ids (int), Job objects or, in "
                                                f"enqueue_many(), {{'item': i}}; not {entry!r}"[:200])
        if ref not in refs:
            refs.append(ref)
            if len(refs) > limit:
                raise InvalidJobArgument("after", f"may name at most {limit} jobs "
                                                  "(JOB_MAX_AFTER), not more")
    return refs, after_failure


def check_batch(afters: list[list]) -> None:
    """The distinct existing jobs a whole batch names (each item's checked `after` refs, in
    order) within JOB_MAX_AFTER_PER_BATCH; InvalidJobArgument naming "after", at the item
    where the count is passed, otherwise. An `{"item": i}` reference does not count: it names
    a job of the batch itself, which no one else can hold."""
    limit = conf.get().MAX_AFTER_PER_BATCH
    named: set[int] = set()
    for index, refs in enumerate(afters):
        named.update(ref for ref in refs if not isinstance(ref, tuple))
        if len(named) > limit:
            error = InvalidJobArgument("after", f"the batch names more than {limit} distinct "
                                                "jobs in its after lists (JOB_MAX_AFTER_PER_BATCH)")
            raise error.at(index) if len(afters) > 1 else error


def missing(job_id: int) -> InvalidJobArgument:
    """A job named in `after` that does not exist (or, from the API, that the user may not
    see: the same error, so that nothing tells the two apart)."""
    return InvalidJobArgument("after", f"job {job_id} does not exist: a job can wait only "
                                       "for jobs that exist")


def block(created: list[tuple[int, tuple[int, list, str]]],
          item_ids: list[int], *, may_name_jobs: bool = True) -> dict[int, str]:
    """In the enqueue's transaction: the jobs just created ((position, (id, after refs,
    policy))) wait for their dependencies. `item_ids`: the job id of each item of the batch.
    `may_name_jobs` False (an API user who may not see jobs): every job id named counts as
    one that does not exist. Raises InvalidJobArgument (naming "after", with .index) for a
    job id that does not exist. Returns {job id: status now}: waiting, or (when every job it
    waits for had finished) queued or cancelled.

    The edges are written first and the jobs named locked last, in id order, just before the
    enqueue's own jobs are settled: the locks (sql.LOCK_DEPENDENCIES) are held from there to
    the commit only, and two enqueues never take them in opposite orders."""
    edges, dependency_ids = [], set()
    for _, (job_id, refs, policy) in created:
        for ref in refs:
            dependency = item_ids[ref[1]] if isinstance(ref, tuple) else ref
            edges.append({"job_id": job_id, "depends_on_id": dependency, "on_failure": policy})
            dependency_ids.add(dependency)  # the batch's own jobs too: marked has_dependants
    if not may_name_jobs:
        _refuse_missing(created, item_ids, found={})
    waiting = [row[0] for row in db.fetch_all(sql.BLOCK_JOBS, {"edges": json.dumps(edges)})]
    found = dict(db.fetch_all(sql.LOCK_DEPENDENCIES, {"ids": sorted(dependency_ids)})
                 ) if dependency_ids else {}
    _refuse_missing(created, item_ids, found=found)
    statuses = dict.fromkeys(waiting, "waiting")
    statuses.update(settle_jobs(sorted(waiting)))
    return statuses


def _refuse_missing(created, item_ids: list[int], *, found: dict) -> None:
    for position, (_, refs, _) in created:
        for ref in refs:
            if not isinstance(ref, tuple) and ref not in found:
                error = missing(ref)
                raise error.at(position) if len(item_ids) > 1 else error


def settle(dependency_ids: list[int]) -> dict[int, str]:
    """Unblock or cancel the waiting dependants of these jobs (which just finished), and then
    the dependants of those cancelled, in turn. Returns {job id: new status}."""
    out: dict[int, str] = {}
    ids = list(dependency_ids)
    while ids:
        rows = db.fetch_all(sql.SETTLE_DEPENDANTS,
                            {"ids": ids, "notify": conf.get().LISTEN_NOTIFY})
        out.update((row[0], row[1]) for row in rows)
        ids = [row[0] for row in rows if row[1] == "cancelled"]
    return out


def settle_jobs(job_ids: list[int]) -> dict[int, str]:
    """Settle these waiting jobs now (a retry just put them back in `waiting`: a job they wait
    for may have finished while the retry ran), and the dependants of those cancelled."""
    rows = db.fetch_all(sql.SETTLE_THESE_WAITING,
                        {"ids": list(job_ids), "notify": conf.get().LISTEN_NOTIFY})
    out = {row[0]: row[1] for row in rows}
    cancelled = [row[0] for row in rows if row[1] == "cancelled"]
    if cancelled:
        out.update(settle(cancelled))
    return out


def settle_waiting(*, limit: int = 500) -> dict[int, str]:
    """The sweep: settle waiting jobs that wait for a finished (or missing) job, up to
    `limit` of them per statement, until none is left. Returns {job id: new status}."""
    out: dict[int, str] = {}
    while True:
        rows = db.fetch_all(sql.SETTLE_WAITING_SWEEP,
                            {"limit": limit, "notify": conf.get().LISTEN_NOTIFY})
        out.update((row[0], row[1]) for row in rows)
        cancelled = [row[0] for row in rows if row[1] == "cancelled"]
        if cancelled:
            out.update(settle(cancelled))
        if len(rows) < limit:
            return out
