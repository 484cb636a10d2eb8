"""Upkeep: the history's guard (every event names a job that exists, migration 0015), pruning
of finished jobs, job_events' partitions (create, move, drop), and the queue connections'
session set-up (db.py) and reset between jobs (worker/hygiene.py).
"""

# --- the history's guard: every event names a job that exists (migration 0015) --------------
# What a foreign key from job_events to jobs promised, checked once per statement instead of
# once per row. A foreign key runs its check for each event row (a trigger call and a
# `SELECT ... FOR KEY SHARE` of the job, which writes a lock into the job row and WAL for it),
# three or more times per job on the hot path: measured at a sixth of PostgreSQL's CPU per
# drained job. These triggers keep the same promise (no event can name a job that does not
# exist, no job can go while it has events) at one query per statement:
# - after an INSERT into job_events: every new event's job exists. A job row this transaction
#   wrote itself (inserted or updated: every statement that moves a job writes its row and its
#   event together) cannot be deleted by another transaction before this one commits (a
#   deleter waits on the row), so only the others are locked FOR KEY SHARE, as the foreign key
#   did (LOG, LEASES_LOST and the rescue of a dropped partition's events name such jobs);
#   locked first, then counted, so a job deleted meanwhile is seen as missing. "Wrote itself"
#   is read from the row's xmin, compared with the transaction's own xid (a row written in a
#   savepoint carries the subtransaction's xid and is locked: correct, only slower).
# - at the commit of a transaction that deleted jobs: none of them has an event left (every
#   deleter of jobs deletes their events in the same transaction: the pruner, operator delete,
#   Django's collector). Deferred, as the foreign key was, so a job may go before its events;
#   a check per deleted row, as before: deletes are retention's path, not the hot one.
# - after a TRUNCATE of jobs: job_events is empty (TRUNCATE jobs, job_events together passes).
# - a job's id and an event's job_id never change.
# The insert guard sits on job_events and on each of its partitions (a statement that names a
# partition fires that partition's statement triggers, not the parent's); both are named
# after the invariant they keep. Violations raise SQLSTATE 23503 (foreign_key_violation), as
# the foreign key did, so callers see an IntegrityError.
# The two guards of a job's going (a deleted row's, a TRUNCATE's), alike: {name}, the function's
# {options}, the {events} whose existence refuses it, and the RAISE's {message}.
_JOBS_GONE_WITH_EVENTS = """
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql{options} AS $$
BEGIN
    IF EXISTS ({events}) THEN
        RAISE EXCEPTION {message}
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs',
                  CONSTRAINT = 'job_deleted_with_its_events';
    END IF;
    RETURN NULL;
END $$
"""
HISTORY_GUARD_FUNCTIONS = (
    """
CREATE OR REPLACE FUNCTION job_events_name_existing_jobs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    lo bigint;
    hi bigint;
    written xid;
    missing bigint;
    others bigint;
BEGIN
    -- Each query here costs its planning at every call if it reads the transition table
    -- (measured: a join over it, about 40 us), so the common statement, whose events all
    -- name one job (an enqueue, a fail, a log line), reads it once with a trivial aggregate
    -- and probes jobs with a query planned once per connection.
    SELECT min(job_id), max(job_id) INTO lo, hi FROM new_events;
    IF lo = hi THEN
        SELECT j.xmin INTO written FROM jobs j WHERE j.id = lo;
        IF FOUND AND written <> pg_current_xact_id()::xid THEN
            PERFORM 1 FROM jobs j WHERE j.id = lo FOR KEY SHARE;
        END IF;
        IF NOT FOUND THEN
            missing := lo;
        END IF;
    ELSIF lo IS NOT NULL THEN
        -- Many jobs (a batch): one probe of jobs_pkey per distinct job, in one query
        -- (LATERAL ... LIMIT 1 keeps it a nested loop whatever the sizes; with
        -- enable_seqscan off, even a plan made while jobs was tiny stays on the index).
        SELECT min(n.job_id) FILTER (WHERE j.id IS NULL),
               count(*) FILTER (WHERE j.xmin <> pg_current_xact_id()::xid)
        INTO missing, others
        FROM (SELECT DISTINCT job_id FROM new_events) n
        LEFT JOIN LATERAL (SELECT jobs.id, jobs.xmin FROM jobs WHERE jobs.id = n.job_id
                           LIMIT 1) j ON true;
        IF missing IS NULL AND others > 0 THEN
            PERFORM 1 FROM jobs j
            WHERE j.id IN (SELECT job_id FROM new_events) AND j.xmin <> pg_current_xact_id()::xid
            FOR KEY SHARE OF j;
            SELECT min(n.job_id) INTO missing FROM new_events n
            WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = n.job_id);
        END IF;
    END IF;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'job event names job % which does not exist', missing
            USING ERRCODE = 'foreign_key_violation', TABLE = 'job_events',
                  CONSTRAINT = 'job_event_names_existing_job';
    END IF;
    RETURN NULL;
END $$
""",
    _JOBS_GONE_WITH_EVENTS.format(
        name="jobs_deleted_without_events", options=" SET enable_seqscan = off",
        events="SELECT 1 FROM job_events e WHERE e.job_id = OLD.id",
        message="'job % was deleted but its events were not', OLD.id"),
    _JOBS_GONE_WITH_EVENTS.format(
        name="jobs_truncated_with_events", options="", events="SELECT 1 FROM job_events",
        message="'jobs was truncated but job_events was not (TRUNCATE jobs, job_events)'"),
    """
CREATE OR REPLACE FUNCTION job_history_keys_never_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%.% never changes', TG_TABLE_NAME, TG_ARGV[0]
        USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME,
              CONSTRAINT = 'job_history_keys_never_change';
END $$
""",
)
# {table}: job_events or one of its partitions (names made by services/partitions.py).
HISTORY_GUARD_EVENTS_TRIGGER = (
    'CREATE TRIGGER job_event_names_existing_job AFTER INSERT ON "{table}"'
    " REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT"
    " EXECUTE FUNCTION job_events_name_existing_jobs()"
)
HISTORY_GUARD_TRIGGERS = (
    HISTORY_GUARD_EVENTS_TRIGGER.format(table="job_events"),
    "CREATE CONSTRAINT TRIGGER job_deleted_with_its_events AFTER DELETE ON jobs"
    " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION jobs_deleted_without_events()",
    "CREATE TRIGGER job_truncated_with_its_events AFTER TRUNCATE ON jobs"
    " FOR EACH STATEMENT EXECUTE FUNCTION jobs_truncated_with_events()",
    "CREATE TRIGGER job_id_never_changes BEFORE UPDATE OF id ON jobs FOR EACH ROW"
    " WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION job_history_keys_never_change('id')",
    "CREATE TRIGGER job_event_job_id_never_changes BEFORE UPDATE OF job_id ON job_events"
    " FOR EACH ROW WHEN (OLD.job_id IS DISTINCT FROM NEW.job_id)"
    " EXECUTE FUNCTION job_history_keys_never_change('job_id')",
)
# Whether job_events has the guard (services/partitions.py gives each new partition its own).
HISTORY_GUARD_INSTALLED = (
    "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'job_events'::regclass"
    " AND tgname = 'job_event_names_existing_job')"
)
HISTORY_GUARD_DROP = (
    "DROP TRIGGER IF EXISTS job_event_names_existing_job ON job_events",
    "DROP TRIGGER IF EXISTS job_deleted_with_its_events ON jobs",
    "DROP TRIGGER IF EXISTS job_truncated_with_its_events ON jobs",
    "DROP TRIGGER IF EXISTS job_id_never_changes ON jobs",
    "DROP TRIGGER IF EXISTS job_event_job_id_never_changes ON job_events",
    "DROP FUNCTION IF EXISTS job_events_name_existing_jobs() CASCADE",  # the partitions' too
    "DROP FUNCTION IF EXISTS jobs_deleted_without_events()",
    "DROP FUNCTION IF EXISTS jobs_truncated_with_events()",
    "DROP FUNCTION IF EXISTS job_history_keys_never_change()",
)

# --- prune: finished jobs past their retention, with their events (services/pruning.py) ---
# The newest job of each periodic schedule (idempotency key `periodic:<name>:<tick>`) is
# never pruned: its key is how a worker starting up knows that the latest tick already ran
# (periodic.py); without it, a retention shorter than the schedule's period would run
# that tick again on every restart.
KEEP_NEWEST_PERIODIC = r"""
  AND NOT (coalesce(jobs.idempotency_key, '') LIKE 'periodic:%%' AND NOT EXISTS (
      SELECT 1 FROM jobs newer
      WHERE newer.idempotency_key > jobs.idempotency_key
        AND starts_with(newer.idempotency_key,
                        substring(jobs.idempotency_key FROM '^(periodic:.*:)\d{4}-\d\d-\d\dT'))))
"""

# The range scan walks jobs_status_finished_idx (status, finished_at). Oldest first, so that
# an interrupted run has removed the jobs most overdue.
PRUNE_BATCH = """
WITH doomed AS (
    SELECT id FROM jobs
    WHERE status = %(status)s AND finished_at < now() - make_interval(secs => %(age)s)
""" + KEEP_NEWEST_PERIODIC + """
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
events AS (
    DELETE FROM job_events e USING doomed WHERE e.job_id = doomed.id RETURNING e.id
),
edges AS (  -- what the doomed jobs waited for (what waited for them keeps its rows)
    DELETE FROM job_dependencies e USING doomed WHERE e.job_id = doomed.id
),
gone AS (
    DELETE FROM jobs j USING doomed
    WHERE j.id = doomed.id AND j.status IN ('succeeded', 'failed', 'cancelled')
    RETURNING j.id, j.outcome_event_id
),
search_text AS (  -- their searchable text (no foreign key: models.JobSearchText)
    DELETE FROM job_search_text s USING gone WHERE s.job_id = gone.id
),
steps AS (  -- their durable steps (no foreign key: models.JobStep)
    DELETE FROM job_steps s USING gone WHERE s.job_id = gone.id
),
signals AS (  -- their signals (no foreign key: models.JobSignal)
    DELETE FROM job_signals s USING gone WHERE s.job_id = gone.id
)
-- The events: job_events' rows, and the outcomes kept on the job rows (migration 0032).
SELECT (SELECT count(*) FROM gone),
       (SELECT count(*) FROM events) + (SELECT count(outcome_event_id) FROM gone)
"""

COUNT_PRUNABLE = """
WITH doomed AS (
    SELECT id, outcome_event_id FROM jobs
    WHERE status = %(status)s AND finished_at < now() - make_interval(secs => %(age)s)
""" + KEEP_NEWEST_PERIODIC + """
)
SELECT (SELECT count(*) FROM doomed),
       (SELECT count(*) FROM job_events e WHERE e.job_id IN (SELECT id FROM doomed))
       + (SELECT count(outcome_event_id) FROM doomed)
"""

# --- job_events partitions (services/partitions.py, migration 0007) ---------------------------
# job_events is RANGE-partitioned on created_at, one partition per JOB_EVENTS_PARTITION_INTERVAL,
# named job_events_p<YYYYMMDD[HH]> after its lower bound, plus job_events_default, which catches
# any row no partition covers (maintenance behind, a clock jump, events rescued from a dropped
# partition): no insert ever fails for want of a partition. The primary key is (id, created_at)
# because a partitioned table's unique constraints must contain the partition key; ids still
# come from one identity sequence, so they stay unique, and every lookup by id alone probes
# each partition's primary key index once. DDL takes the parent's ACCESS EXCLUSIVE lock for a
# moment (a new partition gets the history's guard, a trigger of its own: HISTORY_GUARD_*):
# every statement below runs under EVENTS_DDL_LOCK_TIMEOUT, and a maintenance step
# that cannot get its lock gives up until the next run rather than queue the workers behind it.
EVENTS_PARTITION_DEFAULT = "job_events_default"
EVENTS_DDL_LOCK_TIMEOUT = "SET LOCAL lock_timeout = '2s'"

# Storage parameters are per partition (a partitioned table holds no rows): those migration
# 0002 gave the plain table.
EVENTS_PARTITION_OPTIONS = (
    "autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05,"
    " autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0"
)
EVENTS_CREATE_DEFAULT_PARTITION = (
    "CREATE TABLE IF NOT EXISTS job_events_default PARTITION OF job_events DEFAULT"
    " WITH (" + EVENTS_PARTITION_OPTIONS + ")"
)
# {name}, {start}, {end}: an identifier and two ISO timestamps with offsets, made by
# services/partitions.py from datetimes (never from input).
EVENTS_CREATE_PARTITION = (
    "CREATE TABLE {name} PARTITION OF job_events FOR VALUES FROM ('{start}') TO ('{end}')"
    " WITH (" + EVENTS_PARTITION_OPTIONS + ")"
)
# Every range partition with its bounds, oldest first. The bounds are printed as literals with
# their offset, so casting them back is exact in any session time zone.
EVENTS_PARTITIONS = """
SELECT c.relname, b[1]::timestamptz, b[2]::timestamptz
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
WHERE i.inhparent = 'job_events'::regclass AND b IS NOT NULL
ORDER BY 2
"""
# Every partition, the default one included (migration 0015 guards each).
EVENTS_ALL_PARTITIONS = (
    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE i.inhparent = 'job_events'::regclass ORDER BY c.relname"
)
EVENTS_IS_PARTITIONED = (
    "SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = to_regclass('job_events')"
)

# Rows the default partition holds in a range about to get its own partition: they are moved
# into it (PostgreSQL refuses to create a partition whose rows sit in the default one), in the
# same transaction, under the lock that creating the partition takes anyway.
EVENTS_DEFAULT_HAS_RANGE = (
    "SELECT EXISTS (SELECT 1 FROM job_events_default"
    " WHERE created_at >= %(start)s AND created_at < %(end)s)"
)
EVENTS_TAKE_FROM_DEFAULT = """
CREATE TEMP TABLE job_events_moving ON COMMIT DROP AS
WITH moved AS (
    DELETE FROM job_events_default WHERE created_at >= %(start)s AND created_at < %(end)s
    RETURNING *
)
SELECT * FROM moved
"""
EVENTS_PUT_BACK = (
    "INSERT INTO job_events (id, kind, attempt, worker_id, message, data, created_at, job_id,"
    " tx_id) SELECT id, kind, attempt, worker_id, message, data, created_at, job_id, tx_id"
    " FROM job_events_moving",
    "DROP TABLE job_events_moving",  # another move may follow in the same transaction
)

# --- dropping a partition: retention by the table, not by the row ----------------------------
# A partition may go once every event in it belongs to a job that is gone or past its
# retention (services/pruning.py): the prune that follows deletes those jobs anyway. Events of
# the jobs that are kept (running, queued, finished within their retention, the newest job of
# a periodic schedule) are rescued first: copied into a temporary table, the partition
# dropped, and put back, where they land in job_events_default (the range is no longer
# covered), with the same ids and transaction ids: the job's timeline and the feed's order are
# unchanged. {partition}: a name from EVENTS_PARTITIONS. %(age_<status>)s: the retention in
# seconds, or NULL for kept forever.
EVENTS_PRUNABLE_JOB = """(
    (jobs.status = 'succeeded' AND jobs.finished_at < now() - make_interval(secs => %(age_succeeded)s))
    OR (jobs.status = 'failed' AND jobs.finished_at < now() - make_interval(secs => %(age_failed)s))
    OR (jobs.status = 'cancelled' AND jobs.finished_at < now() - make_interval(secs => %(age_cancelled)s))
)"""
# One pass over the partition: all its events, and those of jobs still kept.
EVENTS_KEPT_IN_PARTITION = """
SELECT count(*), count(*) FILTER (WHERE jobs.id IS NOT NULL AND NOT {prunable})
FROM {partition} e LEFT JOIN jobs ON jobs.id = e.job_id
"""
EVENTS_RESCUE = """
CREATE TEMP TABLE job_events_moving ON COMMIT DROP AS
SELECT e.* FROM {partition} e JOIN jobs ON jobs.id = e.job_id WHERE NOT {prunable}
"""
EVENTS_DROP_PARTITION = "DROP TABLE {partition}"

# Several pruners (one per worker process) may create or drop the same partition at once: the
# first takes this lock for its transaction, the others leave the partitions to it this time.
EVENTS_PARTITION_LOCK_KEY = 7_300_416_002
EVENTS_PARTITION_TRY_LOCK_ONLY = f"SELECT pg_try_advisory_xact_lock({EVENTS_PARTITION_LOCK_KEY})"
EVENTS_PARTITION_TRY_LOCK = (
    f"SELECT pg_try_advisory_xact_lock({EVENTS_PARTITION_LOCK_KEY}), to_regclass(%s) IS NOT NULL"
)

# --- migration 0007: the plain table becomes a partitioned one -------------------------------
EVENTS_OLDEST_PLAIN = "SELECT min(created_at) FROM job_events_plain"

# --- connection sessions: a queue connection's set-up, a handler connection's reset --------
# An executor's handler connections between jobs (worker/hygiene.py):
# Everything a session can carry from one job to the next: settings (SET, set_config, SET
# ROLE), session advisory locks, temporary tables, prepared statements, LISTEN, open cursors.
# Not inside a transaction block: the executor runs it only after rolling back what a handler
# left open. psycopg sees its command tag and forgets its own prepared statements too.
DISCARD_SESSION = "DISCARD ALL"

# A queue connection's session set-up (db.py), once per new connection: its name, and, on a
# direct connection, its limits (behind a transaction pooler they ride in each transaction as
# SET LOCAL instead: a session setting would leak to other clients of the server connection).
SESSION_APPLICATION_NAME = "SELECT set_config('application_name', %s, false)"
SESSION_LIMITS = (
    "SELECT set_config('statement_timeout', %s, false),"
    " set_config('idle_in_transaction_session_timeout', %s, false),"
    " set_config('application_name', %s, false)"
)
