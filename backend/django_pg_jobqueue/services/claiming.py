"""claim: queued -> running, in one statement (sql.CLAIM)."""
import json
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from .. import conf, db, sql
from ..catalogue import RateLimitRow
from ..db import atomic as queue_atomic
from ..db import queue_connection
from ..registry import registry
from ..states import PRIORITY_MAX

# Queue limits live in job_queue_settings and may change at run time; each process re-reads
# them at most once a second, so a new limit holds within a second.
_LIMITS_TTL = 1.0
_limits_lock = threading.Lock()
_queue_limits: tuple[float, dict[str, int]] = (0.0, {})
# Rate limits as claims read them: (kind, name, max_starts, period_seconds), those set at run
# time (job_rate_limits, read with the queue limits) over those JOB_RATE_LIMITS declares.
_rate_limits: list[RateLimitRow] = []
# The queues that are fair or age their jobs (sql.CLAIM_FAIR), read with the queue limits:
# {queue: FairQueue}.
_fair_queues: dict[str, "FairQueue"] = {}


class FairQueue(NamedTuple):
    """A queue that is fair or ages its jobs, as the claim reads it (sql.CLAIM_PROBES)."""
    fair: bool
    aging_seconds: float | None
    aging_max_priority: int | None
    unkeyed: bool  # a job without a fairness key waits in it
    weights: dict[str, int]  # its fairness keys' weights (a key or a prefix ending in `*`)


def queue_limits() -> dict[str, int]:
    with _limits_lock:
        fetched_at, limits = _queue_limits
        if time.monotonic() - fetched_at < _LIMITS_TTL:
            return limits
    return _refresh_probes()[0]


def _refresh_probes() -> tuple[dict[str, int], bool]:
    """Read the queues' limits and whether keyed jobs wait, in one statement
    (sql.CLAIM_PROBES), and cache both."""
    global _queue_limits, _rate_limits, _fair_queues
    raw, waiting, raw_rates, raw_fair = db.fetch_all(sql.CLAIM_PROBES, {})[0]
    limits = {q: int(n) for q, n in (json.loads(raw) if isinstance(raw, str) else raw).items()}
    rates = json.loads(raw_rates) if isinstance(raw_rates, str) else raw_rates
    merged = conf.get().rate_limits_in_force(rates)
    fair = {q: FairQueue(bool(f), a, m, bool(unkeyed), dict(weights or {}))
            for q, f, a, m, unkeyed, weights in
            (json.loads(raw_fair) if isinstance(raw_fair, str) else raw_fair)}
    with _limits_lock:
        _queue_limits = (time.monotonic(), limits)
        _rate_limits = merged
        _fair_queues = fair
    note_keyed_jobs(bool(waiting))
    return limits, bool(waiting)


def rate_limits() -> list[RateLimitRow]:
    """The rate limits in force, cached like queue_limits()."""
    queue_limits()  # refreshes both when stale
    with _limits_lock:
        return list(_rate_limits)


def _rate_limits_for(queues) -> tuple[list[RateLimitRow], bool, bool]:
    """The rate limits a claim over `queues` counts against, whether a queue's or a type's is
    among them (then it takes CLAIM_LIMIT_LOCK_KEY), and whether a key's is."""
    rates = [r for r in rate_limits()
             if r[0] != "queue" or queues is None or r[1] in queues]
    return (rates, any(r[0] != "key" for r in rates), any(r[0] == "key" for r in rates))


def rate_window(queues: list[str] | tuple[str, ...] | None) -> float:
    """The longest period of the rate limits a claim over `queues` counts against (0: none);
    cached like queue_limits()."""
    return max((r[3] for r in _rate_limits_for(queues)[0]), default=0.0)


def limits_apply(queues: list[str] | tuple[str, ...] | None) -> bool:
    """Whether a claim over `queues` (None: every queue) runs under a concurrency or rate
    limit: a limit on one of those queues, or on any job type or key. Cached like
    queue_limits()."""
    if registry.type_limits() or _rate_limits_for(queues)[0]:
        return True
    limited = queue_limits()
    return bool(limited) and (queues is None or any(q in limited for q in queues))


def fair_queues() -> dict[str, FairQueue]:
    """The queues that are fair or age their jobs, {queue: FairQueue}; cached like
    queue_limits()."""
    queue_limits()  # refreshes them all when stale
    with _limits_lock:
        return dict(_fair_queues)


def _fair_params(queues) -> dict | None:
    """sql.CLAIM_FAIR's (and CLAIM_LIMITED_FAIR's) parameters for a claim over `queues` (None:
    every queue), or None when no queue of them is fair or ages its jobs: then the claim is
    sql.CLAIM (CLAIM_LIMITED), unchanged."""
    covered = {q: v for q, v in fair_queues().items() if queues is None or q in queues}
    if not covered:
        return None
    aging = [(q, v.aging_seconds, v.aging_max_priority) for q, v in covered.items()
             if v.aging_seconds is not None]
    fair = [q for q, v in covered.items() if v.fair]
    # Rows without a turn of their own to look for (sql.CLAIM_FAIR): the claim covers a queue
    # that is not fair, or a fair queue with a job without a key waiting.
    unkeyed = (queues is None or any(q not in fair for q in queues)
               or any(covered[q].unkeyed for q in fair))
    weights = [(q, name, turns) for q in fair for name, turns in covered[q].weights.items()]
    return {"fair_queues": fair, "unkeyed": unkeyed,
            "aging_queues": [q for q, _, _ in aging],
            "aging_seconds": [float(a) for _, a, _ in aging],
            "aging_caps": [m for _, _, m in aging], "priority_max": PRIORITY_MAX,
            "fair_weight_queues": [q for q, _, _ in weights],
            "fair_weight_names": [n for _, n, _ in weights],
            "fair_weights": [int(t) for _, _, t in weights]}


def fair_queues_known() -> bool:
    """Whether this process has seen a queue that is fair or ages its jobs (no refresh)."""
    return bool(_fair_queues)


def note_unkeyed_jobs(queues: set[str]) -> None:
    """This process just enqueued jobs without a fairness key into `queues`: its next claim
    looks for them in those that are fair, without waiting for the probe (sql.CLAIM_FAIR's
    %(unkeyed)s). Costs nothing while no queue is fair or ages its jobs."""
    with _limits_lock:
        for queue in queues & _fair_queues.keys():
            _fair_queues[queue] = _fair_queues[queue]._replace(unkeyed=True)


def forget_cached_limits() -> None:
    global _queue_limits, _rate_limits, _fair_queues
    with _limits_lock:
        _queue_limits = (0.0, {})
        _rate_limits = []
        _fair_queues = {}


# Whether jobs with a concurrency key wait (sql.CLAIM_PROBES, with the queue limits), asked at most once a
# second per process: while none does, a claim is sql.CLAIM alone, exactly as without keys.
# An enqueue of a keyed job in this process sets it at once; a keyed job enqueued by another
# process is seen within the second. While any waits, each claim runs the keyed claim first.
_KEYED_TTL = 1.0
_keyed_waiting: tuple[float, bool] = (0.0, False)


def keyed_jobs_waiting() -> bool:
    global _keyed_waiting
    with _limits_lock:
        fetched_at, waiting = _keyed_waiting
        if time.monotonic() - fetched_at < _KEYED_TTL:
            return waiting
    return _refresh_probes()[1]


def note_keyed_jobs(waiting: bool) -> None:
    """What this process just learnt about keyed jobs waiting (its own enqueue, the probe)."""
    global _keyed_waiting
    with _limits_lock:
        _keyed_waiting = (time.monotonic(), waiting)


@dataclass
class ClaimedJob:
    id: int
    type: str
    queue: str
    payload: dict
    priority: int
    attempt: int
    max_attempts: int
    lease_token: uuid.UUID
    timeout_seconds: int | None
    available_at: datetime
    created_at: datetime
    started_at: datetime
    lease_expires_at: datetime
    worker_id: str


def claim(*, worker_ids: list[str], queues: list[str] | None = None,
          lease_seconds: float | None = None, types: list[str] | None = None,
          job_ids: list[int] | None = None, exclude_types: list[str] | None = None,
          exclude_queues: list[str] | None = None,
          after: tuple | None = None) -> list[ClaimedJob]:
    """Claim up to len(worker_ids) runnable jobs in claim order; the i-th goes to worker_ids[i].

    `types` and `job_ids` narrow the claim further (used by `django_pg_jobqueue.testing`'s drain and crash
    helpers; workers claim by queue only). `exclude_types`: types this worker has no handler
    for (worker/unknown_types.py), left out while it waits for one that has. `exclude_queues`:
    queues this worker's host may not take more of now (its overrides: worker/overrides.py).
    `after`: a job's (priority, available_at, created_at, id) to start the plain claim from
    (sql.CLAIM_SEEK: past what the lane already claimed, under a held snapshot; the fair,
    limited and keyed claims start from the head as always). Runs as its own short
    transaction, under the planner settings of sql.CLAIM_PLANNER_SETTINGS: nothing stays open
    while handlers run.
    """
    if not worker_ids:
        return []
    queue_filter = " ".join(f for f, on in (
        ("AND queue = ANY(%(queues)s::text[])", queues),
        ("AND type = ANY(%(types)s::text[])", types),
        ("AND id = ANY(%(job_ids)s::bigint[])", job_ids),
        ("AND type <> ALL(%(exclude_types)s::text[])", exclude_types),
        ("AND queue <> ALL(%(exclude_queues)s::text[])", exclude_queues),
    ) if on)
    params = {
        "limit": len(worker_ids),
        "worker_ids": json.dumps(list(worker_ids)),
        "lease_seconds": float(lease_seconds or conf.get().LEASE_SECONDS),
        "queues": list(queues or []),
        "types": list(types or []),
        "job_ids": list(job_ids or []),
        "exclude_types": list(exclude_types or []),
        "exclude_queues": list(exclude_queues or []),
    }
    limits = [("queue", q, n) for q, n in queue_limits().items()]
    limits += [("type", t, n) for t, n in registry.type_limits().items()]
    rates, global_rates, key_rates = _rate_limits_for(queues)
    keyed: list[ClaimedJob] = []
    if keyed_jobs_waiting():  # jobs with a concurrency key first, within their limits
        keyed = _claim_keyed(worker_ids, queue_filter, params | _rate_params(rates), limits,
                             locked=bool(limits) or global_rates,
                             key_rates=[r for r in rates if r[0] == "key"] if key_rates else [])
        if len(keyed) == len(worker_ids):
            return keyed
        rest = list(worker_ids[len(keyed):])  # the keyed rows took the first ids, in order
        params.update(limit=len(rest), worker_ids=json.dumps(rest))
    if global_rates:
        params.update(_rate_params(rates))
    locked = bool(limits) or global_rates
    fair = _fair_params(queues)
    if fair is not None:
        params.update(fair)
    seek = after is not None and fair is None and not locked
    if after is not None and seek:
        params.update(seek_priority=after[0], seek_available_at=after[1],
                      seek_created_at=after[2], seek_id=after[3])
    return keyed + _claim_unkeyed(queue_filter, params, limits, locked=locked, fair=fair is not None,
                                  seek=seek)


def _rate_params(rates: list[RateLimitRow]) -> dict:
    """The rate limits and the types' weights as sql.CLAIM_LIMITED and CLAIM_KEYED take them."""
    weights = conf.get().RATE_WEIGHTS if rates else {}
    return {"rate_kinds": [r[0] for r in rates], "rate_names": [r[1] for r in rates],
            "rate_max": [r[2] for r in rates], "rate_periods": [r[3] for r in rates],
            "weight_types": list(weights), "weight_values": list(weights.values())}


def _claim_unkeyed(queue_filter: str, params: dict, limits: list, *,
                   locked: bool, fair: bool = False, seek: bool = False) -> list[ClaimedJob]:
    """`locked`: a concurrency or rate limit of a queue or a type applies (sql.CLAIM_LIMITED,
    under CLAIM_LIMIT_LOCK_KEY); `fair`: a queue of the claim is fair or ages its jobs
    (sql.CLAIM_FAIR, or under limits sql.CLAIM_LIMITED_FAIR); else sql.CLAIM, exactly as
    without limits, or sql.CLAIM_SEEK from `params`' seek key (`seek`)."""
    plain = sql.CLAIM_SEEK if seek else sql.CLAIM
    statement = (sql.CLAIM_FAIR if fair else plain).format(queue_filter=queue_filter)
    if not locked and _pinned(queue_connection()):  # a lane's: one statement
        rows = db.fetch_all(statement, params)
        return _claimed(rows)
    # One short transaction: the planner settings that keep the claim on its index whatever
    # the statistics say (sql.CLAIM_PLANNER_SETTINGS), then, under limits, the advisory lock.
    nested = queue_connection().in_atomic_block  # a caller's transaction (a test's, drain's)
    with queue_atomic():
        if not locked:
            saved = db.fetch_all(sql.CLAIM_PREAMBLE, {})[0]
            rows = db.fetch_all(statement, params)
        else:
            params = _rate_params([]) | params | dict(
                limit_kinds=[l[0] for l in limits], limit_names=[l[1] for l in limits],
                limit_values=[l[2] for l in limits], window=max(100, 10 * params["limit"]),
            )
            saved = db.fetch_all(sql.CLAIM_PREAMBLE_LIMITED,
                                 {"lock_key": sql.CLAIM_LIMIT_LOCK_KEY})[0]
            limited = sql.CLAIM_LIMITED_FAIR if fair else sql.CLAIM_LIMITED
            rows = db.fetch_all(limited.format(queue_filter=queue_filter), params)
        if nested:  # the settings would outlive the claim, until the caller's commit
            old_values = saved[0:2 * len(sql.CLAIM_PLANNER_SETTINGS):2]  # (old, new) pairs
            db.fetch_all(sql.CLAIM_PLANNER_RESTORE, {"values": list(old_values)})
    return _claimed(rows)


def _claim_keyed(worker_ids: list[str], queue_filter: str, params: dict,
                 limits: list, *, locked: bool, key_rates: list) -> list[ClaimedJob]:
    """Claim jobs with a concurrency key, never more running per key than its limit (nor
    more starts per window than its rate limit): one short transaction, the keys locked by
    the first statement and claimed by the second (sql.CLAIM_KEYED_LOCK_KEYS and
    sql.CLAIM_KEYED say why that holds across processes). `locked`: a concurrency or rate
    limit of a queue or type applies, which counts keyed jobs too."""
    keyed_params = dict(params, window=max(100, 10 * len(worker_ids)),
                        lock_class=sql.KEYED_LOCK_CLASS,
                        limit_kinds=[l[0] for l in limits], limit_names=[l[1] for l in limits],
                        limit_values=[l[2] for l in limits])
    lock_keys = sql.CLAIM_KEYED_LOCK_KEYS
    if key_rates:  # keys whose window is full are passed over
        lock_keys = sql.CLAIM_KEYED_LOCK_KEYS_RATED
        keyed_params.update(key_rate_names=[r[1] for r in key_rates],
                            key_rate_max=[r[2] for r in key_rates],
                            key_rate_periods=[r[3] for r in key_rates],
                            key_period_max=max(r[3] for r in key_rates))
    nested = queue_connection().in_atomic_block
    with queue_atomic():
        saved = None
        if locked:  # queue or type limits count keyed jobs too: one claimer at a time
            saved = db.fetch_all(sql.CLAIM_PREAMBLE_LIMITED,
                                 {"lock_key": sql.CLAIM_LIMIT_LOCK_KEY})[0]
        elif not _pinned(queue_connection()):
            saved = db.fetch_all(sql.CLAIM_PREAMBLE, {})[0]
        keys = db.fetch_all(lock_keys.format(queue_filter=queue_filter), keyed_params)[0][0]
        rows = []
        if keys:
            keyed_params["keys"] = list(keys)
            rows = db.fetch_all(sql.CLAIM_KEYED.format(queue_filter=queue_filter),
                                keyed_params)
        if nested and saved is not None:
            old_values = saved[0:2 * len(sql.CLAIM_PLANNER_SETTINGS):2]
            db.fetch_all(sql.CLAIM_PLANNER_RESTORE, {"values": list(old_values)})
    return _claimed(rows)


# The payload comes as jsonb's text, which PostgreSQL writes without whitespace around the
# document or anything after it: all json.loads checks beyond raw_decode, at three times its
# cost for a small payload (a claimed job's largest Python cost in the lane).
_decode_jsonb = json.JSONDecoder().raw_decode


def _claimed(rows) -> list[ClaimedJob]:
    # Rows come in claim order (the statement's ORDER BY n), the order of worker_ids. Their
    # columns are ClaimedJob's fields in its order (id, type, queue, payload, priority,
    # attempt, max_attempts, lease_token, timeout_seconds, available_at, created_at,
    # started_at, lease_expires_at, worker_id), passed by position: by keyword, the call
    # cost twice as much, per claimed job.
    return [
        ClaimedJob(r[0], r[1], r[2],
                   _decode_jsonb(r[3])[0] if isinstance(r[3], str) else r[3],  # jsonb as text
                   r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13])
        for r in rows
    ]


# --- the planner settings, pinned to a lane's session -----------------------------------
_PINNED_MARK = "_jobqueue_claim_planner_pinned"


def _pinned(connection) -> bool:
    raw = connection.connection
    return raw is not None and getattr(raw, _PINNED_MARK, False)


def pin_claim_planner_settings() -> bool:
    """Set sql.CLAIM_PLANNER_SETTINGS for the session of this thread's queue connection, once
    per connection (a reconnect sets them again): from then on claim() on it is one statement
    instead of a transaction of three. Only for a connection that runs nothing but claims and
    releases (a worker's lane), and never behind a transaction pooler (the session is
    not ours there): returns whether the settings are pinned."""
    if conf.get().TRANSACTION_POOLER:
        return False
    connection = queue_connection()
    if _pinned(connection):
        return True
    if connection.in_atomic_block:
        return False
    db.fetch_all(sql.CLAIM_PLANNER_SESSION, {})
    setattr(connection.connection, _PINNED_MARK, True)
    return True


def unpin_claim_planner_settings() -> None:
    """Put the session's planner settings back (sql.CLAIM_PLANNER_UNPIN) if this thread's
    queue connection has them pinned: before a lane gives its connection back to the
    worker's shared pool, whose other borrowers must not plan under them."""
    connection = queue_connection()
    if not _pinned(connection):
        return
    db.fetch_all(sql.CLAIM_PLANNER_UNPIN, {})
    setattr(connection.connection, _PINNED_MARK, False)
