"""Rate limits outside the claim (services/rate_limits.py): a check or an acquisition of a
limit's window from Python (`rate_limit(...).try_acquire()`), the pruning of old starts, and
the use of each limit's window for the metrics and what a queued job waits for. The claim's own
counting is in claim.py."""
from . import claim as _claim

# Taken before RATE_ACQUIRE, in the same transaction: the lock the claim of the same starts
# holds (a queue's or a type's: CLAIM_LIMIT_LOCK_KEY; a key's: its key lock), so that an
# acquisition and the claims take turns, and RATE_ACQUIRE's snapshot sees every start before.
RATE_LOCK_GLOBAL = f"SELECT pg_advisory_xact_lock({_claim.CLAIM_LIMIT_LOCK_KEY})"
RATE_LOCK_KEY = f"SELECT pg_advisory_xact_lock({_claim.KEYED_LOCK_CLASS}, hashtext(%(key)s))"

# The starts of `scope` in its sliding window (now() - `period` seconds, now()]: a FROM item
# (or a CTE's body), one probe of job_rate_starts' (scope, started_at) index. `scope` and
# `period` are SQL expressions (a parameter, a column). RATE_ACQUIRE, RATE_WAIT and RATE_USE
# count a window with it; the claim reads every start of the longest period at once instead.
def _window_starts(scope: str, period: str) -> str:
    return f"""(
    SELECT started_at, weight FROM job_rate_starts
    WHERE scope = {scope} AND started_at > now() - make_interval(secs => {period})
)"""


# When a start of %(weight)s fits again in a window whose starts (`starts`, a FROM item) weigh
# `used` of its `max_starts`: the first start by whose leaving the window (with the starts
# before it) enough weight has left, plus the period; NULL when it fits now.
def _fits_at(starts: str, used: str, max_starts: str, period: str) -> str:
    return f"""CASE WHEN {used} + %(weight)s > {max_starts} THEN (
           SELECT min(f.started_at) + make_interval(secs => {period})
           FROM (SELECT started_at, sum(weight) OVER (ORDER BY started_at) AS leaving
                 FROM {starts}) f
           WHERE {used} - f.leaving + %(weight)s <= {max_starts}) END"""


# The weight of the window's starts (now() - period, now()] of %(scope)s; if it leaves room for
# %(weight)s within %(max_starts)s and %(consume)s, one more start of that weight, now. Returns
# whether it fit, the weight used before it, and when enough of the window's starts will have
# left it for %(weight)s to fit (NULL: it fits now).
RATE_ACQUIRE = f"""
WITH window_starts AS {_window_starts("%(scope)s", "%(period_seconds)s")},
used AS (
    SELECT COALESCE(sum(weight), 0) AS n FROM window_starts
),
decision AS (
    SELECT n, n + %(weight)s <= %(max_starts)s AS allowed FROM used
),
acquired AS (
    INSERT INTO job_rate_starts (scope, started_at, weight)
    SELECT %(scope)s, now(), %(weight)s FROM decision WHERE allowed AND %(consume)s
)
SELECT d.allowed, d.n,
       {_fits_at("window_starts", "d.n", "%(max_starts)s", "%(period_seconds)s")},
       now()
FROM decision d
"""

# Why a queued job waits for its rate limits (selectors.rate_limit_wait): for each limit that
# applies to it (its queue's, its type's, its concurrency key's: %(scopes)s with their
# %(max_starts)s and %(periods)s), the weight started in its sliding window now, and, when the
# job's %(weight)s does not fit, when enough of those starts will have left the window for it
# (as RATE_ACQUIRE says for a caller outside a job); with the database's now(). One probe
# of job_rate_starts' (scope, started_at) index per limit.
RATE_WAIT = f"""
SELECT s.scope, s.max_starts, s.period_seconds, u.used,
       {_fits_at(_window_starts("s.scope", "s.period_seconds") + " w", "u.used", "s.max_starts",
                 "s.period_seconds")},
       now()
FROM unnest(%(scopes)s::text[], %(max_starts)s::int[], %(periods)s::float8[])
     AS s(scope, max_starts, period_seconds),
     LATERAL (SELECT COALESCE(sum(weight), 0) AS used
              FROM {_window_starts("s.scope", "s.period_seconds")} w) u
ORDER BY s.scope
"""

# The maintenance leader's pruner: starts older than the longest period count against no
# window. Batched by the started_at index.
PRUNE_RATE_STARTS = """
DELETE FROM job_rate_starts WHERE id IN (
    SELECT id FROM job_rate_starts
    WHERE started_at <= now() - make_interval(secs => %(keep_seconds)s)
    LIMIT %(batch_size)s)
"""

# The rate limits set at run time, for the metrics (which merge in JOB_RATE_LIMITS).
METRICS_RATE_LIMITS = "SELECT kind, name, max_starts, period_seconds FROM job_rate_limits"

# The weight each scope used in its window, for /metrics and GET rate-limits/: (scope, the
# name of the limit it counts against, max_starts, period_seconds, used) for every scope with
# a start in the longest period, and every queue or type limit. The limits come as parallel
# arrays (the claim's), a key's scope matched to its limit as the claim does (claim.key_match).
RATE_USE = f"""
WITH rl AS (
    SELECT * FROM unnest(%(rate_kinds)s::text[], %(rate_names)s::text[], %(rate_max)s::int[],
                         %(rate_periods)s::float8[]) AS rl(kind, name, max_starts, period_seconds)
),
scopes AS (
    SELECT rl.kind || ':' || rl.name AS scope, rl.name AS limit_name, rl.max_starts,
           rl.period_seconds
    FROM rl WHERE rl.kind <> 'key'
    UNION ALL
    SELECT k.scope, m.name, m.max_starts, m.period_seconds
    FROM (SELECT DISTINCT scope FROM job_rate_starts
          WHERE started_at > now() - make_interval(secs => %(longest)s)
            AND scope LIKE 'key:%%') k,
         LATERAL (SELECT name, max_starts, period_seconds FROM rl
                  WHERE rl.kind = 'key' AND {_claim.key_match("rl.name", "substr(k.scope, 5)")}) m
)
SELECT s.scope, s.limit_name, s.max_starts, s.period_seconds,
       (SELECT COALESCE(sum(weight), 0) FROM {_window_starts("s.scope", "s.period_seconds")} w)
FROM scopes s ORDER BY s.scope
"""
