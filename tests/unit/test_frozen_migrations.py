"""The DDL that migrations share (migrations/_frozen.py) never changes once a migration ran it:
these are the statements as the migrations that call them ran them, text for text."""
from django_pg_jobqueue.migrations._frozen import replace_check_in, replace_event_kind_check


def test_the_event_kind_check_swap_is_the_statements_the_migrations_ran():
    assert replace_event_kind_check(["created", "claimed"]) == [
        "ALTER TABLE job_events DROP CONSTRAINT IF EXISTS job_event_kind_known, ADD CONSTRAINT"
        " job_event_kind_known CHECK (kind::text = ANY (ARRAY['created'::text, 'claimed'::text]))"
        " NOT VALID",
        "ALTER TABLE job_events VALIDATE CONSTRAINT job_event_kind_known",
    ]


def test_a_check_in_swap_is_the_statements_the_migrations_ran():
    assert replace_check_in("job_audit_log", "job_audit_action_known", "action", ["cancel"]) == [
        "ALTER TABLE job_audit_log DROP CONSTRAINT IF EXISTS job_audit_action_known, ADD"
        " CONSTRAINT job_audit_action_known CHECK (action::text = ANY (ARRAY['cancel'::text]))"
        " NOT VALID",
        "ALTER TABLE job_audit_log VALIDATE CONSTRAINT job_audit_action_known",
    ]
