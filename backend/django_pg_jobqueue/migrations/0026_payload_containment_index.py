"""The job list's payload filter (`?payload=customer_id:42`, sql.PAYLOAD_CONTAINS): a GIN
index of the payload's JSON for containment (`@>`), on the side table job_search_text, whose
row is written once at enqueue, not on `jobs`, whose row every claim and completion rewrites
(docs/explanation/performance.md).

- job_search_text_payload_idx: GIN, jsonb_path_ops (one hashed entry per leaf value of the
  payload, the smallest GIN for `@>`), over the expression `payload_text::jsonb` (the text is
  the payload's own jsonb output, so it reads back as the same value). Built CONCURRENTLY (the
  migration is not atomic): producers go on enqueueing while it builds. An index left invalid
  by an interrupted build is dropped and built again.

Reversible: backwards drops it (CONCURRENTLY). The previous release's code never reads it.
"""
from django.db import migrations

# Frozen: what this migration runs, copied from the live modules when it was written.
CREATE_INDEX = ("CREATE INDEX CONCURRENTLY IF NOT EXISTS job_search_text_payload_idx "
                "ON job_search_text USING gin ((payload_text::jsonb) jsonb_path_ops)")
DROP_INDEX_CONCURRENTLY = 'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'
# Indexes of these names (%s: a list) that an interrupted CREATE INDEX CONCURRENTLY left invalid.
INVALID_INDEXES = """
SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = ANY(%s) AND NOT i.indisvalid
"""
INDEX = "job_search_text_payload_idx"


def build_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INVALID_INDEXES, [[INDEX]])
        for (name,) in cursor.fetchall():
            cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=name))
        cursor.execute(CREATE_INDEX)


def drop_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(DROP_INDEX_CONCURRENTLY.format(name=INDEX))


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY

    dependencies = [("django_pg_jobqueue", "0025_audit_rate_limits_and_batches")]

    operations = [migrations.RunPython(build_index, drop_index, elidable=False)]
