"""expire: queued jobs not started by their `expires_at` end cancelled, each with its `expired`
event (sql.EXPIRE_QUEUED_PAST_DEADLINE), and the jobs that wait for them are settled.

The claim never starts a job past its deadline (sql.CLAIM's filter); this sweep is what ends
it. It rides on the reaper's pass, which only the maintenance leader runs (worker/reaper.py),
so one process a database does it, every JOB_REAPER_INTERVAL_SECONDS: docs/how-to/
enqueue-policies.md says why it is not the claim's work."""
from .. import db, sql
from ..db import atomic as queue_atomic
from ..db import queue_connection
from .finishing import after_ended


def expire_overdue(*, limit: int = 500) -> int:
    """End every queued job whose expires_at has passed, in batches of `limit`; how many.
    Safe from many processes at once: rows are taken with SKIP LOCKED and the status and the
    deadline are checked again in the UPDATE."""
    total = 0
    while True:
        rows = _expire_batch(limit)
        total += len(rows)
        if rows:  # cancelled: the jobs waiting for them next (as a cancel settles them), and
            after_ended([job_id for job_id, _ in rows],  # their batches
                        with_dependants=[job_id for job_id, has_dependants in rows if has_dependants])
        if len(rows) < limit:
            return total


def _expire_batch(limit: int) -> list[tuple]:
    """One batch, under the claim's planner settings (sql.CLAIM_PLANNER_SETTINGS), so that
    stale statistics, which say no job is queued, cannot make it walk the whole backlog on
    jobs_claim_order_idx and sort it instead of reading jobs_queued_expiry_idx in order
    (tests/contracts/test_plans.py)."""
    nested = queue_connection().in_atomic_block  # a caller's transaction (a test's)
    with queue_atomic():
        saved = db.fetch_all(sql.CLAIM_PREAMBLE, {})[0]
        rows = db.fetch_all(sql.EXPIRE_QUEUED_PAST_DEADLINE, {"limit": limit})
        if nested:  # the settings would outlive the sweep, until the caller's commit
            old_values = saved[0:2 * len(sql.CLAIM_PLANNER_SETTINGS):2]
            db.fetch_all(sql.CLAIM_PLANNER_RESTORE, {"values": list(old_values)})
    return rows
