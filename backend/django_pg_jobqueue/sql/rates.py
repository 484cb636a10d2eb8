"""Rate limits outside the claim (services/rate_limits.py): a check or an acquisition of a
limit's window from Python (`rate_limit(...).try_acquire()`), the pruning of old starts, and
the use of each limit's window for the metrics. The claim's own counting is in claim.py."""
from . import claim as _claim

# Taken before RATE_ACQUIRE, in the same transaction: the lock the claim of the same starts
# holds (a queue's or a type's: CLAIM_LIMIT_LOCK_KEY; a key's: its key lock), so that an
# acquisition and the claims take turns, and RATE_ACQUIRE's snapshot sees every start before.
RATE_LOCK_GLOBAL = f"SELECT pg_advisory_xact_lock({_claim.CLAIM_LIMIT_LOCK_KEY})"
RATE_LOCK_KEY = f"SELECT pg_advisory_xact_lock({_claim.KEYED_LOCK_CLASS}, hashtext(%(key)s))"

# The weight of the window's starts (now() - period, now()] of %(scope)s; if it leaves room for
# %(weight)s within %(max_starts)s and %(consume)s, one more start of that weight, now. Returns
# whether it fit, the weight used before it, and when enough of the window's starts will have
# left it for %(weight)s to fit (NULL: it fits now).
RATE_ACQUIRE = """
WITH window_starts AS (
    SELECT started_at, weight FROM job_rate_starts
    WHERE scope = %(scope)s AND started_at > now() - make_interval(secs => %(period_seconds)s)
),
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
       CASE WHEN NOT d.allowed THEN (
           SELECT min(f.started_at) + make_interval(secs => %(period_seconds)s)
           FROM (SELECT started_at, sum(weight) OVER (ORDER BY started_at) AS leaving
                 FROM window_starts) f
           WHERE d.n - f.leaving + %(weight)s <= %(max_starts)s) END,
       now()
FROM decision d
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
# arrays (the claim's), a key's scope matched to its limit as the claim does (an exact name
# before the longest prefix).
RATE_USE = """
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
                  WHERE rl.kind = 'key' AND (rl.name = substr(k.scope, 5) OR (
                      right(rl.name, 1) = '*' AND starts_with(substr(k.scope, 5), left(rl.name, -1))))
                  ORDER BY rl.name = substr(k.scope, 5) DESC, length(rl.name) DESC LIMIT 1) m
)
SELECT s.scope, s.limit_name, s.max_starts, s.period_seconds,
       (SELECT COALESCE(sum(weight), 0) FROM job_rate_starts r
         WHERE r.scope = s.scope
           AND r.started_at > now() - make_interval(secs => s.period_seconds))
FROM scopes s ORDER BY s.scope
"""
