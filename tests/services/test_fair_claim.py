"""Fair shares and priority aging in the claim (sql.CLAIM_FAIR): turns by fairness key within
a priority, aging within its cap, the plain claim left alone for queues that use neither;
what a caller may give (enqueue, enqueue_many, the API, the queue settings alike); the job's
detail says how it is ordered. The worker-process guarantees are in
tests/system/test_fairness_workers.py."""
from datetime import timedelta

import pytest

from django_pg_jobqueue import (
    db,
    enqueue,
    enqueue_many,
    services,
    set_fairness_weights,
    set_queue_aging,
    set_queue_fairness,
    sql,
)
from django_pg_jobqueue.exceptions import InvalidJobArgument, JobArgumentTypeError, QueueNotFound
from django_pg_jobqueue.models import AuditLogEntry, Job, QueueSetting
from django_pg_jobqueue.services import claiming

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
WORKERS = [f"test-1-{i}" for i in range(12)]


@pytest.fixture
def operator(queue_operator):
    """conftest's operator, who may also change queue settings (change_queuesetting)."""
    return queue_operator


def claim(n=12, **kwargs):
    claiming.forget_cached_limits()  # the settings just written, not the last second's
    return services.claim(worker_ids=WORKERS[:n], **kwargs)


def keys_in_claim_order(claimed):
    keys = dict(Job.objects.filter(pk__in=[c.id for c in claimed])
                .values_list("id", "fairness_key"))
    return [keys[c.id] or "-" for c in claimed]


def backlog(queue="fair", a=6, b=2, c=2, keyless=0, **options):
    for key, n in (("tenant:a", a), ("tenant:b", b), ("tenant:c", c), (None, keyless)):
        enqueue_many([{"type": "noop", "queue": queue, "fairness_key": key, **options}
                      for _ in range(n)] if n else [])


# -- turns by key -----------------------------------------------------------------------------

def test_a_fair_queue_takes_one_job_of_each_key_in_turn():
    backlog()
    set_queue_fairness("fair", True)
    assert keys_in_claim_order(claim(8, queues=["fair"])) == [
        "tenant:a", "tenant:b", "tenant:c", "tenant:a", "tenant:b", "tenant:c",
        "tenant:a", "tenant:a"]


def test_without_fairness_the_oldest_jobs_go_first_whatever_their_key():
    backlog()
    assert keys_in_claim_order(claim(4, queues=["fair"])) == ["tenant:a"] * 4


def test_jobs_without_a_key_share_one_turn():
    backlog(a=3, b=0, c=0, keyless=3)
    set_queue_fairness("fair", True)
    assert keys_in_claim_order(claim(4, queues=["fair"])) == ["tenant:a", "-", "tenant:a", "-"]


def test_a_job_without_a_key_enqueued_here_is_claimed_at_once_not_after_the_probe():
    backlog(a=2, b=0, c=0)
    set_queue_fairness("fair", True)
    assert keys_in_claim_order(claim(1, queues=["fair"])) == ["tenant:a"]  # probe: none keyless
    enqueue("noop", queue="fair")
    claimed = services.claim(worker_ids=WORKERS[:2], queues=["fair"])  # the probe not re-read
    assert keys_in_claim_order(claimed) == ["tenant:a", "-"]


def test_priority_still_comes_first_and_turns_are_taken_within_a_priority():
    backlog(a=3, b=0, c=0)
    enqueue("noop", queue="fair", fairness_key="tenant:b", priority=5)
    enqueue("noop", queue="fair", fairness_key="tenant:c")
    set_queue_fairness("fair", True)
    claimed = claim(3, queues=["fair"])
    assert keys_in_claim_order(claimed) == ["tenant:b", "tenant:a", "tenant:c"]
    assert claimed[0].priority == 5


def test_a_claim_over_every_queue_is_fair_for_the_fair_one():
    backlog()
    set_queue_fairness("fair", True)
    assert keys_in_claim_order(claim(3)) == ["tenant:a", "tenant:b", "tenant:c"]


def test_the_fair_claim_skips_paused_expired_and_concurrency_keyed_jobs_like_the_plain_one():
    backlog(a=1, b=0, c=0)
    enqueue("noop", queue="fair", fairness_key="tenant:b", concurrency_key="k")
    set_queue_fairness("fair", True)
    services.pause_queue("fair")
    assert claim(queues=["fair"]) == []
    services.resume_queue("fair")
    # The keyed job by the keyed claim (first), the other by the fair claim.
    assert sorted(keys_in_claim_order(claim(queues=["fair"]))) == ["tenant:a", "tenant:b"]
    assert claim(queues=["fair"]) == []


# -- weights --------------------------------------------------------------------------------

def test_a_key_of_weight_two_takes_two_turns_per_round():
    backlog(a=6, b=3, c=3)
    set_queue_fairness("fair", True)
    set_fairness_weights("fair", {"tenant:a": 2})
    assert keys_in_claim_order(claim(12, queues=["fair"])) == [
        "tenant:a", "tenant:a", "tenant:b", "tenant:c", "tenant:a", "tenant:a", "tenant:b",
        "tenant:c", "tenant:a", "tenant:a", "tenant:b", "tenant:c"]


def test_a_key_takes_its_own_weight_else_the_longest_prefix_else_one():
    for key in ("tenant:a", "tenant:vip:b", "other:c"):
        enqueue_many([{"type": "noop", "queue": "fair", "fairness_key": key}] * 4)
    set_queue_fairness("fair", True)
    set_fairness_weights("fair", {"tenant:*": 2, "tenant:vip:*": 3, "tenant:a": 1})
    # tenant:a its own 1, tenant:vip:b the longest prefix's 3, other:c none: 1. Within a
    # turn, due order (tenant:a's jobs were enqueued first).
    assert keys_in_claim_order(claim(8, queues=["fair"])) == [
        "tenant:a", "tenant:vip:b", "tenant:vip:b", "tenant:vip:b", "other:c",
        "tenant:a", "tenant:vip:b", "other:c"]


def test_weights_do_nothing_in_a_queue_that_is_not_fair():
    backlog(a=4, b=2, c=0)
    set_fairness_weights("fair", {"tenant:b": 5})
    assert keys_in_claim_order(claim(3, queues=["fair"])) == ["tenant:a"] * 3


def test_weights_merge_and_each_change_is_audited_as_old_and_new():
    backlog(a=1, b=0, c=0)
    set_fairness_weights("fair", {"tenant:a": 3, "tenant:*": 2}, actor="ops")
    set_fairness_weights("fair", {"tenant:a": None, "tenant:b": 4}, actor="ops")
    assert QueueSetting.objects.get(queue="fair").fairness_weights == {
        "tenant:*": 2, "tenant:b": 4}
    entries = AuditLogEntry.objects.order_by("id")
    assert [(e.action, e.target, e.actor, e.data) for e in entries] == [
        ("set_fairness_weights", "fair", "ops", {"tenant:a": [None, 3], "tenant:*": [None, 2]}),
        ("set_fairness_weights", "fair", "ops", {"tenant:a": [3, None], "tenant:b": [None, 4]})]
    set_fairness_weights("fair", {"tenant:*": None, "tenant:b": None})
    assert QueueSetting.objects.get(queue="fair").fairness_weights == {}


@pytest.mark.parametrize("bad", [
    {"tenant:a": 0}, {"tenant:a": 101}, {"tenant:a": 2.5}, {"tenant:a": True},
    {"tenant:a": "2"}, {"": 2}, {"   ": 2}, {"x" * 201: 2}, ["tenant:a"], None, "tenant:a",
])
def test_bad_weights_are_refused_naming_fairness_weights_and_change_nothing(bad,
                                                                             operator_client):
    enqueue("noop", queue="fair")
    with pytest.raises(InvalidJobArgument) as caught:
        set_fairness_weights("fair", bad)
    assert caught.value.argument == "fairness_weights"
    response = operator_client.patch("/api/v1/queues/fair/",
                                     {"fair": True, "aging_seconds": 5,
                                      "fairness_weights": bad}, format="json")
    assert response.status_code == 400, response.json()
    assert "fairness_weights" in response.json()["errors"], response.json()
    assert not QueueSetting.objects.filter(queue="fair").exists()
    assert not AuditLogEntry.objects.exists()


def test_weights_are_set_through_the_api_and_shown_with_the_queue(operator_client):
    backlog(a=3, b=1, c=0)
    response = operator_client.patch("/api/v1/queues/fair/", {
        "fair": True, "fairness_weights": {"tenant:a": 2}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["fairness_weights"] == {"tenant:a": 2}
    assert operator_client.get("/api/v1/queues/").json()[0]["fairness_weights"] == {
        "tenant:a": 2}
    assert keys_in_claim_order(claim(3, queues=["fair"])) == ["tenant:a", "tenant:a", "tenant:b"]


def test_a_queue_that_does_not_exist_cannot_be_weighted():
    with pytest.raises(QueueNotFound):
        set_fairness_weights("nowhere", {"tenant:a": 2})


def test_the_detail_names_a_weighted_keys_weight(operator_client):
    backlog(a=2, b=0, c=0)
    set_queue_fairness("fair", True)
    set_fairness_weights("fair", {"tenant:*": 3})
    last_a = Job.objects.filter(fairness_key="tenant:a").order_by("id").last()
    assert operator_client.get(f"{JOBS}{last_a.id}/").json()["fairness_wait"].startswith(
        "fair shares: key tenant:a (weight 3) takes turns with 0 other keys; 1 of its jobs")


# -- under concurrency and rate limits ---------------------------------------------------------

def test_under_a_queue_limit_the_claim_takes_turns_and_stops_at_the_limit():
    backlog(a=6, b=2, c=2)
    set_queue_fairness("fair", True)
    services.set_queue_limit("fair", 4)
    assert keys_in_claim_order(claim(12, queues=["fair"])) == [
        "tenant:a", "tenant:b", "tenant:c", "tenant:a"]
    assert claim(12, queues=["fair"]) == []  # four running: the limit holds


def test_under_a_rate_limit_the_claim_takes_turns_with_weights_within_the_window():
    backlog(a=6, b=2, c=2)
    set_queue_fairness("fair", True)
    set_fairness_weights("fair", {"tenant:c": 2})
    services.set_rate_limit(queue="fair", max_starts=5, period_seconds=3600)
    assert keys_in_claim_order(claim(12, queues=["fair"])) == [
        "tenant:a", "tenant:b", "tenant:c", "tenant:c", "tenant:a"]
    assert claim(12, queues=["fair"]) == []  # the window is full


def one_at_a_time(n, queue="fair"):
    """n claims of one job under the queue's limit of one, each job completed before the
    next claim: what a limit that frees one slot at a time gives a busy queue."""
    from django_pg_jobqueue.services.lifecycle import Completion
    keys = []
    for _ in range(n):
        [job] = claim(1, queues=[queue])
        keys += keys_in_claim_order([job])
        services.complete_many([Completion(job.id, job.lease_token, job.worker_id, {})])
    return keys


def test_under_a_limit_claims_of_one_job_still_take_turns_remembering_each_keys_starts():
    backlog(a=6, b=3, c=3)
    set_queue_fairness("fair", True)
    services.set_queue_limit("fair", 1)
    assert one_at_a_time(8) == ["tenant:a", "tenant:b", "tenant:c", "tenant:a", "tenant:b",
                                "tenant:c", "tenant:a", "tenant:b"]


def test_under_a_limit_claims_of_one_job_give_a_weighted_key_its_turns():
    backlog(a=8, b=3, c=3)
    set_queue_fairness("fair", True)
    set_fairness_weights("fair", {"tenant:a": 2})
    services.set_queue_limit("fair", 1)
    assert one_at_a_time(8) == ["tenant:a", "tenant:a", "tenant:b", "tenant:c", "tenant:a",
                                "tenant:a", "tenant:b", "tenant:c"]


def test_under_a_type_limit_an_aged_job_still_goes_first():
    low = enqueue("noop", queue="aging", priority=0)
    _aged(low, 100)
    high = enqueue_many([{"type": "noop", "queue": "aging", "priority": 5}] * 3)
    set_queue_aging("aging", 10)
    services.set_queue_limit("aging", 2)
    assert [c.id for c in claim(4, queues=["aging"])] == [low.id, high[0].id]


def test_a_fair_queue_under_limits_is_claimed_by_the_limited_fair_statement(monkeypatch):
    backlog(queue="fair")
    backlog(queue="plain")
    set_queue_fairness("fair", True)
    services.set_queue_limit("fair", 2)
    services.set_queue_limit("plain", 2)
    ran = []
    fetch_all = db.fetch_all
    monkeypatch.setattr(db, "fetch_all", lambda statement, params: (
        ran.append(statement), fetch_all(statement, params))[1])
    by_queue = "AND queue = ANY(%(queues)s::text[])"
    assert len(claim(4, queues=["plain"])) == 2
    assert sql.CLAIM_LIMITED.format(queue_filter=by_queue) in ran
    assert len(claim(4, queues=["fair"])) == 2
    assert sql.CLAIM_LIMITED_FAIR.format(queue_filter=by_queue) in ran


# -- the plain claim stays as it is -------------------------------------------------------------

def test_a_queue_without_fairness_or_aging_is_claimed_by_the_plain_statement_unchanged(
        monkeypatch):
    backlog(queue="fair")
    backlog(queue="plain")
    set_queue_fairness("fair", True)
    ran = []
    fetch_all = db.fetch_all
    monkeypatch.setattr(db, "fetch_all", lambda statement, params: (
        ran.append(statement), fetch_all(statement, params))[1])
    by_queue = "AND queue = ANY(%(queues)s::text[])"
    assert len(claim(2, queues=["plain"])) == 2
    assert sql.CLAIM.format(queue_filter=by_queue) in ran
    assert sql.CLAIM_FAIR.format(queue_filter=by_queue) not in ran
    assert len(claim(2, queues=["fair"])) == 2
    assert sql.CLAIM_FAIR.format(queue_filter=by_queue) in ran


# -- aging ------------------------------------------------------------------------------------

def _aged(job, seconds: float) -> None:
    """Move the job's due time back: the aging counts from available_at."""
    Job.objects.filter(pk=job.pk).update(available_at=job.available_at - timedelta(seconds=seconds))


def test_an_aged_low_priority_job_overtakes_newer_high_priority_ones():
    low = enqueue("noop", queue="aging", priority=0)
    _aged(low, 100)
    high = enqueue("noop", queue="aging", priority=5)
    set_queue_aging("aging", 10)  # +1 per 10 s: the low job counts as 10 now
    assert [c.id for c in claim(2, queues=["aging"])] == [low.id, high.id]


def test_aging_never_lifts_a_job_past_its_cap():
    low = enqueue("noop", queue="aging", priority=0)
    _aged(low, 100)
    high = enqueue("noop", queue="aging", priority=5)
    set_queue_aging("aging", 10, aging_max_priority=4)
    assert [c.id for c in claim(2, queues=["aging"])] == [high.id, low.id]


def test_without_aging_priority_decides():
    low = enqueue("noop", queue="aging", priority=0)
    _aged(low, 100)
    high = enqueue("noop", queue="aging", priority=5)
    assert [c.id for c in claim(2, queues=["aging"])] == [high.id, low.id]


# -- why a job waits ------------------------------------------------------------------------------

def test_the_detail_says_how_a_fair_and_aging_queue_orders_the_job(operator_client):
    backlog(a=3)
    set_queue_fairness("fair", True)
    set_queue_aging("fair", 30)
    last_a = Job.objects.filter(fairness_key="tenant:a").order_by("id").last()
    body = operator_client.get(f"{JOBS}{last_a.id}/").json()
    assert body["fairness_key"] == "tenant:a"
    assert body["fairness_wait"].startswith(
        "fair shares: key tenant:a takes turns with 2 other keys; 2 of its jobs come first; "
        "aging: counts as priority 0 now: 0, +1 per 30 s due, up to 100")
    plain = enqueue("noop", queue="other", fairness_key="tenant:a")
    assert operator_client.get(f"{JOBS}{plain.id}/").json()["fairness_wait"] == ""


# -- what a caller may give ---------------------------------------------------------------------

@pytest.mark.parametrize("bad, error", [
    ("", InvalidJobArgument), ("   ", InvalidJobArgument), ("x" * 201, InvalidJobArgument),
    ("a\x00b", InvalidJobArgument), (5, JobArgumentTypeError), (["k"], JobArgumentTypeError),
])
def test_a_bad_fairness_key_is_refused_naming_it_and_nothing_is_written(bad, error,
                                                                         operator_client):
    with pytest.raises(error) as caught:
        enqueue("noop", fairness_key=bad)
    assert caught.value.argument == "fairness_key"
    with pytest.raises(error) as caught:
        enqueue_many([{"type": "noop"}, {"type": "noop", "fairness_key": bad}])
    assert caught.value.argument == "fairness_key"
    response = operator_client.post(JOBS, {"type": "noop", "fairness_key": bad}, format="json")
    # 400 naming the field (a NUL is refused by the body's parser already, as for every field)
    assert response.status_code == 400, response.json()
    assert "fairness_key" in response.json().get("errors", {}) or bad == "a\x00b"
    assert not Job.objects.exists()


def test_the_api_takes_the_same_fairness_key_and_keeps_it_the_users_own(operator_client):
    response = operator_client.post(JOBS, {"type": "noop", "fairness_key": "tenant:a"},
                                    format="json")
    assert response.status_code == 201 and response.json()["fairness_key"] == "tenant:a"
    stored = Job.objects.get(pk=response.json()["id"]).fairness_key
    assert stored.startswith("api:") and stored.endswith(":tenant:a")
    bulk = operator_client.post(f"{JOBS}bulk/", {"jobs": [
        {"type": "noop", "fairness_key": "tenant:b"}]}, format="json")
    assert bulk.status_code == 201 and bulk.json()["jobs"][0]["fairness_key"] == "tenant:b"


@pytest.mark.parametrize("kwargs, argument", [
    ({"aging_seconds": 0}, "aging_seconds"), ({"aging_seconds": -1}, "aging_seconds"),
    ({"aging_seconds": 86401}, "aging_seconds"), ({"aging_seconds": "soon"}, "aging_seconds"),
    ({"aging_seconds": 5, "aging_max_priority": 101}, "aging_max_priority"),
    ({"aging_seconds": None, "aging_max_priority": 3}, "aging_max_priority"),
])
def test_bad_aging_is_refused_naming_the_argument_and_changes_nothing(kwargs, argument,
                                                                       operator_client):
    enqueue("noop", queue="aging")
    with pytest.raises(InvalidJobArgument) as caught:
        set_queue_aging("aging", kwargs["aging_seconds"],
                        aging_max_priority=kwargs.get("aging_max_priority"))
    assert caught.value.argument == argument
    body = {**kwargs, "fair": True}
    response = operator_client.patch("/api/v1/queues/aging/", body, format="json")
    assert response.status_code == 400 and argument in response.json()["errors"], response.json()
    assert not QueueSetting.objects.filter(queue="aging").exists()
    assert not AuditLogEntry.objects.exists()


def test_fairness_and_aging_are_set_through_the_api_and_shown_with_the_queue(operator_client):
    enqueue("noop", queue="reports")
    response = operator_client.patch("/api/v1/queues/reports/", {
        "fair": True, "aging_seconds": 30, "aging_max_priority": 50}, format="json")
    assert response.status_code == 200, response.json()
    assert {k: response.json()[k] for k in ("fair", "aging_seconds", "aging_max_priority")} == {
        "fair": True, "aging_seconds": 30.0, "aging_max_priority": 50}
    assert list(AuditLogEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "set_queue_aging", "set_queue_fairness"]
    set_queue_fairness("reports", False)
    set_queue_aging("reports", None)
    row = operator_client.get("/api/v1/queues/reports/").json()
    assert (row["fair"], row["aging_seconds"]) == (False, None)


def test_a_queue_that_does_not_exist_cannot_be_made_fair():
    with pytest.raises(QueueNotFound):
        set_queue_fairness("nowhere", True)
    with pytest.raises(JobArgumentTypeError) as caught:
        set_queue_fairness("nowhere", "yes")
    assert caught.value.argument == "fair"
