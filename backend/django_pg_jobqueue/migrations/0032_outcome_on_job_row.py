"""History v2, second step: the outcome of the attempt that ends a job (a completion's
`succeeded`, or `cancelled` when a cancel reached the running job) is kept on the job row
rather than written as a row of job_events. Four nullable columns hold that event (its id,
taken from job_events' own sequence; its transaction id, as job_events.tx_id; its worker; its
data), and the view job_history, every reader's (migration 0031), adds it to job_events'
rows as the event it is. When the row leaves that status (an operator's retry), a trigger
writes the kept event into job_events, with its own id, transaction id and time, and clears
the columns: the history loses nothing and the event feed's position of it does not move.

Safe online: the columns are nullable without a default (a catalog change, no rewrite); the
check is added NOT VALID and then validated, which reads `jobs` without blocking writes; the
view is replaced (an instant's lock on it); the trigger's creation takes a SHARE ROW EXCLUSIVE
lock on `jobs` for an instant. The partial indexes are built CONCURRENTLY in the next
migration. Reversible: backwards, every kept outcome is written into job_events first (as
the trigger would), then the trigger, the view's new half, the check and the columns go.
The previous release's completions still write their event rows, which the view shows as
before; its readers read job_events and miss the outcomes this release keeps on job rows
until they are restarted on this release (deploy the web processes before the workers).
"""
from django.db import migrations

# Frozen: what this migration runs. A later change is a new migration.
COLUMNS = (
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS outcome_event_id bigint,"
    " ADD COLUMN IF NOT EXISTS outcome_tx bigint,"
    " ADD COLUMN IF NOT EXISTS outcome_worker_id varchar(200),"
    " ADD COLUMN IF NOT EXISTS outcome_data jsonb"
)
CHECK = (
    "ALTER TABLE jobs ADD CONSTRAINT job_outcome_kept_whole CHECK ("
    " (outcome_event_id IS NULL AND outcome_tx IS NULL AND outcome_worker_id IS NULL"
    "  AND outcome_data IS NULL)"
    " OR (outcome_event_id IS NOT NULL AND outcome_tx IS NOT NULL AND outcome_data IS NOT NULL"
    "     AND jsonb_typeof(outcome_data) = 'object'"
    "     AND status IN ('succeeded', 'cancelled'))) NOT VALID"
)
VALIDATE = "ALTER TABLE jobs VALIDATE CONSTRAINT job_outcome_kept_whole"
VIEW_DROP = "DROP VIEW IF EXISTS job_history"
VIEW_STORED = (
    "CREATE VIEW job_history AS"
    " SELECT id, job_id, kind, attempt, worker_id, message, data, created_at, tx_id"
    " FROM job_events"
)
# The status condition is implied by the check; it is written out so that a reader's window
# on created_at (finished_at here) can use jobs_status_finished_idx (status, finished_at).
VIEW_WITH_OUTCOMES = VIEW_STORED + (
    " UNION ALL"
    " SELECT outcome_event_id, id, status, attempts, outcome_worker_id, '', outcome_data,"
    " finished_at, outcome_tx"
    " FROM jobs WHERE outcome_event_id IS NOT NULL AND status IN ('succeeded', 'cancelled')"
)
WRITE_OUT = """
CREATE OR REPLACE FUNCTION jobs_outcome_written_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_events (id, job_id, kind, attempt, worker_id, message, data, created_at,
                            tx_id)
    VALUES (OLD.outcome_event_id, OLD.id, OLD.status, OLD.attempts, OLD.outcome_worker_id, '',
            OLD.outcome_data, OLD.finished_at, OLD.outcome_tx);
    NEW.outcome_event_id := NULL;
    NEW.outcome_tx := NULL;
    NEW.outcome_worker_id := NULL;
    NEW.outcome_data := NULL;
    RETURN NEW;
END $$
"""
# OF status: a statement that does not set the status (a renewal, progress, a start's record)
# does not even evaluate the WHEN.
WRITE_OUT_TRIGGER = (
    "CREATE TRIGGER job_outcome_written_out BEFORE UPDATE OF status ON jobs FOR EACH ROW"
    " WHEN (OLD.outcome_event_id IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status)"
    " EXECUTE FUNCTION jobs_outcome_written_out()"
)
# Backwards: every kept outcome becomes its event row, as the trigger would write it.
WRITE_OUT_ALL = (
    "INSERT INTO job_events (id, job_id, kind, attempt, worker_id, message, data, created_at,"
    " tx_id) SELECT outcome_event_id, id, status, attempts, outcome_worker_id, '', outcome_data,"
    " finished_at, outcome_tx FROM jobs WHERE outcome_event_id IS NOT NULL"
)
CLEAR_ALL = (
    "UPDATE jobs SET outcome_event_id = NULL, outcome_tx = NULL, outcome_worker_id = NULL,"
    " outcome_data = NULL WHERE outcome_event_id IS NOT NULL"
)
DROP = (
    "DROP TRIGGER IF EXISTS job_outcome_written_out ON jobs",
    "DROP FUNCTION IF EXISTS jobs_outcome_written_out()",
    "ALTER TABLE jobs DROP CONSTRAINT IF EXISTS job_outcome_kept_whole",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS outcome_event_id, DROP COLUMN IF EXISTS outcome_tx,"
    " DROP COLUMN IF EXISTS outcome_worker_id, DROP COLUMN IF EXISTS outcome_data",
)


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0031_history_view"),
    ]

    operations = [
        migrations.RunSQL(
            [COLUMNS, CHECK, VALIDATE, VIEW_DROP, VIEW_WITH_OUTCOMES, WRITE_OUT, WRITE_OUT_TRIGGER],
            [WRITE_OUT_ALL, "DROP TRIGGER IF EXISTS job_outcome_written_out ON jobs", CLEAR_ALL,
             VIEW_DROP, VIEW_STORED, *DROP],
        ),
    ]
