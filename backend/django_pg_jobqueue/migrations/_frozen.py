"""DDL that several migrations run, frozen here once instead of copied into each.

Append-only: a migration that has run must not change, so the statements a function here
returns never change once a migration calls it (tests/unit/test_frozen_migrations.py pins
them, text for text); a new shape is a new function. Django's migration loader skips
modules whose names start with an underscore, so this is not a migration itself, and it
imports nothing of the package's live modules (tests/contracts/test_layout.py).
"""


def replace_check_in(table: str, constraint: str, column: str, values: list[str]) -> list[str]:
    """Swap `table`'s CHECK (`column` IN values) named `constraint` in one ALTER TABLE, NOT
    VALID, then validate.

    Online: the ALTER takes an ACCESS EXCLUSIVE lock for a catalog change only (NOT VALID
    reads no row); VALIDATE scans the table under SHARE UPDATE EXCLUSIVE, which blocks
    neither reads nor writes. The caller's migration is `atomic = False` so the two run in
    their own transactions.
    """
    listed = ", ".join(f"'{v}'::text" for v in values)
    return [
        f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {constraint}, ADD CONSTRAINT"
        f" {constraint} CHECK ({column}::text = ANY (ARRAY[{listed}])) NOT VALID",
        f"ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}",
    ]


def replace_event_kind_check(values: list[str]) -> list[str]:
    """replace_check_in for job_events' CHECK (kind IN values), job_event_kind_known."""
    return replace_check_in("job_events", "job_event_kind_known", "kind", values)
