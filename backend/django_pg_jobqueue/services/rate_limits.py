"""Rate limits: at most N job starts per sliding period, for a queue, a job type, or the jobs
of a concurrency key (a key, or every key with a prefix: `customer:*`).

The claim enforces them (sql.CLAIM_LIMITED, sql.CLAIM_KEYED: each start is written to the
starts log, job_rate_starts, by the statement that claims the job); this module sets them at
run time (`set_rate_limit`, `remove_rate_limit`: the API and the admin call these), checks
and consumes them from Python outside a job (`rate_limit(...).try_acquire()`) and prunes
starts no window counts any more (their use is read by selectors.rate_limit_use). Workers re-read the limits
at most once a second (services/claiming.py), so a new limit holds within a second.

With JOB_SHARDS, each database's claims read the limits and count the starts of that
database alone. A queue's limit is written in the database that holds the queue (as its
concurrency limit is); a type's or a key's, which no one queue holds, in every database of
the deployment (JOB_DATABASE, then each shard), as JOB_RATE_LIMITS's declared ones are in
force in every database: each database counts its own window, so a type whose jobs sit in k
databases may start up to k x N in a period. `rate_limit(queue=...)` counts in the queue's
database; `rate_limit(type=...)` and `rate_limit("key")` in the caller's (JOB_DATABASE's).
"""
from dataclasses import dataclass
from datetime import datetime, timedelta

from .. import conf, db, fanout, shards, sql
from ..catalogue import limit_for, queue_exists, rate_limits_in_force
from ..db import atomic as queue_atomic
from ..exceptions import InvalidJobArgument, QueueNotFound
from ..models import RateLimit, TxNow
from ..states import MAX_RATE_WEIGHT, AuditTarget, OperatorAction, rate_limit_problem
from . import audit_log
from .claiming import forget_cached_limits


def _scope(queue: str | None, type: str | None, key: str | None) -> tuple[str, str]:  # noqa: A002
    given = [(kind, name) for kind, name in (("queue", queue), ("type", type), ("key", key))
             if name is not None]
    if len(given) != 1:
        raise InvalidJobArgument("scope", "name exactly one of queue, type or key")
    return given[0]


def _check(kind: str, name: str, max_starts, period_seconds) -> None:
    problem = rate_limit_problem(kind, name, max_starts, period_seconds)
    if problem is not None:
        argument, rule = problem
        raise InvalidJobArgument(kind if argument == "name" else argument, f"must be {rule}")


def _databases(kind: str, name: str) -> list[str | None]:
    """Where a limit of that scope is written, read and counted: without JOB_SHARDS, where
    the caller is (None); a queue's, the database that holds the queue; a type's or a key's,
    every database (JOB_DATABASE first)."""
    if not conf.get().SHARDS:
        return [None]
    if kind == "queue":
        return [shards.alias_for_queue(name)]
    return list(fanout.databases())


def set_rate_limit(*, queue: str | None = None, type: str | None = None,  # noqa: A002
                   key: str | None = None, max_starts: int,
                   period_seconds: float, actor: str = "") -> RateLimit:
    """At most `max_starts` jobs (their weights summed, JOB_RATE_WEIGHTS) of `queue`, of job
    type `type`, or with concurrency key `key` (a key, or a prefix ending in `*`: each key
    it matches has a window of its own) start in any `period_seconds`, across every worker.
    Replaces that scope's limit, set or declared (JOB_RATE_LIMITS). InvalidJobArgument names
    a bad argument; QueueNotFound if the queue does not exist. The audit log records it
    (`actor`: who, for an operator's change). With JOB_SHARDS, a queue's limit is written in
    the queue's database, a type's or a key's in each database in turn (one that does not
    answer raises, after the earlier ones were written: set it again once it is back); the
    limit returned is the first database's."""
    kind, name = _scope(queue, type, key)
    _check(kind, name, max_starts, period_seconds)
    written = []
    for alias in _databases(kind, name):
        with db.on_database(alias):
            written.append(_set_here(kind, name, max_starts, float(period_seconds), actor))
    forget_cached_limits()  # this process: at once; the others within a second
    return written[0]


def _set_here(kind: str, name: str, max_starts: int, period_seconds: float,
              actor: str) -> RateLimit:
    """The limit's row and, if it changed, its audit log entry, in one transaction on the
    database the caller chose."""
    with queue_atomic():
        if kind == "queue" and not queue_exists(name):
            raise QueueNotFound(name)
        old = RateLimit.objects.filter(kind=kind, name=name).values_list(
            "max_starts", "period_seconds").first()
        limit, _ = RateLimit.objects.update_or_create(
            kind=kind, name=name, defaults={"max_starts": max_starts,
                                            "period_seconds": period_seconds,
                                            "updated_at": TxNow()})
        limit.refresh_from_db()
        if old != (limit.max_starts, limit.period_seconds):  # as a queue's limit: a change only
            audit_log.record(OperatorAction.SET_RATE_LIMIT, AuditTarget.RATE_LIMIT, f"{kind}:{name}",
                             actor=actor, data={
                                 "max_starts": [old[0] if old else None, limit.max_starts],
                                 "period_seconds": [old[1] if old else None,
                                                    limit.period_seconds]})
    return limit


def remove_rate_limit(*, queue: str | None = None, type: str | None = None,  # noqa: A002
                      key: str | None = None, actor: str = "") -> bool:
    """Remove the limit set at run time for that scope (one JOB_RATE_LIMITS declares holds
    again); whether there was one. With JOB_SHARDS, from each database `set_rate_limit`
    writes it in. The audit log records a removal (`actor`: who)."""
    kind, name = _scope(queue, type, key)
    removed = False
    for alias in _databases(kind, name):
        with db.on_database(alias), queue_atomic():
            deleted, _ = RateLimit.objects.filter(kind=kind, name=name).delete()
            if deleted:
                audit_log.record(OperatorAction.REMOVE_RATE_LIMIT, AuditTarget.RATE_LIMIT,
                                 f"{kind}:{name}", actor=actor)
        removed = removed or bool(deleted)
    forget_cached_limits()
    return removed


@dataclass(frozen=True)
class RateDecision:
    """What `RateLimiter.try_acquire()` / `check()` answered.

    `allowed`: the weight fit (try_acquire: and was counted); `used`: the window's weight
    before this call; `max_starts` and `period_seconds`: the limit (None: no limit applies,
    always allowed); `retry_at`: when enough of the window's starts will have left it for
    the weight to fit (None when allowed); `retry_in_seconds`: from now, by the database's
    clock (0 when allowed)."""

    allowed: bool
    used: int
    max_starts: int | None
    period_seconds: float | None
    retry_at: datetime | None
    retry_in_seconds: float


class RateLimiter:
    """A rate limit seen from outside a job: `rate_limit("customer:42")`,
    `rate_limit(queue="emails")`, `rate_limit(type="email_send")`. Shares its window with
    the claim: a start acquired here counts against the jobs' starts, and theirs against it."""

    def __init__(self, kind: str, name: str):
        self.kind, self.name = kind, name

    def __repr__(self) -> str:
        return f"rate_limit({self.kind}={self.name!r})"

    def try_acquire(self, weight: int = 1) -> RateDecision:
        """Count `weight` against the window if it fits, now; never waits for room."""
        return self._decide(weight, consume=True)

    def check(self, weight: int = 1) -> RateDecision:
        """Whether `weight` would fit now, counting nothing."""
        return self._decide(weight, consume=False)

    def _decide(self, weight: int, *, consume: bool) -> RateDecision:
        # A queue's window is counted in the database that holds the queue (JOB_SHARDS).
        with db.on_database(_databases(self.kind, self.name)[0] if self.kind == "queue"
                            else None):
            return self._decide_here(weight, consume=consume)

    def _decide_here(self, weight: int, *, consume: bool) -> RateDecision:
        if isinstance(weight, bool) or not isinstance(weight, int) or not (
                1 <= weight <= MAX_RATE_WEIGHT):
            raise InvalidJobArgument("weight", f"must be a whole number from 1 to {MAX_RATE_WEIGHT}")
        limit = limit_for(self.kind, self.name, rate_limits_in_force())
        if limit is None:
            return RateDecision(True, 0, None, None, None, 0.0)
        _, _, max_starts, period_seconds = limit
        if weight > max_starts:
            raise InvalidJobArgument(
                "weight", f"must be at most the limit's max_starts ({max_starts}): it never fits")
        with queue_atomic():
            if self.kind == "key":
                db.fetch_all(sql.RATE_LOCK_KEY, {"key": self.name})
            else:
                db.fetch_all(sql.RATE_LOCK_GLOBAL, {})
            allowed, used, retry_at, now = db.fetch_all(sql.RATE_ACQUIRE, {
                "scope": f"{self.kind}:{self.name}", "period_seconds": float(period_seconds),
                "weight": weight, "max_starts": max_starts, "consume": consume})[0]
        wait = max(0.0, (retry_at - now) / timedelta(seconds=1)) if retry_at else 0.0
        return RateDecision(bool(allowed), int(used), max_starts, period_seconds, retry_at, wait)


def rate_limit(key: str | None = None, *, queue: str | None = None,
               type: str | None = None) -> RateLimiter:  # noqa: A002
    """The rate limit of a concurrency key (`rate_limit("customer:42")`), a queue or a job
    type, to check or consume outside a job. Name exactly one; InvalidJobArgument otherwise."""
    kind, name = _scope(queue, type, key)
    if not isinstance(name, str) or not name:
        raise InvalidJobArgument(kind, "must be a non-empty str")
    return RateLimiter(kind, name)


# How much longer than the longest period a start is kept. A claim counts the starts later
# than its own now() - period, and its now() is its transaction's start, which may be well
# before the pruner's clock: the claim waited for the limit's lock behind other claims (a
# loaded machine: seconds). A start the pruner deleted by its clock while such a claim still
# had to count it would let that claim start more than the limit (seen: 28 in a window of 20).
RATE_STARTS_SLACK_SECONDS = 300.0


def prune_rate_starts(*, batch_size: int = 10_000) -> int:
    """Delete the starts older than the longest period of any limit, and
    RATE_STARTS_SLACK_SECONDS more (all but those when no limit is left): no claim counts
    them. Returns how many."""
    limits = rate_limits_in_force()
    keep = max((r[3] for r in limits), default=0.0) + RATE_STARTS_SLACK_SECONDS
    deleted = 0
    while True:
        with queue_atomic(), db.queue_connection().cursor() as cur:
            cur.execute(sql.PRUNE_RATE_STARTS, {"keep_seconds": keep, "batch_size": batch_size})
            count = cur.rowcount
        deleted += count
        if count < batch_size:
            return deleted


__all__ = ["RateDecision", "RateLimiter", "limit_for", "prune_rate_starts", "rate_limit",
           "remove_rate_limit", "set_rate_limit"]
