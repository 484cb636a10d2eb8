"""The foreign key from job_events to jobs becomes the history's guard: statement-level
triggers that keep the same promise (no event names a job that does not exist; no job goes
while it has events; neither key ever changes) at one query per statement instead of a check
per event row (sql.HISTORY_GUARD_FUNCTIONS says how and why).

Safe online: the triggers are created before the foreign key is dropped, in one transaction,
so no moment is unguarded. Creating them takes a SHARE ROW EXCLUSIVE lock on jobs and
job_events for a moment (no rows are read). Reversible: backwards, the foreign key is added
again (DEFERRABLE INITIALLY DEFERRED, as before) and validated, which reads every event.
"""
from django.db import migrations, models

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
HISTORY_GUARD_DROP = (
    'DROP TRIGGER IF EXISTS job_event_names_existing_job ON job_events',
    'DROP TRIGGER IF EXISTS job_deleted_with_its_events ON jobs',
    'DROP TRIGGER IF EXISTS job_truncated_with_its_events ON jobs',
    'DROP TRIGGER IF EXISTS job_id_never_changes ON jobs',
    'DROP TRIGGER IF EXISTS job_event_job_id_never_changes ON job_events',
    'DROP FUNCTION IF EXISTS job_events_name_existing_jobs() CASCADE',
    'DROP FUNCTION IF EXISTS jobs_deleted_without_events()',
    'DROP FUNCTION IF EXISTS jobs_truncated_with_events()',
    'DROP FUNCTION IF EXISTS job_history_keys_never_change()',
)
HISTORY_GUARD_EVENTS_TRIGGER = 'CREATE TRIGGER job_event_names_existing_job AFTER INSERT ON "{table}" REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION job_events_name_existing_jobs()'
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
    """
CREATE OR REPLACE FUNCTION jobs_deleted_without_events() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = OLD.id) THEN
        RAISE EXCEPTION 'job % was deleted but its events were not', OLD.id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs',
                  CONSTRAINT = 'job_deleted_with_its_events';
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE OR REPLACE FUNCTION jobs_truncated_with_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_events) THEN
        RAISE EXCEPTION 'jobs was truncated but job_events was not (TRUNCATE jobs, job_events)'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'jobs',
                  CONSTRAINT = 'job_deleted_with_its_events';
    END IF;
    RETURN NULL;
END $$
""",
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
HISTORY_GUARD_TRIGGERS = (
    'CREATE TRIGGER job_event_names_existing_job AFTER INSERT ON "job_events" REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION job_events_name_existing_jobs()',
    'CREATE CONSTRAINT TRIGGER job_deleted_with_its_events AFTER DELETE ON jobs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION jobs_deleted_without_events()',
    'CREATE TRIGGER job_truncated_with_its_events AFTER TRUNCATE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION jobs_truncated_with_events()',
    "CREATE TRIGGER job_id_never_changes BEFORE UPDATE OF id ON jobs FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION job_history_keys_never_change('id')",
    "CREATE TRIGGER job_event_job_id_never_changes BEFORE UPDATE OF job_id ON job_events FOR EACH ROW WHEN (OLD.job_id IS DISTINCT FROM NEW.job_id) EXECUTE FUNCTION job_history_keys_never_change('job_id')",
)


# Every partition of job_events, the default one included.
EVENTS_ALL_PARTITIONS = (
    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE i.inhparent = 'job_events'::regclass ORDER BY c.relname"
)


def create_guard(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in HISTORY_GUARD_FUNCTIONS + HISTORY_GUARD_TRIGGERS:
            cursor.execute(statement)
        cursor.execute(EVENTS_ALL_PARTITIONS)
        for (name,) in cursor.fetchall():
            cursor.execute(HISTORY_GUARD_EVENTS_TRIGGER.format(table=name))


def drop_guard(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in HISTORY_GUARD_DROP:
            cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0014_throttle_windows"),
    ]

    operations = [
        migrations.RunPython(create_guard, drop_guard),
        migrations.AlterField(
            model_name="jobevent",
            name="job",
            field=models.ForeignKey(db_constraint=False, db_index=False,
                                    on_delete=models.deletion.CASCADE, related_name="events",
                                    to="django_pg_jobqueue.job"),
        ),
    ]
