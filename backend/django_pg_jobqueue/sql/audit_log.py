"""The audit log (services/audit_log.py): operator actions, each written in the transaction of
the action it records."""

# One entry per target, the targets as an array: an action on one job, queue or schedule and
# a retry of many jobs at once are the same statement (prepared once). `data` (jsonb text) is
# the same for every target. The time is the transaction's, as the action's own writes.
RECORD_AUDIT_ENTRIES = """
INSERT INTO job_audit_log (at, actor, action, target_kind, target, data)
SELECT now(), %(actor)s, %(action)s, %(target_kind)s, t, %(data)s::jsonb
FROM unnest(%(targets)s::text[]) AS t
"""
