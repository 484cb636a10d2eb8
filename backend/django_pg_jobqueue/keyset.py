"""Keyset paging over several databases: one list read from JOB_DATABASE and each shard,
merged in its sort order, paged with a cursor. Pure: no query (it builds `Q` filters and
compares rows the databases returned).

The cursor holds one position per database: the sort key (and id) of the last row of that
database the pages so far showed. The next page reads, from each database, the rows after its
own position, in that database's own order, and merges the heads: a database's rows are
always shown as a prefix of its own order, so no row is shown twice or skipped, even where
Python's comparison of two values differs from PostgreSQL's (text under a collation): then
only the interleaving between databases can differ from a single sorted list. A job added
after the first page is shown only if it sorts after a database's position (an ascending
order), never twice. Ids are unique across databases (they name their shard), so the key
plus the id orders every row.

PostgreSQL's default NULL order is kept: NULL sorts after every value ascending (NULLS
LAST) and before every value descending (NULLS FIRST).

The events feed (merged.events_feed) pages the same way with a cursor of its own
(`encode_feed`): each database's position in its feed is its last event's (tx_id, id), its
commit order (feed.py), while the page interleaves the databases by time (`merge`'s
`position`).
"""
import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cmp_to_key
from typing import Any

from django.db.models import Q

CURSOR_VERSION = 1


class BadCursor(ValueError):
    """A cursor that is not one this module wrote, or for another order: the API's 400 naming
    `cursor`."""


@dataclass(frozen=True)
class Order:
    """A list's order: (field, descending) pairs, the last one `id` (the tie-breaker)."""

    fields: tuple[tuple[str, bool], ...]

    @classmethod
    def parse(cls, ordering: Sequence[str]) -> "Order":
        """From Django's `order_by()` terms ("-created_at", "id"); `id` is added last (in
        the direction of the first term) when missing, and terms after it are dropped."""
        fields: list[tuple[str, bool]] = []
        for term in ordering:
            name, desc = term.lstrip("-"), term.startswith("-")
            if name == "pk":
                name = "id"
            if any(name == seen for seen, _ in fields):
                continue
            fields.append((name, desc))
            if name == "id":
                break
        if not fields or fields[-1][0] != "id":
            fields.append(("id", fields[0][1] if fields else True))
        return cls(tuple(fields))

    def order_by(self) -> list[str]:
        """The terms for `order_by()`."""
        return [("-" if desc else "") + name for name, desc in self.fields]

    def key(self, row: Any) -> tuple:
        """A row's sort key: its values of the order's fields (attributes or dict keys)."""
        if isinstance(row, dict):
            return tuple(row[name] for name, _ in self.fields)
        return tuple(getattr(row, name) for name, _ in self.fields)

    def compare(self, a: tuple, b: tuple) -> int:
        """-1, 0 or 1: whether key `a` comes before, with or after key `b`."""
        for (_, desc), x, y in zip(self.fields, a, b):
            if x == y:
                continue
            if x is None or y is None:  # NULL is the largest value
                result = 1 if x is None else -1
            else:
                result = -1 if x < y else 1
            return -result if desc else result
        return 0

    def after(self, key: Sequence) -> Q:
        """The rows strictly after `key` in this order: for each field, the rows equal on
        the fields before it and after it on this one."""
        result = Q(pk__in=[])
        equal = Q()
        for (name, desc), value in zip(self.fields, key):
            if value is None:
                beyond = Q(**{f"{name}__isnull": False}) if desc else None
                same = Q(**{f"{name}__isnull": True})
            else:
                beyond = (Q(**{f"{name}__lt": value}) if desc
                          else Q(**{f"{name}__gt": value}) | Q(**{f"{name}__isnull": True}))
                same = Q(**{name: value})
            if beyond is not None:
                result |= equal & beyond
            equal &= same
        return result


def _plain(value: Any) -> Any:
    return {"dt": value.isoformat()} if isinstance(value, datetime) else value


def _typed(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"dt"} and isinstance(value["dt"], str):
        return datetime.fromisoformat(value["dt"])
    if value is None or isinstance(value, (int, str, float)) and not isinstance(value, bool):
        return value
    raise BadCursor("a value of an unknown kind")


def encode(order: Order, positions: dict[str, tuple]) -> str:
    """A cursor: the order and each database's position (alias -> the key of its last row
    shown), URL-safe base64 of JSON."""
    body = {"v": CURSOR_VERSION, "o": order.order_by(),
            "p": {alias: [_plain(v) for v in key] for alias, key in positions.items()}}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()


def _body(cursor: str) -> dict:
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise BadCursor("not a cursor this list gave") from None
    if not isinstance(body, dict) or body.get("v") != CURSOR_VERSION:
        raise BadCursor("not a cursor this list gave")
    return body


def decode(cursor: str, order: Order, aliases: Sequence[str]) -> dict[str, tuple]:
    """Each database's position from `cursor`; BadCursor when it is not one `encode` wrote
    for `order`, or names a database not among `aliases`."""
    body = _body(cursor)
    if body.get("o") != order.order_by():
        raise BadCursor("a cursor of another ordering")
    positions = body.get("p")
    if not isinstance(positions, dict):
        raise BadCursor("not a cursor this list gave")
    out: dict[str, tuple] = {}
    for alias, key in positions.items():
        if alias not in aliases:
            raise BadCursor(f"names a database that is not configured: {alias[:40]!r}")
        if not isinstance(key, list) or len(key) != len(order.fields) or key[-1] is None:
            raise BadCursor("not a cursor this list gave")
        out[alias] = tuple(_typed(v) for v in key)
    return out


# The event feed's cursor (merged.events_feed): each database's position in its own feed,
# the (tx_id, id) of the last of its events shown (feed.py), whatever the page's order.
FEED = "events"


def encode_feed(positions: dict[str, tuple]) -> str:
    """The event feed's cursor: alias -> (tx_id or None, event id), URL-safe base64 of JSON."""
    body = {"v": CURSOR_VERSION, "f": FEED,
            "p": {alias: list(position) for alias, position in positions.items()}}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def decode_feed(cursor: str) -> dict[str, tuple]:
    """Each database's position from an event feed's cursor (every alias it names: the
    caller keeps those still configured); BadCursor when `encode_feed` did not write it."""
    body = _body(cursor)
    positions = body.get("p")
    if body.get("f") != FEED or not isinstance(positions, dict):
        raise BadCursor("not a cursor of the event feed")
    out: dict[str, tuple] = {}
    for alias, position in positions.items():
        if (not isinstance(position, list) or len(position) != 2 or not _count(position[1])
                or not (position[0] is None or _count(position[0]))):
            raise BadCursor("not a cursor of the event feed")
        out[alias] = (position[0], position[1])
    return out


@dataclass
class MergedPage:
    rows: list[tuple[str, Any]]  # (alias, row), in the order's order
    positions: dict[str, tuple]  # each database's position after this page
    more: bool  # some database has rows after its position


def merge(order: Order, streams: dict[str, list], limit: int,
          positions: dict[str, tuple] | None = None,
          position: Callable[[Any], tuple] | None = None) -> MergedPage:
    """The first `limit` rows of `streams` (alias -> rows, each list in `order` and read with
    one row more than `limit`, so that a row left over says the list goes on), merged by
    taking the least head each time: each database's rows stay in its own order.
    `positions` are the cursor's (a database with no row on the page keeps its own).
    `position(row)`: a database's position after `row`, when it is not the row's key in
    `order` (the event feed: each database's rows in commit order, merged by time)."""
    heads = {alias: 0 for alias, rows in streams.items() if rows}
    positions = dict(positions or {})
    page: list[tuple[str, Any]] = []

    def head_key(alias: str) -> tuple:
        return order.key(streams[alias][heads[alias]])

    least = cmp_to_key(order.compare)
    while heads and len(page) < limit:
        alias = min(heads, key=lambda a: least(head_key(a)))
        row = streams[alias][heads[alias]]
        page.append((alias, row))
        positions[alias] = order.key(row) if position is None else position(row)
        heads[alias] += 1
        if heads[alias] == len(streams[alias]):
            del heads[alias]
    return MergedPage(page, positions, more=bool(heads))
