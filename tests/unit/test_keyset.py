"""The merged list's paging without a database (keyset.py): the order and its tie-breaker, the
comparison with PostgreSQL's NULL order, the filter for the rows after a position, the cursor
read back or refused, and pages of three sorted lists that show each row once, none
skipped, while rows are added between pages; each list's rows stay in their own order even
where Python compares two values unlike the database."""
import functools
import random
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from django_pg_jobqueue import keyset
from django_pg_jobqueue.keyset import BadCursor, Order

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_the_order_ends_with_the_id_in_the_first_field_s_direction():
    assert Order.parse(["-id"]).fields == (("id", True),)
    assert Order.parse(["created_at"]).fields == (("created_at", False), ("id", False))
    assert Order.parse(["-finished_at", "queue"]).order_by() == ["-finished_at", "queue", "-id"]
    assert Order.parse(["pk", "queue"]).order_by() == ["id"]
    assert Order.parse([]).order_by() == ["-id"]


def test_null_sorts_last_ascending_and_first_descending_as_in_postgresql():
    up, down = Order.parse(["finished_at"]), Order.parse(["-finished_at"])
    keys = [(None, 1), (T0, 2), (T0 + timedelta(1), 3)]
    assert sorted(keys, key=functools.cmp_to_key(up.compare)) == [keys[1], keys[2], keys[0]]
    assert sorted(keys, key=functools.cmp_to_key(down.compare)) == [keys[0], keys[2], keys[1]]


def test_the_filter_after_a_position_names_each_field_and_null():
    order = Order.parse(["-finished_at"])
    assert str(order.after((T0, 7))) == str(
        keyset.Q(pk__in=[]) | keyset.Q(finished_at__lt=T0)
        | keyset.Q(finished_at=T0) & keyset.Q(id__lt=7))
    # After a NULL, descending (NULLs first): any value, or NULL with a lower id.
    assert str(order.after((None, 7))) == str(
        keyset.Q(pk__in=[]) | keyset.Q(finished_at__isnull=False)
        | keyset.Q(finished_at__isnull=True) & keyset.Q(id__lt=7))
    # Ascending: the NULLs come after every value.
    assert "finished_at__isnull', True" in str(Order.parse(["finished_at"]).after((T0, 7)))


def test_a_cursor_reads_back_its_positions_and_refuses_what_it_did_not_write():
    order = Order.parse(["-created_at"])
    positions = {"default": (T0, 5), "shard_b": (T0 - timedelta(seconds=1), 2**44 + 3)}
    cursor = keyset.encode(order, positions)
    assert keyset.decode(cursor, order, ["default", "shard_b"]) == positions
    with pytest.raises(BadCursor, match="another ordering"):
        keyset.decode(cursor, Order.parse(["created_at"]), ["default", "shard_b"])
    with pytest.raises(BadCursor, match="not configured"):
        keyset.decode(cursor, order, ["default"])
    for bad in ("", "!!", "bm90IGpzb24", keyset.encode(order, {"default": (None, None)})):
        with pytest.raises(BadCursor):
            keyset.decode(bad, order, ["default", "shard_b"])


def _rows(prefix: int, n: int, rng: random.Random) -> list:
    return [SimpleNamespace(id=(prefix << 44) + i, priority=rng.randint(-2, 2),
                            finished_at=rng.choice([None, T0 + timedelta(seconds=rng.randint(0, 9))]))
            for i in range(1, n + 1)]


def _page(order, data, positions, limit):
    """What merged.job_page does with each database's rows: those after its position, in
    order, one more than `limit`."""
    cmp = functools.cmp_to_key(order.compare)
    streams = {}
    for alias, rows in data.items():
        ordered = sorted(rows, key=lambda r: cmp(order.key(r)))
        position = positions.get(alias)
        if position is not None:
            ordered = [r for r in ordered if order.compare(order.key(r), position) > 0]
        streams[alias] = ordered[:limit + 1]
    return keyset.merge(order, streams, limit, positions)


@pytest.mark.parametrize("ordering", [["-id"], ["id"], ["-finished_at"], ["finished_at"],
                                      ["priority"], ["-priority"]])
def test_pages_of_three_lists_show_every_row_once_in_order_while_rows_are_added(ordering):
    rng = random.Random(7)
    data = {"default": _rows(0, 40, rng), "shard_b": _rows(1, 35, rng),
            "shard_c": _rows(2, 25, rng)}
    existing = {r.id for rows in data.values() for r in rows}
    order = Order.parse(ordering)
    seen, positions, pages = [], {}, 0
    while True:
        page = _page(order, data, positions, limit=7)
        seen += [row for _, row in page.rows]
        keys = [order.key(row) for _, row in page.rows]
        assert all(order.compare(a, b) < 0 for a, b in zip(keys, keys[1:]))
        pages += 1
        if not page.more:
            break
        # A cursor's round trip, then rows added to every list between two pages.
        positions = keyset.decode(keyset.encode(order, page.positions), order, list(data))
        for n, alias in enumerate(data):
            data[alias] += [SimpleNamespace(
                id=(n << 44) + 1000 + pages, priority=rng.randint(-2, 2),
                finished_at=rng.choice([None, T0 + timedelta(seconds=rng.randint(0, 9))]))]
    ids = [row.id for row in seen]
    assert len(ids) == len(set(ids))  # none twice
    assert existing <= set(ids)  # none that existed at the first page skipped
    assert pages >= 100 // 7


def test_each_list_keeps_its_own_order_when_python_compares_unlike_the_database():
    # Two lists sorted by the database's collation (case-insensitive here); Python's
    # comparison differs. The pages still show each list as a prefix of its own order.
    order = Order.parse(["queue"])
    a = [SimpleNamespace(queue=q, id=i) for i, q in enumerate(["a", "B", "c", "D"], 1)]
    b = [SimpleNamespace(queue=q, id=2**44 + i) for i, q in enumerate(["A", "b", "C"], 1)]
    shown, positions = [], {}
    for _ in range(10):
        streams = {}
        for alias, rows in (("default", a), ("shard_b", b)):
            start = 0 if alias not in positions else next(
                n for n, r in enumerate(rows) if r.id == positions[alias][-1]) + 1
            streams[alias] = rows[start:start + 3]
        page = keyset.merge(order, streams, 2, positions)
        shown += [row.id for _, row in page.rows]
        positions = page.positions
        if not page.more:
            break
    assert sorted(shown) == sorted(r.id for r in a + b)
    assert [i for i in shown if i < 2**44] == [1, 2, 3, 4]


def test_the_event_feed_s_cursor_reads_back_its_positions_and_refuses_what_it_did_not_write():
    positions = {"default": (7301, 1001), "shard_b": (None, 12), "shard_c": (0, 0)}
    assert keyset.decode_feed(keyset.encode_feed(positions)) == positions
    list_cursor = keyset.encode(Order.parse(["-id"]), {"default": (5,)})
    for bad in ("nope", list_cursor, keyset.encode_feed({"default": (1,)}),
                keyset.encode_feed({"default": (True, 1)}),
                keyset.encode_feed({"default": (1, -1)})):
        with pytest.raises(BadCursor):
            keyset.decode_feed(bad)


def test_events_merged_by_time_each_database_s_in_commit_order_go_on_from_positions():
    # Each database's events in its commit order (tx_id, id), their times not in that order;
    # the page interleaves them by time, and each database's position is its last event's
    # (tx_id, id), not its time.
    order = Order.parse(["created_at", "id"])

    def event(tx_id, event_id, second):
        return SimpleNamespace(tx_id=tx_id, id=event_id, created_at=T0 + timedelta(seconds=second))

    streams = {"default": [event(10, 2, 1), event(11, 1, 0), event(12, 3, 5)],
               "shard_b": [event(40, 1, 2), event(41, 2, 3)]}
    page = keyset.merge(order, streams, 4, {"shard_c": (3, 9)},
                        position=lambda e: (e.tx_id, e.id))
    assert [(alias, e.id) for alias, e in page.rows] == [
        ("default", 2), ("default", 1), ("shard_b", 1), ("shard_b", 2)]
    assert page.positions == {"default": (11, 1), "shard_b": (41, 2), "shard_c": (3, 9)}
    assert page.more
