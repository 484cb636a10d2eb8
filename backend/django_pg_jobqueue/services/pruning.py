"""prune: delete finished jobs, and their events, once they are older than their retention.

Retention is the only thing that keeps `jobs` and `job_events` from growing forever. It runs
in small batches, each its own short transaction, so that it never holds locks for long,
never keeps a snapshot open across the whole table (which would stop vacuum from reclaiming
what the batches before it deleted), and never blocks or is blocked by the workers:
- rows are picked with `FOR UPDATE SKIP LOCKED`: a job another session holds (an operator
  retrying it, another pruner) is skipped, not waited for;
- the guard `status IN ('succeeded', 'failed', 'cancelled')` is in the SQL, re-checked on the
  locked row, so a queued or running job is never deleted, whatever the caller passes;
- a job's events are deleted in the same statement as the job (the history's guard refuses a
  job deleted without them, sql.HISTORY_GUARD_FUNCTIONS), so no batch leaves orphan events;
- but first, the `job_events` partitions ahead are made sure of, and whole partitions go (services/partitions.py): those older than the
  shortest retention asked for, once every event in them belongs to a job past its retention
  (the few events of kept jobs are moved out first). Their jobs are then deleted by the
  batches, which find only the events outside the dropped partitions left to delete.

Called by `manage.py prune_jobs` and by the pruner thread of every worker pool
(worker/pruner.py); several at once only share the work.
"""
from collections.abc import Callable, Iterable
from datetime import timedelta

from .. import conf, sql
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..durations import parse_duration
from ..states import TERMINAL, Status
from . import partitions
from .rate_limits import prune_rate_starts


def parse_statuses(statuses: Iterable[str]) -> list[Status]:
    out = []
    for s in statuses:
        try:
            status = Status(str(s).strip().lower())
        except ValueError:
            raise ValueError(f"unknown status {s!r}") from None
        if status not in TERMINAL:
            raise ValueError(f"only finished jobs are pruned; {status.value!r} is not final "
                             "(give succeeded, failed or cancelled)")
        if status not in out:
            out.append(status)
    if not out:
        raise ValueError("give at least one status to prune")
    return out


def prune(older_than: timedelta | str | float, statuses: Iterable[str] = tuple(TERMINAL), *,
          batch_size: int = 1000, dry_run: bool = False,
          should_stop: Callable[[], bool] | None = None,
          drop_partitions: bool = True) -> dict[str, int]:
    """Delete jobs in `statuses` that finished more than `older_than` ago, with their events.

    `older_than`: a timedelta, seconds, or a duration string ('7d'). Each batch of at most
    `batch_size` jobs is one short transaction. `dry_run` deletes nothing and counts what
    would go. `should_stop` is polled between batches (the pruner thread's shutdown).

    Returns counts: one per status (jobs deleted) and "events" (events deleted with them,
    whether row by row or with a whole partition). `drop_partitions=False`: rows only.
    Raises ValueError for a bad duration, batch size, or a status that is not final.
    """
    age = parse_duration(older_than).total_seconds()
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    counts: dict[str, int] = {}
    events = 0
    statuses = parse_statuses(statuses)
    if drop_partitions and not dry_run:  # a dry run's row counts include those events
        partitions.ensure_partitions()
        events += partitions.drop_expired_partitions(
            ages={s.value: age for s in statuses}, dry_run=dry_run)["events"]
    for status in statuses:
        params = {"status": status.value, "age": age, "limit": int(batch_size)}
        if dry_run:
            with queue_connection().cursor() as cur:
                cur.execute(sql.COUNT_PRUNABLE, params)
                jobs, n_events = cur.fetchone()
            counts[status.value] = jobs
            events += n_events
            continue
        counts[status.value] = 0
        while True:
            if should_stop is not None and should_stop():
                break
            with queue_atomic():
                with queue_connection().cursor() as cur:
                    cur.execute(sql.PRUNE_BATCH, params)
                    jobs, n_events = cur.fetchone()
            counts[status.value] += jobs
            events += n_events
            # A short batch means nothing older is left, or the rest is locked by others.
            if jobs < batch_size:
                break
    counts["events"] = events
    return counts


def prune_by_retention(statuses: Iterable[str] = (Status.SUCCEEDED, Status.FAILED,
                                                   Status.CANCELLED), *,
                       batch_size: int | None = None, dry_run: bool = False,
                       should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """Apply JOB_RETENTION_SUCCEEDED / _FAILED / _CANCELLED: each status its own age.

    A status whose retention is off is kept forever (and left out of the counts). The rate
    limits' starts older than the longest period go too (`rate_starts`, when there were any),
    and batches with no member left that finished longer ago than the shortest retention in
    force (`batches`: prune_finished_batches)."""
    c = conf.get()
    batch_size = batch_size or c.PRUNE_BATCH_SIZE
    counts: dict[str, int] = {"events": 0}
    statuses = parse_statuses(statuses)
    ages = {s.value: keep.total_seconds() for s in statuses
            if (keep := c.retention(s.value)) is not None}
    if not dry_run:
        partitions.ensure_partitions()
    if ages and not dry_run:
        counts["events"] += partitions.drop_expired_partitions(
            ages=ages, dry_run=dry_run)["events"]
    for status in statuses:
        keep = c.retention(status.value)
        if keep is None:
            continue
        one = prune(keep, [status], batch_size=batch_size, dry_run=dry_run,
                    should_stop=should_stop, drop_partitions=False)
        counts[status.value] = one[status.value]
        counts["events"] += one["events"]
    if not dry_run and (starts := prune_rate_starts()):  # past every rate limit's window
        counts["rate_starts"] = starts
    if not dry_run and ages and (gone := prune_finished_batches(min(ages.values()),
                                                                batch_size=batch_size)):
        counts["batches"] = gone
    return dict(sorted(counts.items(), key=lambda kv: kv[0] == "events"))


def prune_finished_batches(age_seconds: float, *, batch_size: int = 1000) -> int:
    """Delete batches that finished more than `age_seconds` ago and have no member left (their
    members were pruned, or deleted), `batch_size` per statement; how many. A batch keeps its
    row, and its page, while any member is kept."""
    total = 0
    while True:
        with queue_connection().cursor() as cur:
            cur.execute(sql.PRUNE_FINISHED_BATCHES, {"age": float(age_seconds),
                                                     "limit": int(batch_size)})
            total += cur.rowcount
            if cur.rowcount < batch_size:
                return total
