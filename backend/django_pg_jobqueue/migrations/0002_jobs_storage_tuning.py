"""Storage settings for a table that is a queue: fillfactor and per-table autovacuum.

Why `jobs` needs them. Every job is inserted once and then updated several times within
seconds or minutes: claim (queued -> running), a lease renewal every JOB_LEASE_SECONDS / 3
while it runs, progress, and the outcome (running -> succeeded / failed / queued again).
Each UPDATE leaves a dead row version behind, so the table churns through dead tuples at a
multiple of its throughput, while most of its live rows (finished jobs awaiting the pruner)
never change again.

Which updates can be HOT (heap-only: no new index entries, the old version pruned in-page).
An UPDATE is HOT only if it changes no indexed column (predicates of partial indexes count)
and the new version fits on the same page. The indexes in models.py cover status (the
predicates of jobs_claim_order_idx and jobs_running_lease_idx, and jobs_status_finished_idx,
jobs_type_status_idx), priority, available_at, created_at, id, lease_expires_at, type,
finished_at and idempotency_key. So, honestly:
- claim, complete, fail, reap, release, snooze, cancel-while-queued and retry change
  `status`: never HOT, whatever the fillfactor. Each inserts into every index.
- lease renewals change `lease_expires_at`, which jobs_running_lease_idx indexes: not HOT
  either. (Indexing the running set by something that does not move, e.g. `id` WHERE status =
  'running', and filtering the expiry in the reaper would make renewals HOT; the running set
  is at most the number of worker threads, so the reaper would lose nothing. Migration 0003
  does exactly that, with jobs_running_idx: from then on renewals are HOT-eligible too.)
- progress updates and cancel requests touch only unindexed columns: HOT when there is room.
Measured: a pool draining 3,000 noop and 40 sleep jobs (with progress) made 6,402 updates
of `jobs`, 237 of them HOT (3.7%: the progress updates), before 0003. So fillfactor buys HOT for
progress and cancel requests, and for everything else it lets
the new version land on the same page as the old one (heap_update tries that page first):
the job's versions stay together, in-page pruning can reclaim the dead ones without a
vacuum, and the table does not keep extending to place each new version. 70 leaves room for
a few versions of each row on its page; the cost is ~30% more pages for rows inserted from
now on (existing pages are not rewritten), acceptable for a table the pruner keeps bounded.

Why autovacuum must run early. Dead index entries are what slow a queue down: the claim
walks jobs_claim_order_idx, and every job claimed since the last vacuum left an entry there
that points at a dead version. The default trigger (20% of the table dead) on a table holding
days of finished jobs means millions of dead tuples before a vacuum starts. Here: vacuum at
1% + 1000 dead tuples, analyze at 2% + 1000 (the status mix shifts fast and the planner's
estimates for the partial indexes depend on it), and no cost-delay sleeping so a vacuum of
this table finishes quickly. `job_events` is insert-mostly and deleted in bulk by the pruner:
vacuum after 5% dead, and after 5% newly inserted rows (an insert-only stretch is then
vacuumed too: its pages are marked all-visible and frozen a little at a time, instead of
in one anti-wraparound vacuum of the whole table later).

The scrape of GET /metrics reads the last few minutes of `job_events` (jobs/metrics.py).
Events are appended in time order, so a BRIN index on created_at finds that window by
reading a few block ranges instead of the whole table, for a few kilobytes of index and
almost no cost per insert (unlike a btree on the hottest insert path). Built CONCURRENTLY
(hence a non-atomic migration) so an existing, large table keeps taking writes meanwhile.
It is not declared in models.py's Meta; `manage.py makemigrations` does not see it.

ALTER TABLE ... SET (storage parameters) takes a SHARE UPDATE EXCLUSIVE lock: reads and
writes go on while it runs, and it rewrites nothing.
"""
from django.db import migrations

JOBS_OPTIONS = (
    "fillfactor = 70",
    "autovacuum_vacuum_scale_factor = 0.01",
    "autovacuum_vacuum_threshold = 1000",
    "autovacuum_analyze_scale_factor = 0.02",
    "autovacuum_analyze_threshold = 1000",
    "autovacuum_vacuum_cost_delay = 0",
)
EVENTS_OPTIONS = (
    "autovacuum_vacuum_scale_factor = 0.05",
    "autovacuum_vacuum_insert_scale_factor = 0.05",
    "autovacuum_analyze_scale_factor = 0.05",
    "autovacuum_vacuum_cost_delay = 0",
)


def _names(options):
    return ", ".join(o.split("=")[0].strip() for o in options)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY
    dependencies = [("django_pg_jobqueue", "0001_initial")]

    operations = [
        migrations.RunSQL(
            sql=f"ALTER TABLE jobs SET ({', '.join(JOBS_OPTIONS)})",
            reverse_sql=f"ALTER TABLE jobs RESET ({_names(JOBS_OPTIONS)})",
        ),
        migrations.RunSQL(
            sql=f"ALTER TABLE job_events SET ({', '.join(EVENTS_OPTIONS)})",
            reverse_sql=f"ALTER TABLE job_events RESET ({_names(EVENTS_OPTIONS)})",
        ),
        migrations.RunSQL(
            sql="CREATE INDEX CONCURRENTLY IF NOT EXISTS job_events_created_brin ON job_events"
                " USING brin (created_at) WITH (pages_per_range = 32, autosummarize = on)",
            reverse_sql="DROP INDEX CONCURRENTLY IF EXISTS job_events_created_brin",
        ),
    ]
