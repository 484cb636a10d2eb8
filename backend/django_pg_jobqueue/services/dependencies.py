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
  its completion and the settle). Every move is one guarded statement (sql.SETTLE_WAITING).
"""
import json
from numbers import Integral

from .. import conf, db, sql
from ..exceptions import InvalidJobArgument, JobArgumentTypeError
from ..states import AFTER_FAILURE_CANCEL, AFTER_FAILURE_CHOICES, MAX_AFTER


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
    if len(after) > MAX_AFTER:
        raise InvalidJobArgument("after", f"may name at most {MAX_AFTER} jobs, not {len(after)}")
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
    return refs, after_failure


def block(created: list[tuple[int, tuple[int, list, str]]],
          item_ids: list[int]) -> dict[int, str]:
    """In the enqueue's transaction: the jobs just created ((position, (id, after refs,
    policy))) wait for their dependencies. `item_ids`: the job id of each item of the batch.
    Raises InvalidJobArgument (naming "after", with .index) for a job id that does not exist.
    Returns {job id: status now}: waiting, or (when every job it waits for had finished)
    queued or cancelled."""
    edges, dependency_ids = [], set()
    for _, (job_id, refs, policy) in created:
        for ref in refs:
            dependency = item_ids[ref[1]] if isinstance(ref, tuple) else ref
            edges.append({"job_id": job_id, "depends_on_id": dependency, "on_failure": policy})
            dependency_ids.add(dependency)
    found = dict(db.fetch_all(sql.LOCK_DEPENDENCIES, {"ids": sorted(dependency_ids)}))
    for position, (job_id, refs, _) in created:
        for ref in refs:
            if not isinstance(ref, tuple) and ref not in found:
                error = InvalidJobArgument("after", f"job {ref} does not exist: a job can "
                                                    "wait only for jobs that exist")
                raise error.at(position) if len(item_ids) > 1 else error
    statuses = {row[0]: "waiting"
                for row in db.fetch_all(sql.BLOCK_JOBS, {"edges": json.dumps(edges)})}
    statuses.update(settle(sorted(dependency_ids)))
    return statuses


def settle(dependency_ids: list[int]) -> dict[int, str]:
    """Unblock or cancel the waiting dependants of these jobs (which just finished), and then
    the dependants of those cancelled, in turn. Returns {job id: new status}."""
    out: dict[int, str] = {}
    ids = list(dependency_ids)
    while ids:
        rows = db.fetch_all(sql.SETTLE_WAITING.format(candidates=sql.SETTLE_BY_DEPENDENCY),
                            {"ids": ids, "notify": conf.get().LISTEN_NOTIFY})
        out.update((row[0], row[1]) for row in rows)
        ids = [row[0] for row in rows if row[1] == "cancelled"]
    return out


def settle_jobs(job_ids: list[int]) -> dict[int, str]:
    """Settle these waiting jobs now (a retry just put them back in `waiting`: a job they wait
    for may have finished while the retry ran), and the dependants of those cancelled."""
    rows = db.fetch_all(sql.SETTLE_WAITING.format(candidates=sql.SETTLE_THESE),
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
        rows = db.fetch_all(sql.SETTLE_WAITING.format(candidates=sql.SETTLE_SWEEP),
                            {"limit": limit, "notify": conf.get().LISTEN_NOTIFY})
        out.update((row[0], row[1]) for row in rows)
        cancelled = [row[0] for row in rows if row[1] == "cancelled"]
        if cancelled:
            out.update(settle(cancelled))
        if len(rows) < limit:
            return out
