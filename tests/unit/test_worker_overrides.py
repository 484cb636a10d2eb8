"""What a lane may claim under its host's queue overrides (worker/overrides.py's plan): pure,
no threads, no database."""
from collections import Counter

from django_pg_jobqueue.worker.overrides import describe, plan


def test_no_override_in_the_lane_s_queues_changes_nothing():
    assert plan({"other": (1, True)}, ["mail"], Counter(), 8).limit == 8
    assert not plan({"other": (1, True)}, ["mail"], Counter(), 8).touched


def test_a_stopped_queue_is_left_out_of_the_claim():
    p = plan({"mail": (None, True)}, None, Counter(), 8)
    assert p.exclude == ("mail",) and p.limit == 8 and not p.capped


def test_a_lane_whose_every_queue_is_stopped_claims_nothing():
    assert plan({"mail": (None, True)}, ["mail"], Counter(), 8).limit == 0
    assert plan({"a": (None, True), "b": (2, False)}, ["a", "b"], Counter(b=2), 8).limit == 0


def test_a_cap_with_room_bounds_the_claim_to_its_room():
    p = plan({"mail": (3, False)}, ["mail", "sms"], Counter(mail=1, sms=4), 8)
    assert p.exclude == () and p.limit == 2 and p.capped


def test_a_full_cap_leaves_its_queue_out_and_the_others_claim_freely():
    p = plan({"mail": (2, False)}, None, Counter(mail=2), 8)
    assert p.exclude == ("mail",) and p.limit == 8 and not p.capped


def test_zero_threads_is_as_stopped():
    assert plan({"mail": (0, False)}, ["mail"], Counter(), 4).limit == 0


def test_the_log_describes_the_overrides():
    assert describe({}) == "none"
    assert describe({"b": (None, True), "a": (1, False)}) == "a threads=1, b stopped"
