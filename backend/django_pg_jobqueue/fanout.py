"""Reads of every database of the queue: JOB_DATABASE, then each shard of JOB_SHARDS.

`each(read)` runs `read()` on each database in turn (its models and raw statements go there,
db.on_database) and keeps each one's answer, or its error when it does not answer: the
connection refused or timed out, or dropped mid-read. A shard's connection waits at most
SHARD_CONNECT_TIMEOUT_SECONDS to open, unless its DATABASES entry sets its own
`OPTIONS["connect_timeout"]` (a refused one fails at once), and a shard that failed is
not tried again by this process for DOWN_RECHECK_SECONDS (reported down meanwhile, saying
when it failed), so that a dashboard polling every few seconds does not wait for the
timeout on each poll. The console's merged reads
(merged.py), GET /metrics (metrics.py) and the bulk actions by filter over every database
(services/bulk_actions.py) go through it; `on(alias, read)` is one database's turn.
"""
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, connections

from . import conf, db, shards

SHARD_CONNECT_TIMEOUT_SECONDS = 3
DOWN_RECHECK_SECONDS = 5.0

# alias -> (time.monotonic() of its failure, its reason): the databases not tried again yet.
_down: dict[str, tuple[float, str]] = {}


@dataclass
class Answer:
    """One database's answer to a read: `value`, or `error` when it did not answer."""

    alias: str
    number: int
    value: Any = None
    error: str | None = None

    @property
    def up(self) -> bool:
        return self.error is None

    def state(self) -> dict:
        """What the API says of this database (api/shards.py ShardStateSerializer)."""
        return {"alias": self.alias, "number": self.number, "up": self.up, "error": self.error}


def databases() -> list[str]:
    """JOB_DATABASE, then the shards in JOB_SHARDS's order."""
    return [conf.get().DATABASE, *shards.aliases()]


def _bound_connect(alias: str) -> None:
    """A shard's connection gives up opening after SHARD_CONNECT_TIMEOUT_SECONDS, unless its
    DATABASES entry says otherwise (read by the backend at each connect)."""
    if alias in conf.get().SHARDS:
        options = connections[alias].settings_dict.setdefault("OPTIONS", {})
        options.setdefault("connect_timeout", SHARD_CONNECT_TIMEOUT_SECONDS)


def _reason(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]


def each(read: Callable[[], Any]) -> list[Answer]:
    """`read()` on each database in turn (its models and raw statements go there), with
    each one's answer or error."""
    return [on(alias, read) for alias in databases()]


def on(alias: str, read: Callable[[], Any]) -> Answer:
    """`read()` on database `alias` (its models and raw statements go there): its answer, or
    its error when it does not answer (a shard that failed lately: without trying it)."""
    number = shards.number_of(alias)
    failed = _down.get(alias) if alias in conf.get().SHARDS else None
    if failed is not None and time.monotonic() - failed[0] < DOWN_RECHECK_SECONDS:
        ago = time.monotonic() - failed[0]
        return Answer(alias, number, error=f"{failed[1]} ({ago:.0f} s ago)")
    try:
        _bound_connect(alias)
        with db.on_database(alias):
            answer = Answer(alias, number, read())
    except (OperationalError, InterfaceError) as error:
        # Its connection is broken: closed, so that the next request connects again.
        try:
            connections[alias].close()
        except Exception:  # noqa: BLE001 (closing a dead connection may fail too)
            pass
        if alias in conf.get().SHARDS:
            _down[alias] = (time.monotonic(), _reason(error))
        return Answer(alias, number, error=_reason(error))
    _down.pop(alias, None)
    return answer


def forget_failures() -> None:
    """Try every database at the next read (tests; a shard known to be back)."""
    _down.clear()
