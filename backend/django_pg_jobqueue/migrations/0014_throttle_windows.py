"""The job-creation throttle's counter (sql.THROTTLE_RESERVE_IF_IT_FITS): a new, empty,
UNLOGGED table, one row per throttled user; safe online. No model: only the throttle's own
statements read and write it."""
from django.db import migrations

CREATE = """
CREATE UNLOGGED TABLE job_throttle_windows (
    key text PRIMARY KEY,
    slices bigint[] NOT NULL,
    counts integer[] NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT job_throttle_window_slices_match_counts
        CHECK (cardinality(slices) = cardinality(counts))
)
"""


class Migration(migrations.Migration):

    dependencies = [
        ("django_pg_jobqueue", "0013_leader_lease"),
    ]

    operations = [
        migrations.RunSQL(CREATE, "DROP TABLE job_throttle_windows"),
    ]
