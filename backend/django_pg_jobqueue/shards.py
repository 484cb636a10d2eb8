"""Shards by queue (JOB_SHARDS): which database holds a queue, and which holds a job.

A queue named in JOB_SHARDS lives in its shard's database (a DATABASES alias), every other
queue in JOB_DATABASE. A job's id names its shard without a lookup: shard n's ids run from
n * 2**44 to (n + 1) * 2**44 - 1 (`id_range`, set up on its `jobs` identity by `manage.py
migrate --database <alias>`), and JOB_DATABASE's stay below 2**44 (shard 0). Pure: these
functions read the settings and nothing else, so that routing an enqueue or a job's page
costs no query; with JOB_SHARDS empty, every answer is JOB_DATABASE, at once.
"""
from dataclasses import dataclass

from . import conf
from .conf import MAX_SHARD_NUMBER, SHARD_ID_BITS

__all__ = ["MAX_SHARD_NUMBER", "SHARD_ID_BITS", "alias_for_job_id", "alias_for_queue",
           "aliases", "id_range", "not_a_database", "number_of", "shard_for_job_id"]


def shard_for_job_id(job_id: int) -> int:
    """The number of the shard that holds job `job_id`: 0 for JOB_DATABASE."""
    return int(job_id) >> SHARD_ID_BITS


def id_range(number: int) -> tuple[int, int]:
    """The first and last job id of shard `number` (0: JOB_DATABASE, whose ids start at 1)."""
    return max(1, number << SHARD_ID_BITS), ((number + 1) << SHARD_ID_BITS) - 1


@dataclass(frozen=True)
class _Table:
    exact: dict[str, str]  # queue name -> alias
    prefixes: tuple[tuple[str, str], ...]  # ("reports", alias) for "reports*", longest first
    by_number: dict[int, str]
    numbers: dict[str, int]


_cached: tuple[object, _Table] | None = None


def _table() -> _Table | None:
    """JOB_SHARDS compiled, once per settings object (None when it is empty)."""
    global _cached
    settings = conf.get()
    if not settings.SHARDS:
        return None
    cached = _cached
    if cached is not None and cached[0] is settings:
        return cached[1]
    exact: dict[str, str] = {}
    prefixes: list[tuple[str, str]] = []
    for alias, entry in settings.SHARDS.items():
        for pattern in entry["queues"]:
            if pattern.endswith("*"):
                prefixes.append((pattern[:-1], alias))
            else:
                exact[pattern] = alias
    prefixes.sort(key=lambda p: -len(p[0]))
    table = _Table(exact, tuple(prefixes),
                   {e["number"]: a for a, e in settings.SHARDS.items()},
                   {a: e["number"] for a, e in settings.SHARDS.items()})
    _cached = (settings, table)
    return table


def alias_for_queue(queue: str) -> str:
    """The alias of the database that holds `queue`: its shard's, else JOB_DATABASE."""
    table = _table()
    if table is None:
        return conf.get().DATABASE
    alias = table.exact.get(queue)
    if alias is not None:
        return alias
    for prefix, alias in table.prefixes:
        if queue.startswith(prefix):
            return alias
    return conf.get().DATABASE


def alias_for_job_id(job_id: int) -> str:
    """The alias of the database that holds job `job_id`: its shard's, else JOB_DATABASE
    (also for an id of no configured shard, which no database holds: its lookup finds
    nothing)."""
    table = _table()
    if table is None:
        return conf.get().DATABASE
    return table.by_number.get(shard_for_job_id(job_id), conf.get().DATABASE)


def aliases() -> list[str]:
    """The shards' aliases, JOB_SHARDS's order (JOB_DATABASE not among them)."""
    table = _table()
    return [] if table is None else list(table.numbers)


def number_of(alias: str) -> int:
    """The shard number of `alias`: 0 for JOB_DATABASE (or any alias not a shard)."""
    table = _table()
    return 0 if table is None else table.numbers.get(alias, 0)


def not_a_database(name: str) -> str | None:
    """Why `name` (a request's `shard`) names no database of the queue, in words: None when it
    is JOB_DATABASE's alias or a shard's (the API's 400 naming the field otherwise)."""
    home = conf.get().DATABASE
    if name == home or name in conf.get().SHARDS:
        return None
    return f"must be one of {', '.join([home, *aliases()])}; got {name[:40]!r}."
