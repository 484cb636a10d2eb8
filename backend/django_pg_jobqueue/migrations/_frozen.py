"""DDL that several migrations run, frozen here once instead of copied into each.

Append-only: a migration that has run must not change, so a function here is never edited
once a migration calls it; a new shape is a new function. Django's migration loader skips
modules whose names start with an underscore, so this is not a migration itself, and it
imports nothing of the package's live modules (tests/contracts/test_layout.py).
"""


def replace_event_kind_check(values: list[str]) -> list[str]:
    """Swap job_events' CHECK (kind IN values) in one ALTER TABLE, NOT VALID, then validate.

    Online: the ALTER takes an ACCESS EXCLUSIVE lock for a catalog change only (NOT VALID
    reads no row); VALIDATE scans the table under SHARE UPDATE EXCLUSIVE, which blocks
    neither reads nor writes. The caller's migration is `atomic = False` so the two run in
    their own transactions.
    """
    listed = ", ".join(f"'{v}'::text" for v in values)
    return [
        "ALTER TABLE job_events DROP CONSTRAINT IF EXISTS job_event_kind_known, ADD CONSTRAINT"
        f" job_event_kind_known CHECK (kind::text = ANY (ARRAY[{listed}])) NOT VALID",
        "ALTER TABLE job_events VALIDATE CONSTRAINT job_event_kind_known",
    ]


def replace_check_in(table: str, constraint: str, column: str, values: list[str]) -> list[str]:
    """Swap `table`'s CHECK (`column` IN values) named `constraint` in one ALTER TABLE, NOT
    VALID, then validate: online, as replace_event_kind_check."""
    listed = ", ".join(f"'{v}'::text" for v in values)
    return [
        f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {constraint}, ADD CONSTRAINT"
        f" {constraint} CHECK ({column}::text = ANY (ARRAY[{listed}])) NOT VALID",
        f"ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}",
    ]
