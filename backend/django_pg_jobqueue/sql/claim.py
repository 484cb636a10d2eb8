"""The claim: queued -> running, one statement a batch (services/claiming.py).

CLAIM takes any queued job; CLAIM_FAIR, while a queue it covers is fair or ages its jobs,
the same in the order of fair shares and priority aging; CLAIM_LIMITED, while a queue or a
job type has a concurrency or rate limit, takes only what fits under them (CLAIM_LIMITED_FAIR:
the same in the fair order); CLAIM_KEYED_LOCK_KEYS and CLAIM_KEYED take jobs that have a
concurrency key (in the plain order). Every variant runs under CLAIM_PLANNER_SETTINGS (why: below), and
CLAIM_PROBES tells services/claiming.py which variants it needs.
"""

# --- claim ---------------------------------------------------------------------------------
# Pick runnable rows in claim order and lock them, skipping rows other claimers hold: no two
# workers ever get the same row, and none waits on another. The inner SELECT walks the partial
# index jobs_claim_order_idx in order and stops after LIMIT rows. Pitfall: the outer UPDATE
# must not re-evaluate the ORDER BY (it does not need to: the worker ids are assigned by the
# row number the picked CTE computed, in claim order, and the final SELECT orders by it).
# Paused queues are skipped inside the claim, and queues with a concurrency limit are claimed
# under a transaction-scoped advisory lock (see services/claiming.py), so limits hold across
# every worker process.
#
# A job past its expires_at is never claimed (enqueue(expires_at=...)): the predicate is
# checked on the heap row the ordered index scan already fetches (as concurrency_key IS NULL
# is), one comparison per candidate, never a change of plan; the reaper's sweep ends such
# jobs (services/expiring.py), so they do not linger at the head of the order.
#
# Second pitfall: that plan depends on the planner believing there are many queued rows.
# With statistics older than the backlog (a table filled since its last ANALYZE, or never
# analysed: autovacuum off or behind), it estimates a handful, and a bitmap scan of every
# queued row plus a sort, or a scan of jobs_queue_status_idx plus a sort, costs less on paper
# than the ordered index scan: each claim then reads and sorts the whole backlog (measured:
# the drain at a fifth of its speed until ANALYZE). No index or CTE shape takes that choice
# away from the planner, so the claim runs under CLAIM_PLANNER_SETTINGS (services/claiming.py:
# pinned to a lane's session, else transaction-local), and tests/contracts/test_plans.py EXPLAINs
# it on unanalysed tables.
CLAIM_PLANNER_SETTINGS = (
    # Sorting all candidates is never what the claim wants: the index gives the order.
    ("enable_sort", "off"),
    ("enable_bitmapscan", "off"),
    ("enable_seqscan", "off"),
    # The UPDATE finds the picked rows by primary key, one by one: a generic plan (prepared
    # statements) estimates LIMIT $n at a tenth of the table and would hash-join a seq scan.
    ("enable_hashjoin", "off"),
    ("enable_mergejoin", "off"),
    # Pitfall of the above: a disabled plan node still exists (the final ORDER BY n is a
    # sort), costed at 1e10, far past jit_above_cost: without this, each claim would spend a
    # second and a half compiling itself (measured).
    ("jit", "off"),
)
# One round trip: the settings (returning the values they replace), and for a claim under
# concurrency limits the advisory lock. Transaction-local: they end with the claim's own
# transaction; inside a caller's transaction, CLAIM_PLANNER_RESTORE puts the old values back.
CLAIM_PREAMBLE = "SELECT " + ", ".join(
    f"current_setting('{name}'), set_config('{name}', '{value}', true)"
    for name, value in CLAIM_PLANNER_SETTINGS)
CLAIM_PREAMBLE_LIMITED = CLAIM_PREAMBLE + ", pg_advisory_xact_lock(%(lock_key)s)"
# A worker's lane sets them once for its session instead (services/claiming.py,
# pin_claim_planner_settings): its connection runs nothing but claims and releases, so the
# claim stays one round trip. Never behind a transaction pooler, whose server sessions other
# clients share.
CLAIM_PLANNER_SESSION = "SELECT " + ", ".join(
    f"set_config('{name}', '{value}', false)" for name, value in CLAIM_PLANNER_SETTINGS)
# Put back before the lane gives its connection back to the worker's shared pool
# (db.worker_connection): the completer, renewer, reaper and pruner borrow from it too, and
# their statements must plan with the server's settings.
CLAIM_PLANNER_UNPIN = "SELECT " + ", ".join(
    f"set_config('{name}', (SELECT reset_val FROM pg_settings WHERE name = '{name}'), false)"
    for name, _ in CLAIM_PLANNER_SETTINGS)
CLAIM_PLANNER_RESTORE = "SELECT " + ", ".join(
    f"set_config('{name}', (%(values)s::text[])[{i + 1}], true)"
    for i, (name, _) in enumerate(CLAIM_PLANNER_SETTINGS))

# The expiry predicate every claim's candidates carry (the comment above says why it costs
# no plan change), one fragment so that the variants cannot drift apart.
_NOT_EXPIRED = "(expires_at IS NULL OR expires_at > now())  -- not expired"

# The claim writes no event (history v2): the attempt's start (its worker, locked_by; its time,
# started_at; its lease token) stays on the job row while it runs, and the statement that ends
# the attempt copies it into the outcome's event (sql.lifecycle ATTEMPT_START). A drained job
# so writes two history rows, `created` and its outcome, not three; the timeline derives each
# attempt's start from its outcome's row, and the running attempt's from the job row.
_CLAIM_UPDATE = """claimed AS (
    UPDATE jobs j
    SET status = 'running',
        locked_by = %(worker_ids)s::jsonb ->> (picked.n - 1)::int,  -- a JSON array of ids
        lease_token = gen_random_uuid(),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        started_at = now(),
        updated_at = now(),
        attempts = j.attempts + 1,
        debounce_key = NULL,  -- started: no longer the pending job of its key (debounce)
        progress_percent = NULL,
        progress_message = ''
    FROM picked
    WHERE j.id = picked.id
    RETURNING j.id, j.type, j.queue, j.payload, j.priority, j.attempts, j.max_attempts,
              j.lease_token, j.timeout_seconds, j.available_at, j.created_at, j.started_at,
              j.lease_expires_at, j.locked_by, picked.n
)"""
_CLAIM_RETURN = """
SELECT * FROM claimed ORDER BY n  -- claim order: the i-th row went to the i-th worker id
"""
_CLAIM_TAIL = _CLAIM_UPDATE + _CLAIM_RETURN
# Under rate limits: the same, and each claimed job's starts written to the starts log, one row
# per rate limit it counted against (`picked`'s queue_scope, type_scope and key_scope), at the
# claim's now(), which is also the job's started_at; and one for its fairness key's turns in a
# fair queue (fair_scope: CLAIM_LIMITED_FAIR's memory of the turns taken, see there), at the
# clock's time: it orders those claims as their lock does (a claim's now() is its
# transaction's start, possibly before an earlier claim's, if it waited for the lock).
_CLAIM_TAIL_COUNTING_STARTS = _CLAIM_UPDATE + """,
rate_starts AS (
    INSERT INTO job_rate_starts (scope, started_at, weight)
    SELECT s.scope, s.at, p.weight
    FROM claimed c JOIN picked p ON p.id = c.id,
         LATERAL (VALUES (p.queue_scope, now()), (p.type_scope, now()), (p.key_scope, now()),
                         (p.fair_scope, clock_timestamp())) AS s(scope, at)
    WHERE s.scope IS NOT NULL
)""" + _CLAIM_RETURN

# The candidates of CLAIM (and of each branch of CLAIM_SEEK), `{seek}` a further condition.
_CLAIM_CANDIDATES = """
        SELECT id FROM jobs
        WHERE status = 'queued' AND available_at <= now() {{queue_filter}}
          AND """ + _NOT_EXPIRED + """
          AND concurrency_key IS NULL  -- keyed jobs: CLAIM_KEYED only
          AND NOT EXISTS (
              SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused){seek}
        ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED"""

CLAIM = """
WITH picked AS (
    SELECT id, row_number() OVER () AS n
    FROM (""" + _CLAIM_CANDIDATES.format(seek="") + """
    ) AS locked
),
""" + _CLAIM_TAIL

# --- the claim that seeks: past the index entries of jobs already claimed ------------------
# While another session holds a snapshot open (a long transaction, a replica's query with
# hot_standby_feedback, a stuck logical slot), no vacuum can remove the index entries of the
# jobs claimed since it began, and no scan can mark them dead: CLAIM's walk of
# jobs_claim_order_idx starts at its head and steps over every one of them, visiting the heap
# for each, so each claim costs more the longer the snapshot is held (measured: 9 buffers a
# claim of 32 with nothing held, 1,135 with 40,000 jobs claimed since the snapshot; the drain
# fell to a third). CLAIM_SEEK starts where the lane's previous claim found its first job
# (`seek_*`: that job's priority and claim-order key), which the index takes as an Index Cond
# (`priority = P AND (available_at, created_at, id) >= (...)`: a descent, not a walk): one
# statement of three branches in claim order, each locking at most `limit` rows (FOR UPDATE
# is not allowed on a UNION itself, so each is a subquery of its own), the jobs of higher
# priority first (from the head: usually none), then P's from the key, then the lower ones,
# and the Append stops as soon as the outer LIMIT is filled. What it cannot see is a job of
# priority P behind the key (requeued or released keeping its old available_at, a run_at in
# the past, a row skipped while locked by a claim that rolled back): the lane claims from the
# head at least once a second meanwhile, and seeks only while such a claim is slow
# (worker/seek.py).
_SEEK = (" AND priority = %(seek_priority)s AND (available_at, created_at, id)"
         " >= (%(seek_available_at)s, %(seek_created_at)s, %(seek_id)s)")
CLAIM_SEEK = """
WITH picked AS (
    SELECT id, row_number() OVER () AS n
    FROM (
        SELECT id FROM (""" + _CLAIM_CANDIDATES.format(
            seek=" AND priority > %(seek_priority)s") + """
        ) AS higher
        UNION ALL
        SELECT id FROM (""" + _CLAIM_CANDIDATES.format(seek=_SEEK) + """
        ) AS same
        UNION ALL
        SELECT id FROM (""" + _CLAIM_CANDIDATES.format(
            seek=" AND priority < %(seek_priority)s") + """
        ) AS lower
        LIMIT %(limit)s
    ) AS locked
),
""" + _CLAIM_TAIL

# --- the fair claim: fair shares and priority aging (docs/how-to/fairness.md) ----------------
# Used instead of CLAIM while a queue the claim covers is fair (job_queue_settings.fair) or ages
# its jobs (aging_seconds); under concurrency or rate limits CLAIM_LIMITED_FAIR takes the same
# order (below). CLAIM itself stays as it is, so a queue that uses neither pays nothing. Two
# changes of order, both within a queue:
# - Fair shares: within one (effective) priority, the jobs of a fair queue take turns by
#   fairness key: a key of weight w (job_queue_settings.fairness_weights; 1 unless named) has
#   its n-th job in turn ceil(n / w) (`turn`), so each round gives every key its weight in
#   jobs, and a key with one job waits behind at most w jobs of each other key of weight w,
#   however long their backlogs. The keyless jobs of a fair queue share one turn (weight 1),
#   and so do the jobs of a queue that is not fair (in a claim over several queues).
# - Priority aging: a job of an aging queue counts as priority + one per aging_seconds it has
#   been due, up to the queue's cap (never below its own priority): `eff`.
# Order: eff DESC, turn, then the usual due time, creation, id.
# Turns are counted among the jobs waiting at this claim: a batch takes them in turns, but
# consecutive claims of one job each start again from turn 1, where the key whose first job
# is due first wins. CLAIM_LIMITED_FAIR remembers the turns taken (it runs under a lock, so
# its log of them is exact); this claim runs unlocked and concurrently, and writes nothing.
#
# How it stays cheap on a long backlog: no window over every queued row. Each fair queue's
# (key, priority) pairs with a job queued (`fair_groups`) and the distinct priorities in use
# (`priorities`) are found by skip scans (one index probe each, on jobs_fair_claim_order_idx
# and jobs_claim_order_idx); each pair's weight is looked up once (`weighted_groups`: the
# weights of %(fair_weight_queues)s, %(fair_weight_names)s, %(fair_weights)s, a name or a
# prefix ending in `*`, the name first, then the longest prefix); then each pair, and each
# priority for the rows without a key's turn, gives its first %(limit)s rows in due order by
# an index range scan (a prefix of equalities; a key's priority compared as `priority::int`,
# the fair index's column, which no other index has, so no statistics can send that lookup
# down jobs_claim_order_idx). Within one such group eff and turn both follow the due order,
# so those rows hold every row the batch can take from it. Cost: two probes per (key,
# priority) pair, reading up to %(limit)s rows each, and a sort of what they read; weights
# add one lookup per pair in the (small) list of weights.
# Pitfall: the rows without a turn of their own (jobs of a queue that is not fair, and a fair
# queue's jobs without a key) are found on jobs_claim_order_idx, past a fair queue's keyed rows
# of the same priority due before them: a walk of its backlog. So that a lane over fair queues
# whose jobs are all keyed never walks it, that part runs only with %(unkeyed)s: the claim
# covers a queue that is not fair, or a fair queue in which CLAIM_PROBES (once a second) found
# a job without a key waiting. Keep a fair queue's jobs keyed, and its lanes to fair queues.
#
# Which row names the limit or the weight a key comes under, of rows whose `name` column names
# a key or a prefix (a name ending in `*`, `customer:*`): the one naming the key (`key`, an
# expression) itself, else the longest prefix it starts with. A condition to follow `WHERE ...
# AND`, with its ORDER BY and LIMIT 1; the fair claim's weights, the keys' rate limits and
# their use (rates.RATE_USE) ask it, as catalogue.key_match does in Python.
def key_match(name: str, key: str) -> str:
    return (f"({name} = {key} OR (right({name}, 1) = '*' AND starts_with({key}, left({name}, -1))))"
            f"\n        ORDER BY {name} = {key} DESC, length({name}) DESC\n        LIMIT 1")


# The order is one fragment (_fair_order, CTE `ordered`: the candidates unlocked, each with
# its place `o`), which CLAIM_FAIR and CLAIM_LIMITED_FAIR both read; `limited_filter`: the
# limited claim's "its queue or type is full" conditions, or nothing.
def _fair_order(limited_filter: str, *, remember: bool = False) -> str:
    # With `remember` (CLAIM_LIMITED_FAIR): each (key, priority) pair's turns already taken
    # (`taken`, from the starts log), else none.
    memory = """,
last_served AS MATERIALIZED (  -- each pair's key's last start, one probe (not one per use)
    SELECT g.*, (SELECT max(s.started_at) FROM job_rate_starts s
                 WHERE s.scope = 'fair:' || g.queue || ' ' || g.k) AS last_start
    FROM weighted_groups g
),
served AS MATERIALIZED (
    SELECT g.*, (SELECT count(*) FROM (
        SELECT 1 FROM job_rate_starts s
        WHERE s.scope = 'fair:' || g.queue || ' ' || g.k AND s.started_at > g.since
        LIMIT %(window)s) t) AS taken
    FROM (SELECT g.*, min(COALESCE(g.last_start, '-infinity')) OVER (
              PARTITION BY g.queue COLLATE "C", g.p) AS since
          FROM last_served g) g
)""" if remember else """,
served AS (SELECT g.*, 0 AS taken FROM weighted_groups g)"""
    # Both heads' rows: runnable now, unkeyed, in an unpaused queue, within the limits (when
    # limited), oldest due first.
    runnable = """          AND """ + _NOT_EXPIRED + """
          AND concurrency_key IS NULL  -- keyed jobs: CLAIM_KEYED only
          AND NOT EXISTS (
              SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)""" + (
        limited_filter) + """
        ORDER BY available_at, created_at, id
        LIMIT %(limit)s"""
    return """aging AS (
    SELECT * FROM unnest(%(aging_queues)s::text[], %(aging_seconds)s::float8[],
                         %(aging_caps)s::int[]) AS a(queue, seconds, cap)
),
fair_weights AS (
    SELECT * FROM unnest(%(fair_weight_queues)s::text[], %(fair_weight_names)s::text[],
                         %(fair_weights)s::int[]) AS w(queue, name, turns)
),
priorities(p) AS (
    (SELECT priority FROM jobs WHERE status = 'queued' ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT nxt.p FROM priorities pr, LATERAL (
        SELECT priority AS p FROM jobs WHERE status = 'queued' AND priority < pr.p
        ORDER BY priority DESC LIMIT 1) nxt
),
fair_groups(queue, k, p) AS (
    SELECT q.queue, f.k, f.p FROM unnest(%(fair_queues)s::text[]) AS q(queue), LATERAL (
        SELECT fairness_key AS k, priority::int AS p FROM jobs
        WHERE status = 'queued' AND fairness_key IS NOT NULL AND queue = q.queue
        ORDER BY fairness_key, priority::int LIMIT 1) f
    UNION ALL
    SELECT g.queue, nxt.k, nxt.p FROM fair_groups g, LATERAL (
        SELECT fairness_key AS k, priority::int AS p FROM jobs
        WHERE status = 'queued' AND fairness_key IS NOT NULL AND queue = g.queue
          AND (fairness_key, priority::int) > (g.k, g.p)
        ORDER BY fairness_key, priority::int LIMIT 1) nxt
),
weighted_groups AS MATERIALIZED (  -- each pair's weight looked up once, not per row
    SELECT g.*, COALESCE((
        SELECT w.turns FROM fair_weights w
        WHERE w.queue = g.queue AND """ + key_match("w.name", "g.k") + """), 1) AS turns
    FROM fair_groups g
)""" + memory + """,
heads AS (
    SELECT c.*, g.k AS share, g.turns, g.taken FROM served g, LATERAL (
        SELECT id, queue, type, priority, available_at, created_at FROM jobs
        WHERE status = 'queued' AND queue = g.queue AND fairness_key = g.k
          AND priority::int = g.p AND available_at <= now() {queue_filter}
""" + runnable + """
    ) c
    UNION ALL
    SELECT c.*, NULL, 1, 0 FROM priorities pr, LATERAL (  -- only with %(unkeyed)s: see above
        SELECT id, queue, type, priority, available_at, created_at FROM jobs
        WHERE status = 'queued' AND priority = pr.p AND available_at <= now() {queue_filter}
          AND (fairness_key IS NULL OR queue <> ALL(%(fair_queues)s::text[]))  -- no turn
""" + runnable + """
    ) c
    WHERE %(unkeyed)s
),
aged AS (
    SELECT c.*, CASE WHEN a.seconds IS NULL THEN c.priority
                     ELSE GREATEST(c.priority, LEAST(COALESCE(a.cap, %(priority_max)s),
                         c.priority + floor(extract(epoch FROM now() - c.available_at)
                                            / a.seconds)::int)) END AS eff
    FROM heads c LEFT JOIN aging a ON a.queue = c.queue
),
ordered AS (
    SELECT t.*, row_number() OVER (ORDER BY eff DESC, turn, available_at, created_at, id) AS o
    FROM (
        -- COLLATE "C": the partition only groups equal names, which needs no locale's order.
        -- A key's n-th job, of weight w, after t turns taken, in turn ceil((t + n) / w):
        -- (t + n + w - 1) / w in integers.
        SELECT *, (row_number() OVER (PARTITION BY queue COLLATE "C", eff, share COLLATE "C"
                                      ORDER BY available_at, created_at, id) + taken + turns - 1)
                  / turns AS turn
        FROM aged
    ) t
)"""


# Locking: the candidates are read without locks, ordered, and only then locked one by one
# in that order (a primary-key probe each), FOR UPDATE SKIP LOCKED, up to %(limit)s: a row
# another claimer took meanwhile is skipped (the lock re-checks `status = 'queued'` on its
# newest version), so no claimer waits on another, and no row is locked that the batch does
# not take.
_LOCKED_IN_FAIR_ORDER = """SELECT o.* FROM (SELECT * FROM ordered ORDER BY o) o, LATERAL (
            -- IS NOT DISTINCT FROM: the same test as `=` here (status is never NULL), which no
            -- partial index of queued rows matches, so the primary key serves the lookup
            SELECT id FROM jobs WHERE jobs.id = o.id AND status IS NOT DISTINCT FROM 'queued'
            FOR UPDATE SKIP LOCKED) l
        ORDER BY o.o  -- the subquery's order: each row locked as the LIMIT asks for it"""

CLAIM_FAIR = """
WITH RECURSIVE """ + _fair_order("") + """,
picked AS (
    SELECT id, row_number() OVER () AS n
    FROM (
        """ + _LOCKED_IN_FAIR_ORDER + """
        LIMIT %(limit)s
    ) AS locked
),
""" + _CLAIM_TAIL

# --- claim under global concurrency limits -------------------------------------------------
# Used instead of CLAIM while any queue (job_queue_settings.concurrency_limit) or job type
# (@handler(concurrency=N)) has a limit. Counting running jobs and claiming more must not
# interleave between claimers, or two processes that each see 1 of 2 slots taken would both
# claim; so services/claiming.py runs this after pg_advisory_xact_lock(CLAIM_LIMIT_LOCK_KEY) in
# the same short transaction: READ COMMITTED gives this statement a snapshot taken after the
# lock, which sees every claim committed before it. Pitfall: the candidate window is locked
# (SKIP LOCKED) for the transaction's few milliseconds, so it is kept to a bounded size.
CLAIM_LIMIT_LOCK_KEY = 7_300_416_001

# The pieces CLAIM_LIMITED and CLAIM_KEYED share, written once. The limits (parallel arrays:
# %(limit_kinds)s 'queue' or 'type', %(limit_names)s its name, %(limit_values)s its limit),
# each with its running jobs now (n): CTEs `limits` and `limited_running`. The rate limits
# (%(rate_kinds)s 'queue', 'type' or 'key', %(rate_names)s a name or key pattern,
# %(rate_max)s its most starts, %(rate_periods)s its period), the queues' and types' each
# with the weight of its starts in the sliding window (now() - period, now()] (`rate_used`;
# keys: CLAIM_KEYED's `key_rate`); a type's weight per start (%(weight_types)s,
# %(weight_values)s; 1 if not listed): `rate_weights`.
#
# Why a sliding window is exact here: every claim that counts starts holds the lock of what it
# counts (CLAIM_LIMIT_LOCK_KEY for queues and types, its key's lock for a key), so claims of one
# limit take turns, and each statement's snapshot, taken after the lock, sees every start
# committed before. Each start is stamped with its claim's now() (the transaction's start,
# also the job's started_at) and the claim counts every start later than now() - period. Take
# any window (t - period, t] and the last claim, in lock order, of those whose starts fall in
# it: its now() <= t, so every other start in the window is later than its now() - period and
# was counted, with its own, within the limit.
_LIMITED_RUNNING = """limits AS (
    SELECT * FROM unnest(%(limit_kinds)s::text[], %(limit_names)s::text[], %(limit_values)s::int[])
        AS l(kind, name, max_running)
),
limited_running AS (
    SELECT l.kind, l.name, l.max_running,
           (SELECT count(*) FROM jobs r
             WHERE r.status = 'running'
               AND CASE l.kind WHEN 'queue' THEN r.queue = l.name ELSE r.type = l.name END) AS n
    FROM limits l
),""" + """
rate_limits AS (
    SELECT * FROM unnest(%(rate_kinds)s::text[], %(rate_names)s::text[], %(rate_max)s::int[],
                         %(rate_periods)s::float8[])
        AS rl(kind, name, max_starts, period_seconds)
),
rate_used AS (
    SELECT rl.kind, rl.name, rl.max_starts,
           (SELECT COALESCE(sum(s.weight), 0) FROM job_rate_starts s
             WHERE s.scope = rl.kind || ':' || rl.name
               AND s.started_at > now() - make_interval(secs => rl.period_seconds)) AS used
    FROM rate_limits rl WHERE rl.kind <> 'key'
),
rate_weights AS (
    SELECT * FROM unnest(%(weight_types)s::text[], %(weight_values)s::int[]) AS w(type, weight)
)"""
# Each candidate's rank within its queue and within its type, in claim order (CTE `ranked`,
# from `candidates` c; {key_rank}: another rank, or nothing; {order}: the claim order, as
# _claim_order("c.") gives it).
# The weight of the starts before it, its own included, within its queue and type (queue_weight,
# type_weight) for the rate limits.
_RANKED = """ranked AS (
    SELECT c.*,{key_rank}
           row_number() OVER (PARTITION BY c.queue ORDER BY {order}) AS queue_rank,
           row_number() OVER (PARTITION BY c.type ORDER BY {order}) AS type_rank,
           sum(c.weight) OVER (PARTITION BY c.queue ORDER BY {order}) AS queue_weight,
           sum(c.weight) OVER (PARTITION BY c.type ORDER BY {order}) AS type_weight
    FROM (SELECT c.*, COALESCE((SELECT w.weight FROM rate_weights w WHERE w.type = c.type), 1)
                      AS weight
          FROM candidates c OFFSET 0) c  -- OFFSET 0: each weight looked up once
)"""


def _claim_order(alias: str = "", fair: bool = False) -> str:
    """The order the limited claims rank and pick in: the plain claim order, or with `fair`
    the fair order's place (CTE `ordered`'s `o`, carried by CLAIM_LIMITED_FAIR's candidates)."""
    if fair:
        return f"{alias}o"
    return f"{alias}priority DESC, {alias}available_at, {alias}created_at, {alias}id"


# The ranked candidates that fit: the n-th of a queue (of a type) only if its running jobs + n
# stay within the queue's (the type's) limit, and the weight of the window's starts + its
# queue_weight (type_weight) within the queue's (the type's) rate limit; up to %(limit)s in
# claim order ({order} and {r_order}: _claim_order() and _claim_order("r.")), numbered n for
# _CLAIM_TAIL, with the scopes each start counts against for
# _CLAIM_TAIL_COUNTING_STARTS (CTE `picked`; {join} and {condition}: another limit's, or
# nothing; {key_scope}: the key's scope, or NULL; {fair_scope}: the fairness key's, or NULL). A candidate passed over still counts in the
# ranks of those behind it: a batch may take fewer than fit, never more.
_PICKED_WITHIN_LIMITS = """picked AS (
    SELECT id, row_number() OVER (ORDER BY {order}) AS n,
           weight, queue_scope, type_scope, key_scope, fair_scope
    FROM (
        SELECT r.*,
               CASE WHEN rq.max_starts IS NOT NULL THEN 'queue:' || r.queue END AS queue_scope,
               CASE WHEN rt.max_starts IS NOT NULL THEN 'type:' || r.type END AS type_scope,
               {key_scope}::text AS key_scope, {fair_scope}::text AS fair_scope
        FROM ranked r{join}
        LEFT JOIN limited_running q ON q.kind = 'queue' AND q.name = r.queue
        LEFT JOIN limited_running t ON t.kind = 'type' AND t.name = r.type
        LEFT JOIN rate_used rq ON rq.kind = 'queue' AND rq.name = r.queue
        LEFT JOIN rate_used rt ON rt.kind = 'type' AND rt.name = r.type
        WHERE {condition}(q.max_running IS NULL OR q.n + r.queue_rank <= q.max_running)
          AND (t.max_running IS NULL OR t.n + r.type_rank <= t.max_running)
          AND (rq.max_starts IS NULL OR rq.used + r.queue_weight <= rq.max_starts)
          AND (rt.max_starts IS NULL OR rt.used + r.type_weight <= rt.max_starts)
        ORDER BY {r_order}
        LIMIT %(limit)s
    ) allowed
),
"""

# A candidate's queue or type whose running jobs (whose window) is full: its jobs are left
# out, leaving the window to others (CLAIM_LIMITED's and CLAIM_LIMITED_FAIR's candidates).
_NOT_FULL = """
      AND NOT EXISTS (
          SELECT 1 FROM limited_running l WHERE l.n >= l.max_running
             AND CASE l.kind WHEN 'queue' THEN l.name = jobs.queue ELSE l.name = jobs.type END)
      AND NOT EXISTS (  -- a queue or type whose window is full: its jobs leave the window to others
          SELECT 1 FROM rate_used u WHERE u.used >= u.max_starts
             AND CASE u.kind WHEN 'queue' THEN u.name = jobs.queue ELSE u.name = jobs.type END)"""

CLAIM_LIMITED = """
WITH """ + _LIMITED_RUNNING + """,
candidates AS (
    SELECT id, queue, type, priority, available_at, created_at FROM jobs
    WHERE status = 'queued' AND available_at <= now() {queue_filter}
      AND """ + _NOT_EXPIRED + """
      AND concurrency_key IS NULL  -- keyed jobs: CLAIM_KEYED only
      AND NOT EXISTS (
          SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)""" + _NOT_FULL + """
    ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
    LIMIT %(window)s
    FOR UPDATE SKIP LOCKED
),
""" + _RANKED.format(key_rank="", order=_claim_order("c.")) + """,
""" + _PICKED_WITHIN_LIMITS.format(join="", condition="", key_scope="NULL", fair_scope="NULL",
                                  order=_claim_order(), r_order=_claim_order("r.")) + (
    _CLAIM_TAIL_COUNTING_STARTS)

# --- the limited claim in the fair order -----------------------------------------------------
# Used instead of CLAIM_LIMITED while a queue it covers is fair or ages its jobs: the same
# candidates as CLAIM_FAIR (the shared _fair_order, with the full queues and types left out as
# CLAIM_LIMITED leaves them), locked one by one in the fair order up to %(window)s (SKIP
# LOCKED, as CLAIM_FAIR locks), then ranked and picked within the limits in that order.
# Exactness is CLAIM_LIMITED's: the same advisory lock (CLAIM_LIMIT_LOCK_KEY) before the
# statement, whose snapshot counts the running jobs and the windows' starts after it; only
# the order in which candidates are ranked changes, and a candidate passed over still counts
# in the ranks of those behind it.
# Memory of turns: a limit often frees one slot at a time, so each claim takes one job; turns
# counted among the waiting jobs alone would then give every claim to the key whose head is
# due first (its first waiting job is always in turn 1). So this claim remembers: each job it
# starts of a key of a fair queue writes a row to the starts log (scope 'fair:<queue> <key>';
# a queue name has no space), and a key's turns already taken (`served`.taken) are its starts
# since the least recently served key of its queue and priority last started (`since`; a key
# with no start kept: since ever), counted up to %(window)s: the key served least recently is
# in turn 1, one served w times since (of weight w) in turn 2. Its n-th waiting job is then in
# turn ceil((taken + n) / w). Cost: two probes of job_rate_starts_window_idx per (key,
# priority) pair, reading up to %(window)s rows (that many only while a key with jobs waiting
# has not been served since the log's pruning: then every other key's kept starts count). Exact for the same reason as the limits: every
# claim that writes or reads these rows holds CLAIM_LIMIT_LOCK_KEY. The rows go with the
# starts log's pruning (the longest rate period plus five minutes): a key not served for that
# long counts as never served.
CLAIM_LIMITED_FAIR = """
WITH RECURSIVE """ + _LIMITED_RUNNING + """,
""" + _fair_order(_NOT_FULL.replace("\n      ", "\n          "), remember=True) + """,
candidates AS (
    SELECT id, queue, type, priority, available_at, created_at, share, o FROM (
        """ + _LOCKED_IN_FAIR_ORDER + """
        LIMIT %(window)s
    ) AS locked
),
""" + _RANKED.format(key_rank="", order=_claim_order("c.", fair=True)) + """,
""" + _PICKED_WITHIN_LIMITS.format(join="", condition="", key_scope="NULL",
                                  fair_scope="CASE WHEN r.share IS NOT NULL THEN "
                                             "'fair:' || r.queue || ' ' || r.share END",
                                  order=_claim_order(fair=True),
                                  r_order=_claim_order("r.", fair=True)) + (
    _CLAIM_TAIL_COUNTING_STARTS)

# --- claim of jobs with a concurrency key ----------------------------------------------------
# A job with a concurrency key runs only while fewer than its concurrency_key_limit jobs with
# that key run, across every worker process and host. The running jobs are the count: every
# way out of running (complete, fail, release, snooze, the reaper after a lease expired, a
# cancel the worker carries out) frees the slot by changing the status, with no counter to
# keep in step. CLAIM and CLAIM_LIMITED never take a keyed job; while keyed jobs wait,
# services/claiming.py claims them first, in a short transaction of two statements:
#
# 1. CLAIM_KEYED_LOCK_KEYS: the keys with a due job waiting and a free slot, in claim order
#    (jobs of a full key are passed over, so a key with a long backlog does not hold back the
#    keys behind it), each locked with pg_try_advisory_xact_lock in the two-int space
#    (KEYED_LOCK_CLASS, hashtext(key)): a key another claimer is claiming right now is
#    skipped, not waited for, so no claimer ever waits on another and no deadlock can form.
# 2. CLAIM_KEYED: only for the keys it holds. Its snapshot is taken after the locks: it sees
#    every claim of those keys committed before (a claimer releases its key locks only after
#    its commit is visible), and no claim of them can commit until this transaction ends. So
#    counting each key's running jobs and claiming up to the limit cannot interleave with
#    another claim of the same key: no read-then-write race, whatever the number of workers.
#    Several jobs of one key in one batch are ranked within the key (key_rank): the n-th is
#    taken only if running + n <= its limit. Under queue or type limits the transaction first
#    takes CLAIM_LIMIT_LOCK_KEY, as CLAIM_LIMITED does, and the same queue and type ranks apply.
# A hash collision between two keys only makes their claims take turns; their limits stay apart.
KEYED_LOCK_CLASS = 730_041_600

_CLAIM_KEYED_LOCK_KEYS = """
WITH running AS (
    SELECT concurrency_key AS k, count(*) AS n FROM jobs
    WHERE status = 'running' AND concurrency_key IS NOT NULL
    GROUP BY concurrency_key
),{rate_ctes}
waiting AS (
    SELECT concurrency_key AS k FROM jobs
    WHERE status = 'queued' AND concurrency_key IS NOT NULL AND available_at <= now() {{queue_filter}}
      AND """ + _NOT_EXPIRED + """
      AND NOT EXISTS (
          SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
      AND NOT EXISTS (
          SELECT 1 FROM running WHERE running.k = jobs.concurrency_key
             AND running.n >= jobs.concurrency_key_limit){rate_filter}
    ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
    LIMIT %(window)s
),
keys AS (SELECT DISTINCT k FROM waiting OFFSET 0)  -- OFFSET 0: each key tried once, here
SELECT ARRAY(SELECT k FROM keys WHERE pg_try_advisory_xact_lock(%(lock_class)s::int, hashtext(k)))
"""
CLAIM_KEYED_LOCK_KEYS = _CLAIM_KEYED_LOCK_KEYS.format(rate_ctes="", rate_filter="")
# The limit of a key (`k.k`) among the key rate limits of CTE `key_limits` (key_match).
_KEY_RATE_LIMIT = """LATERAL (
        SELECT kl.max_starts, kl.period_seconds FROM key_limits kl
        WHERE """ + key_match("kl.name", "k.k") + """
    ) m"""
# While key rate limits exist (%(key_rate_names)s, %(key_rate_max)s, %(key_rate_periods)s):
# a key whose window is full is passed over like a key whose slots are full, so that its
# backlog does not hold back the keys behind it. Its starts are read once, from the starts of
# the longest key period (%(key_period_max)s), on job_rate_starts_started_at_idx.
CLAIM_KEYED_LOCK_KEYS_RATED = _CLAIM_KEYED_LOCK_KEYS.format(rate_ctes="""
key_limits AS (
    SELECT * FROM unnest(%(key_rate_names)s::text[], %(key_rate_max)s::int[],
                         %(key_rate_periods)s::float8[]) AS kl(name, max_starts, period_seconds)
),
key_starts AS MATERIALIZED (
    SELECT substr(scope, 5) AS k, started_at, weight FROM job_rate_starts
    WHERE started_at > now() - make_interval(secs => %(key_period_max)s) AND scope LIKE 'key:%%'
),
full_keys AS (
    SELECT k.k FROM (SELECT DISTINCT k FROM key_starts) k, """ + _KEY_RATE_LIMIT + """
    WHERE (SELECT sum(ks.weight) FROM key_starts ks
            WHERE ks.k = k.k AND ks.started_at > now() - make_interval(secs => m.period_seconds))
          >= m.max_starts
),""", rate_filter="""
      AND NOT EXISTS (SELECT 1 FROM full_keys f WHERE f.k = jobs.concurrency_key)""")

CLAIM_KEYED = """
WITH running AS (
    SELECT k, (SELECT count(*) FROM jobs r
               WHERE r.status = 'running' AND r.concurrency_key = k) AS n
    FROM unnest(%(keys)s::text[]) AS k
),
""" + _LIMITED_RUNNING + """,
key_limits AS (
    SELECT name, max_starts, period_seconds FROM rate_limits WHERE kind = 'key'
),
key_rate AS MATERIALIZED (  -- each key's rate limit if it has one, and its window's weight
    SELECT k.k, m.max_starts,
           (SELECT COALESCE(sum(s.weight), 0) FROM job_rate_starts s
             WHERE s.scope = 'key:' || k.k
               AND s.started_at > now() - make_interval(secs => m.period_seconds)) AS used
    FROM unnest(%(keys)s::text[]) AS k(k), """ + _KEY_RATE_LIMIT + """
),
candidates AS (
    SELECT c.* FROM running, LATERAL (
        SELECT id, queue, type, concurrency_key, concurrency_key_limit, priority, available_at,
               created_at
        FROM jobs
        WHERE status = 'queued' AND concurrency_key = running.k AND available_at <= now()
          AND """ + _NOT_EXPIRED + """
          {queue_filter}
          AND NOT EXISTS (
              SELECT 1 FROM job_queue_settings qs WHERE qs.queue = jobs.queue AND qs.paused)
        ORDER BY priority DESC, available_at ASC, created_at ASC, id ASC
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) c
),
""" + _RANKED.format(key_rank="""
           row_number() OVER (PARTITION BY c.concurrency_key
                              ORDER BY c.priority DESC, c.available_at, c.created_at, c.id) AS key_rank,
           sum(c.weight) OVER (PARTITION BY c.concurrency_key
                               ORDER BY c.priority DESC, c.available_at, c.created_at, c.id) AS key_weight,""",
                   order=_claim_order("c.")) + """,
""" + _PICKED_WITHIN_LIMITS.format(
    order=_claim_order(), r_order=_claim_order("r."),
    join="\n        JOIN running k ON k.k = r.concurrency_key"
         "\n        LEFT JOIN key_rate kr ON kr.k = r.concurrency_key",
    condition="k.n + r.key_rank <= r.concurrency_key_limit\n"
              "          AND (kr.max_starts IS NULL OR kr.used + r.key_weight <= kr.max_starts)\n"
              "          AND ",
    key_scope="CASE WHEN kr.max_starts IS NOT NULL THEN 'key:' || r.concurrency_key END",
    fair_scope="NULL",
) + _CLAIM_TAIL_COUNTING_STARTS

# --- queue limits and waiting keyed jobs, as claims read them (cached a second) ------------
# The facts a claim reads at most once a second per process (services/claiming.py), in one
# statement: the queues' concurrency limits, whether any job with a concurrency key waits,
# the rate limits set at run time (job_rate_limits), and the queues that are fair or age
# their jobs (CLAIM_FAIR's, as [queue, fair, aging_seconds, aging_max_priority, whether a job
# without a fairness key waits in it, its fairness keys' weights]). That last probe walks a fair queue's queued rows (on
# jobs_queue_status_idx) until it finds one without a key: once a second per worker process,
# so that a claim never has to (CLAIM_FAIR's %(unkeyed)s).
# An idle worker's backed-off poll refreshes both: one transaction, not two.
CLAIM_PROBES = """
SELECT (SELECT COALESCE(jsonb_object_agg(queue, concurrency_limit), '{}'::jsonb)
          FROM job_queue_settings WHERE concurrency_limit IS NOT NULL),
       EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND concurrency_key IS NOT NULL),
       (SELECT COALESCE(jsonb_agg(jsonb_build_array(kind, name, max_starts, period_seconds)),
                        '[]'::jsonb)
          FROM job_rate_limits),
       (SELECT COALESCE(jsonb_agg(jsonb_build_array(
                   queue, fair, aging_seconds, aging_max_priority,
                   fair AND EXISTS (SELECT 1 FROM jobs WHERE status = 'queued'
                                       AND jobs.queue = qs.queue AND fairness_key IS NULL),
                   fairness_weights)),
                        '[]'::jsonb)
          FROM job_queue_settings qs WHERE fair OR aging_seconds IS NOT NULL)
"""
