"""The kept outcomes' indexes (migration 0032): (outcome_tx, outcome_event_id) for the event
feed, which reads them in commit order (sql.EVENTS_AFTER), and (outcome_event_id) for the
lookups of an event by id (the feed's cursor, a page's events). Both partial: a job without a
kept outcome has no entry, and a completion writes one entry in each.

Safe online: built CONCURRENTLY (so the migration is not atomic); producers, workers and the
API go on meanwhile. An index left invalid by an interrupted build is dropped and built
again. Reversible: backwards drops them.
"""
from django.db import migrations

# Frozen: what this migration runs.
INDEXES = {
    "jobs_outcome_feed_idx": "CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_outcome_feed_idx"
                             " ON jobs (outcome_tx, outcome_event_id)"
                             " WHERE outcome_tx IS NOT NULL",
    "jobs_outcome_event_idx": "CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_outcome_event_idx"
                              " ON jobs (outcome_event_id) WHERE outcome_event_id IS NOT NULL",
}
DROP_INDEX_CONCURRENTLY = 'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'
INVALID_INDEXES = """
SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = ANY(%s) AND NOT i.indisvalid
"""


def build_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INVALID_INDEXES, [list(INDEXES)])
        for (name,) in cursor.fetchall():
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))
        for create in INDEXES.values():
            cursor.execute(create)


def drop_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for name in INDEXES:
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY

    dependencies = [("django_pg_jobqueue", "0032_outcome_on_job_row")]

    operations = [migrations.RunPython(build_indexes, drop_indexes, elidable=False)]
