"""Trigram indexes for the job list's text search (`?search=`), so that it finds every
matching job, however many jobs the table holds, reading only the jobs that contain the
searched text's trigrams (selectors.text_search).

- The pg_trgm extension: `CREATE EXTENSION IF NOT EXISTS pg_trgm`. It is a trusted extension
  (PostgreSQL 13+), so the database's owner may create it; a role that may not (not the owner,
  or a provider that lists allowed extensions) gets an error saying what to ask for. Where it
  already exists nothing is created.
- Two GIN indexes built CONCURRENTLY (the migration is not atomic): writes to `jobs` go on
  while they are built. One on the payload's JSON text, one on the last error (partial: only
  the jobs that have one). An index left invalid by an interrupted build is dropped and built
  again. Reversible: backwards drops the indexes (the extension stays: others may use it).
- jobs_periodic_schedule_idx (schedule name, id) over periodic jobs only (their idempotency
  key starts with `periodic:`), built CONCURRENTLY too: a schedule's tick history reads its
  newest jobs without a pass over the others (sql.SCHEDULE_JOBS).
- job_schedule_settings: a periodic schedule's pause (a new, empty table).
"""
from django.db import migrations, models
from django.db.models.functions import Now

# Frozen: what this migration runs, copied from the live modules (sql.py, states.py,
# models.py) when it was frozen, so that editing them cannot change a migration that
# has already run. A later change to the schema is a new migration.
CREATE_JOBS_LAST_ERROR_TRGM_INDEX = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_last_error_trgm_idx ON jobs USING gin (last_error gin_trgm_ops) WHERE last_error IS NOT NULL'
CREATE_JOBS_PAYLOAD_TRGM_INDEX = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_payload_trgm_idx ON jobs USING gin ((payload::text) gin_trgm_ops)'
CREATE_JOBS_PERIODIC_SCHEDULE_INDEX = "CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_periodic_schedule_idx ON jobs (split_part(idempotency_key, ':', 2), id) WHERE idempotency_key LIKE 'periodic:%'"
CREATE_TRGM = 'CREATE EXTENSION IF NOT EXISTS pg_trgm'
DROP_INDEX_CONCURRENTLY = 'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'
# Indexes of these names (%s: a list) that an interrupted CREATE INDEX CONCURRENTLY left invalid.
INVALID_INDEXES = """
SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = ANY(%s) AND NOT i.indisvalid
"""
TRGM_INSTALLED = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')"


INDEXES = ("jobs_payload_trgm_idx", "jobs_last_error_trgm_idx", "jobs_periodic_schedule_idx")


def create_pg_trgm(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(TRGM_INSTALLED)
        if cursor.fetchone()[0]:
            return
        try:
            cursor.execute(CREATE_TRGM)
        except Exception as exc:
            raise RuntimeError(
                "django_pg_jobqueue 0012_console needs the pg_trgm extension (for the job "
                "search's indexes) and this database role could not create it "
                f"({type(exc).__name__}: {str(exc).strip()}). Ask the database's owner or a "
                "superuser to run `CREATE EXTENSION pg_trgm;` in this database (on a managed "
                "service, allow the extension first), then run migrate again."
            ) from exc


def build_indexes(apps, schema_editor):
    """Each index CONCURRENTLY, IF NOT EXISTS (a re-run after an interruption goes on); one
    left INVALID by an interrupted build is dropped first, so it is built anew."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INVALID_INDEXES, [list(INDEXES)])
        for (name,) in cursor.fetchall():
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))
        cursor.execute(CREATE_JOBS_PAYLOAD_TRGM_INDEX)
        cursor.execute(CREATE_JOBS_LAST_ERROR_TRGM_INDEX)
        cursor.execute(CREATE_JOBS_PERIODIC_SCHEDULE_INDEX)


def drop_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for name in INDEXES:
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("django_pg_jobqueue", "0011_worker_health")]

    operations = [
        migrations.RunPython(create_pg_trgm, migrations.RunPython.noop),
        # Database only: Django's model does not declare them (models.py says why), so
        # makemigrations sees nothing to do.
        migrations.RunPython(build_indexes, drop_indexes),
        migrations.CreateModel(
            name="ScheduleSetting",
            fields=[
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("paused", models.BooleanField(db_default=False, default=False)),
                ("updated_at", models.DateTimeField(db_default=Now())),
            ],
            options={"db_table": "job_schedule_settings", "ordering": ["name"],
                     "verbose_name": "periodic schedule"},
        ),
    ]
