"""Shards by queue: a shard's (and JOB_DATABASE's) range of job ids, read and set on the
`jobs` identity (services/shards.py, run after `migrate` on each shard's database)."""

# The identity's bounds and the highest id it holds: whether the range is set, and whether
# the database already holds jobs outside it (then it was another queue: refused).
SHARD_ID_RANGE = """
SELECT s.seqmin, s.seqmax, (SELECT max(id) FROM jobs)
FROM pg_sequence s
WHERE s.seqrelid = pg_get_serial_sequence('jobs', 'id')::regclass
"""


def set_shard_id_range(first: int, last: int, restart: int | None) -> str:
    """The identity of `jobs` bounded to [first, last] (a shard's range), and restarted at
    `restart` when given (a shard's first id, or past the jobs it holds). DDL takes no
    parameters: the three are ints, formatted here."""
    restart_clause = "" if restart is None else f" RESTART WITH {int(restart)}"
    return (f"ALTER TABLE jobs ALTER COLUMN id SET START WITH {int(first)} "
            f"SET MINVALUE {int(first)} SET MAXVALUE {int(last)}{restart_clause}")
