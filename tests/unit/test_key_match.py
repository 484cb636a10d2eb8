"""Which name a key comes under, for the rate limits' keys and the fair queues' weights alike:
its own, else the longest prefix it starts with, else none."""
import pytest

from django_pg_jobqueue.catalogue import key_match, limit_for

NAMES = ["tenant:*", "tenant:vip:*", "tenant:a", "other"]


@pytest.mark.parametrize(("key", "expected"), [
    ("tenant:a", "tenant:a"),
    ("tenant:vip:1", "tenant:vip:*"),
    ("tenant:b", "tenant:*"),
    ("tenant:", "tenant:*"),
    ("tenan", None),
    ("other:1", None),
    ("other", "other"),
])
def test_a_key_comes_under_its_own_name_else_the_longest_prefix_else_none(key, expected):
    assert key_match(key, NAMES) == expected


def test_a_name_ending_in_a_star_is_matched_exactly_before_as_a_prefix():
    assert key_match("tenant:*", ["tenant:*", "tenant*", "t*"]) == "tenant:*"


def test_a_keys_limit_is_the_row_key_match_picks_and_a_queues_is_its_own_name_only():
    limits = [("key", "customer:*", 2, 60.0), ("key", "customer:vip", 9, 60.0),
              ("queue", "mail*", 1, 1.0), ("queue", "mail", 3, 1.0)]
    assert limit_for("key", "customer:vip", limits) == ("key", "customer:vip", 9, 60.0)
    assert limit_for("key", "customer:7", limits) == ("key", "customer:*", 2, 60.0)
    assert limit_for("key", "supplier:7", limits) is None
    assert limit_for("queue", "mailer", limits) is None
    assert limit_for("queue", "mail", limits) == ("queue", "mail", 3, 1.0)
