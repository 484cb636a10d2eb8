"""Shards by queue: each shard's range of job ids, set on its `jobs` identity so that an id
names its shard (shards.py). Run after `migrate` on each database of JOB_SHARDS and on
JOB_DATABASE (apps.py's post_migrate hook), and checked when a worker starts on a shard;
and an operator's action on a job or a queue run on its shard (`on_job_shard`,
`on_queue_shard`).
"""
import functools
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from .. import conf, db, shards, sql
from ..states import parse_job_id

T = TypeVar("T")


def _state(alias: str) -> tuple[str, int, int, int | None]:
    with connections[alias].cursor() as cur:
        cur.execute(sql.SHARD_ID_RANGE)
        sequence, seqmin, seqmax, max_id = cur.fetchone()
    return sequence, int(seqmin), int(seqmax), max_id


def _number(alias: str) -> int:
    if alias != conf.get().DATABASE and alias not in conf.get().SHARDS:
        raise ImproperlyConfigured(f"{alias!r} is neither JOB_DATABASE nor a shard of "
                                   "JOB_SHARDS")
    return shards.number_of(alias)


def prepare_ids(alias: str) -> str:
    """Bound the ids of the jobs of `alias` (a shard's, or JOB_DATABASE's) to its shard's range
    (`shards.id_range`); idempotent. Returns what it did, in words. Raises
    ImproperlyConfigured when the database holds jobs outside its range: it was another
    queue, whose ids would name another shard."""
    number = _number(alias)
    first, last = shards.id_range(number)
    sequence, seqmin, seqmax, max_id = _state(alias)
    if number == 0:
        first = seqmin  # JOB_DATABASE's ids go on as they were: only bounded above
    if (seqmin, seqmax) == (first, last):
        return f"{alias}: job ids {first} to {last} (shard {number}), already set"
    if max_id is not None and not first <= max_id <= last:
        raise ImproperlyConfigured(
            f"{alias!r} holds jobs whose ids (up to {max_id}) are outside shard {number}'s "
            f"range, {first} to {last}: it was another queue. Give the shard an empty "
            "database, or drain and empty this one first.")
    restart = None if number == 0 else (first if max_id is None else max_id + 1)
    with connections[alias].cursor() as cur:
        cur.execute(sql.set_shard_id_range(sequence, first, last, restart))
    return f"{alias}: job ids {first} to {last} (shard {number}), set"


def check_ids(alias: str) -> None:
    """Raise ImproperlyConfigured unless the ids of `alias` (a shard's) are in its range: a
    shard whose ids start at 1 would hand out JOB_DATABASE's ids."""
    number = _number(alias)
    first, last = shards.id_range(number)
    _, seqmin, seqmax, _ = _state(alias)
    if (seqmin, seqmax) != (first, last):
        raise ImproperlyConfigured(
            f"the jobs of shard {alias!r} do not have their ids' range ({first} to {last}): "
            f"run `manage.py migrate --database {alias}`.")


def _routed(database_of: Callable[[object], str | None]):
    """A decorator: `service(first, ...)` run on `database_of(first)` (None: where it is) when
    JOB_SHARDS is set; without shards, called as it is, at no cost."""
    def decorator(service: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(service)
        def on_its_shard(first, *args, **kwargs):
            if not conf.get().SHARDS:
                return service(first, *args, **kwargs)
            with db.on_database(database_of(first)):
                return service(first, *args, **kwargs)

        return on_its_shard

    return decorator


def _job_database(job_id) -> str | None:
    parsed = parse_job_id(getattr(job_id, "pk", job_id))
    return None if parsed is None else shards.alias_for_job_id(parsed)


def _queue_database(queue) -> str | None:
    return shards.alias_for_queue(queue) if isinstance(queue, str) else None


# An operator's action on one job (cancel, retry, ...), run on the database its id names.
on_job_shard = _routed(_job_database)
# An operator's action on a queue (pause, resume, limit), run on the database that holds it.
on_queue_shard = _routed(_queue_database)
