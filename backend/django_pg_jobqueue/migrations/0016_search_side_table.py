"""The payload's searchable text moves off the job row into job_search_text (models.JobSearchText),
written once by the enqueue, so that the claim and the completion, which rewrite the job row,
no longer write the payload's trigrams into a GIN index (docs/explanation/performance.md).

- job_search_text: a new, empty table (job id, the payload's JSON text), no foreign key;
  created IF NOT EXISTS, so that every step can run again after an interruption.
- The backfill: every existing job's non-empty payload, copied in batches of BATCH jobs in
  id order, each batch its own short transaction (the migration is not atomic): no long
  transaction holds back vacuum. Run again, it starts over and skips the rows already there
  (ON CONFLICT DO NOTHING), as it skips those the new release's producers wrote meanwhile.
  It reads `jobs` (row locks on nothing) and writes only the new table. Not one statement:
  on tens of millions of jobs that would be one transaction of minutes holding back vacuum
  on every table, and an interruption would lose all of it.
- job_search_text_trgm_idx, a GIN trigram index on the copied text, built CONCURRENTLY after
  the backfill, as 0012 built its indexes: one sorted build rather than an index insert per
  row, while new producers may already write the table. An index left invalid by an
  interrupted build is dropped and built again. pg_trgm exists: 0012 created it or stopped.
- jobs_payload_trgm_idx dropped CONCURRENTLY, last, so that the previous release's search
  keeps its index while the new table fills.

Reversible: backwards builds jobs_payload_trgm_idx again (CONCURRENTLY: a pass over `jobs`)
and drops the table.

While it runs, and until every producer runs the new release, jobs enqueued by the previous
release have no row in job_search_text: their payload is not found by the new search (their
last error is). Migrating again does not copy them (the migration is applied); deploy the
producers right after, or before the migration ends.
"""
from django.db import migrations, models
from django.db.models import deletion

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
CREATE_JOBS_PAYLOAD_TRGM_INDEX = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_payload_trgm_idx ON jobs USING gin ((payload::text) gin_trgm_ops)'
CREATE_JOB_SEARCH_TEXT = """
CREATE TABLE IF NOT EXISTS job_search_text (
    job_id bigint NOT NULL PRIMARY KEY,
    payload_text text NOT NULL
)
"""
# Built CONCURRENTLY after the backfill (one sorted build instead of an insert into the GIN
# index per row), so that a producer of the new release, already enqueueing, is not blocked.
CREATE_JOB_SEARCH_TEXT_TRGM_INDEX = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS job_search_text_trgm_idx ON job_search_text USING gin (payload_text gin_trgm_ops)'
DROP_INDEX_CONCURRENTLY = 'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'
DROP_JOB_SEARCH_TEXT = 'DROP TABLE IF EXISTS job_search_text'
# Indexes of these names (%s: a list) that an interrupted CREATE INDEX CONCURRENTLY left invalid.
INVALID_INDEXES = """
SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = ANY(%s) AND NOT i.indisvalid
"""
# One batch of the backfill: the next %(limit)s jobs after id %(after)s in id order (a range of
# the primary key), their non-empty payloads' text copied (an empty one has no row: see
# _SEARCH_TEXT). ON CONFLICT: a row the new release's enqueue (or an interrupted run of this
# migration) already wrote stays. Returns the batch's last id, NULL once past the last job.
SEARCH_TEXT_BACKFILL_BATCH = """
WITH batch AS (
    SELECT id, payload FROM jobs WHERE id > %(after)s ORDER BY id LIMIT %(limit)s
),
copied AS (
    INSERT INTO job_search_text (job_id, payload_text)
    SELECT id, payload::text FROM batch WHERE payload <> '{}'::jsonb
    ON CONFLICT (job_id) DO NOTHING
)
SELECT max(id) FROM batch
"""


BATCH = 10_000
INDEX = "job_search_text_trgm_idx"


def backfill(apps, schema_editor):
    after = 0
    with schema_editor.connection.cursor() as cursor:
        while True:
            cursor.execute(SEARCH_TEXT_BACKFILL_BATCH, {"after": after, "limit": BATCH})
            (last,) = cursor.fetchone()
            if last is None:
                return
            after = last


def build_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INVALID_INDEXES, [[INDEX]])
        for (name,) in cursor.fetchall():
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))
        cursor.execute(CREATE_JOB_SEARCH_TEXT_TRGM_INDEX)


def drop_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=INDEX))


def drop_payload_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(DROP_INDEX_CONCURRENTLY.format(name="jobs_payload_trgm_idx"))


def build_payload_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INVALID_INDEXES, [["jobs_payload_trgm_idx"]])
        for (name,) in cursor.fetchall():
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))
        cursor.execute(CREATE_JOBS_PAYLOAD_TRGM_INDEX)


class Migration(migrations.Migration):
    atomic = False  # batches of their own; CREATE / DROP INDEX CONCURRENTLY

    dependencies = [("django_pg_jobqueue", "0015_history_guard")]

    operations = [
        # The table by hand (IF NOT EXISTS, for a run again after an interruption), the model's
        # state as Django's CreateModel would leave it.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(CREATE_JOB_SEARCH_TEXT, DROP_JOB_SEARCH_TEXT),
            ],
            state_operations=[
                migrations.CreateModel(
                    name="JobSearchText",
                    fields=[
                        ("job", models.OneToOneField(
                            db_constraint=False, on_delete=deletion.CASCADE, primary_key=True,
                            related_name="search_text", serialize=False,
                            to="django_pg_jobqueue.job")),
                        ("payload_text", models.TextField()),
                    ],
                    options={"db_table": "job_search_text", "verbose_name": "job search text",
                             "verbose_name_plural": "job search texts"},
                ),
            ],
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        # Database only, as 0012's: the model declares no index (models.py says why).
        migrations.RunPython(build_index, drop_index),
        migrations.RunPython(drop_payload_index, build_payload_index),
    ]
