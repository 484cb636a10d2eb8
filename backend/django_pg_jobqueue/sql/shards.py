"""Shards by queue: a shard's (and JOB_DATABASE's) range of job ids, read and set on the
sequence of the `jobs` identity (services/shards.py, run after `migrate` on each shard's
database)."""

# The identity's sequence (its name, quoted as needed), its bounds and the highest id the
# table holds: whether the range is set, and whether the database already holds jobs outside
# it (then it was another queue: refused).
SHARD_ID_RANGE = """
SELECT pg_get_serial_sequence('jobs', 'id'), s.seqmin, s.seqmax, (SELECT max(id) FROM jobs)
FROM pg_sequence s
WHERE s.seqrelid = pg_get_serial_sequence('jobs', 'id')::regclass
"""


def set_shard_id_range(sequence: str, first: int, last: int, restart: int | None) -> str:
    """The `jobs` identity's sequence bounded to [first, last] (a shard's range), and restarted
    at `restart` when given (a shard's first id, or past the jobs it holds). ALTER SEQUENCE
    locks the sequence only (an enqueue waits for it a moment), not the table as ALTER TABLE
    would (every claim and read). DDL takes no parameters: `sequence` is the name
    SHARD_ID_RANGE read (quoted by PostgreSQL), the three numbers ints formatted here."""
    restart_clause = "" if restart is None else f" RESTART WITH {int(restart)}"
    return (f"ALTER SEQUENCE {sequence} START WITH {int(first)} MINVALUE {int(first)} "
            f"MAXVALUE {int(last)}{restart_clause}")
