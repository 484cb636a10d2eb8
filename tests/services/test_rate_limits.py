"""Rate limits: at most N starts per sliding period for a queue, a job type or a concurrency
key, enforced by the claim; a job over its limit stays queued, uncharged, and holds back no
other type or key; weights; limits set at run time over those declared; the Python API that
checks and consumes a limit outside a job; the pruning of old starts. The several-process
guarantees are in tests/system/test_rate_limits_workers.py; with shards by queue, where a limit
is written (here, against a shard whose server refuses connections) and what it binds on real
shards (tests/system/test_shard_rate_limits.py)."""

import pytest
from django.db import OperationalError, connection
from django.test import override_settings
from django.utils.timezone import now

from django_pg_jobqueue import enqueue, rate_limit, remove_rate_limit, services, set_rate_limit
from django_pg_jobqueue.exceptions import InvalidJobArgument, QueueNotFound
from django_pg_jobqueue.metrics import snapshot
from django_pg_jobqueue.models import Job, RateLimit, RateStart
from django_pg_jobqueue.selectors import job_detail, rate_limits
from django_pg_jobqueue.services import claiming
from django_pg_jobqueue.services.rate_limits import RATE_STARTS_SLACK_SECONDS, prune_rate_starts
from django_pg_jobqueue.states import Status
from tests.api.test_api_merged_list import refused_shard  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

WORKERS = [f"test-1-{i}" for i in range(8)]


@pytest.fixture(autouse=True)
def fresh_limits():
    claiming.forget_cached_limits()
    yield
    claiming.forget_cached_limits()


def claim(n=8, **kwargs):
    return services.claim(worker_ids=WORKERS[:n], **kwargs)


def types_of(claimed):
    return sorted(c.type for c in claimed)


def starts_ago(scope, seconds, weight=1):
    with connection.cursor() as cur:
        cur.execute("INSERT INTO job_rate_starts (scope, started_at, weight)"
                    " VALUES (%s, now() - make_interval(secs => %s), %s)", [scope, seconds, weight])


# -- the claim ------------------------------------------------------------------------------

def test_a_type_limit_claims_up_to_its_starts_and_leaves_the_rest_queued_uncharged():
    set_rate_limit(type="noop", max_starts=3, period_seconds=60)
    limited = [enqueue("noop", {"i": i}, priority=5) for i in range(6)]
    others = [enqueue("sleep", {"i": i}) for i in range(3)]
    assert types_of(claim()) == ["noop"] * 3 + ["sleep"] * 3
    assert claim() == []
    waiting = Job.objects.filter(pk__in=[j.id for j in limited], status=Status.QUEUED)
    assert waiting.count() == 3 and {j.attempts for j in waiting} == {0}
    assert sorted(RateStart.objects.values_list("scope", flat=True)) == ["type:noop"] * 3
    assert Job.objects.filter(pk__in=[j.id for j in others], status=Status.RUNNING).count() == 3


def test_a_full_type_does_not_hold_back_other_types_behind_its_backlog():
    set_rate_limit(type="noop", max_starts=1, period_seconds=60)
    for i in range(300):  # more than the limited claim's window, all ahead in claim order
        enqueue("noop", {"i": i}, priority=10)
    assert types_of(claim(1)) == ["noop"]
    enqueue("sleep")
    assert types_of(claim()) == ["sleep"]


def test_a_queue_limit_counts_every_type_of_the_queue():
    set_rate_limit(queue="default", max_starts=2, period_seconds=60)
    enqueue("noop")
    enqueue("sleep")
    enqueue("noop")
    enqueue("noop", queue="elsewhere")
    assert len(claim(queues=["default"])) == 2
    assert types_of(claim()) == ["noop"]  # the queue elsewhere only
    assert claim() == []


def test_the_window_slides_starts_older_than_the_period_no_longer_count():
    set_rate_limit(type="noop", max_starts=2, period_seconds=10)
    starts_ago("type:noop", 11)  # left the window
    starts_ago("type:noop", 9)  # still in it
    for i in range(3):
        enqueue("noop", {"i": i})
    assert len(claim()) == 1


def test_weights_count_against_the_limit():
    set_rate_limit(type="flaky", max_starts=5, period_seconds=60)
    for i in range(4):
        enqueue("flaky", {"i": i})
    with override_settings(JOB_RATE_WEIGHTS={"flaky": 2}):
        assert len(claim()) == 2  # 2 + 2 <= 5; a third would make 6
    assert sorted(RateStart.objects.values_list("weight", flat=True)) == [2, 2]


def test_a_key_prefix_gives_each_key_its_own_window_and_a_full_key_holds_back_no_other():
    set_rate_limit(key="customer:*", max_starts=2, period_seconds=60)
    for i in range(300):
        enqueue("noop", {"i": i}, concurrency_key="customer:1", concurrency_key_limit=1000,
                priority=10)
    for i in range(3):
        enqueue("noop", {"i": i}, concurrency_key="customer:2", concurrency_key_limit=1000)
    enqueue("noop", concurrency_key="vip:1")  # no rate limit: its concurrency limit only
    assert len(claim(2)) == 2  # customer:1's two
    claimed = claim()
    keys = sorted(Job.objects.get(pk=c.id).concurrency_key for c in claimed)
    assert keys == ["customer:2", "customer:2", "vip:1"]
    assert claim() == []
    assert sorted(RateStart.objects.values_list("scope", flat=True)) == (
        ["key:customer:1"] * 2 + ["key:customer:2"] * 2)


def test_an_exact_key_limit_wins_over_a_prefix():
    set_rate_limit(key="customer:*", max_starts=1, period_seconds=60)
    set_rate_limit(key="customer:42", max_starts=3, period_seconds=60)
    for i in range(5):
        enqueue("noop", {"i": i}, concurrency_key="customer:42", concurrency_key_limit=1000)
    assert len(claim()) == 3


def test_a_declared_limit_holds_and_one_set_at_run_time_replaces_it():
    with override_settings(JOB_RATE_LIMITS=[{"type": "noop", "max_starts": 1,
                                             "period_seconds": 60}]):
        claiming.forget_cached_limits()
        for i in range(4):
            enqueue("noop", {"i": i})
        assert len(claim()) == 1
        set_rate_limit(type="noop", max_starts=3, period_seconds=60)
        assert len(claim()) == 2
        assert remove_rate_limit(type="noop") is True
        assert claim() == []  # the declared limit again: 3 starts >= 1


def test_without_limits_the_claim_writes_no_starts():
    enqueue("noop")
    assert len(claim()) == 1
    assert not RateStart.objects.exists()


# -- what a caller may give -----------------------------------------------------------------

@pytest.mark.parametrize("kwargs, argument", [
    ({"type": "noop", "max_starts": 0, "period_seconds": 1}, "max_starts"),
    ({"type": "noop", "max_starts": 1, "period_seconds": 0}, "period_seconds"),
    ({"type": "noop", "max_starts": 1, "period_seconds": 86401}, "period_seconds"),
    ({"type": "noop", "max_starts": True, "period_seconds": 1}, "max_starts"),
    ({"type": "no*", "max_starts": 1, "period_seconds": 1}, "type"),
    ({"key": "", "max_starts": 1, "period_seconds": 1}, "key"),
    ({"type": "noop", "key": "k", "max_starts": 1, "period_seconds": 1}, "scope"),
    ({"max_starts": 1, "period_seconds": 1}, "scope"),
])
def test_a_bad_limit_is_refused_naming_the_argument(kwargs, argument):
    with pytest.raises(InvalidJobArgument) as error:
        set_rate_limit(**kwargs)
    assert error.value.argument == argument


def test_a_queue_that_does_not_exist_cannot_be_limited():
    with pytest.raises(QueueNotFound):
        set_rate_limit(queue="no-such-queue", max_starts=1, period_seconds=1)


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_shards_a_queue_s_limit_is_written_in_the_queue_s_shard_only(refused_shard):  # noqa: F811
    # `video` is shard_c's (refused): the limit goes there, not to JOB_DATABASE, where the
    # queue has no jobs (and would be refused as not found).
    with pytest.raises(OperationalError):
        set_rate_limit(queue="video", max_starts=1, period_seconds=1)
    with pytest.raises(OperationalError):
        remove_rate_limit(queue="video")
    assert not RateLimit.objects.exists()


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_shards_a_type_s_or_a_key_s_limit_is_written_in_every_database(refused_shard):  # noqa: F811
    # JOB_DATABASE first, then each shard in turn: shard_c refuses, after JOB_DATABASE's.
    for scope in ({"type": "noop"}, {"key": "customer:*"}):
        with pytest.raises(OperationalError):
            set_rate_limit(**scope, max_starts=2, period_seconds=1)
    assert sorted(RateLimit.objects.values_list("kind", "name")) == [
        ("key", "customer:*"), ("type", "noop")]
    with pytest.raises(OperationalError):
        remove_rate_limit(type="noop")
    assert list(RateLimit.objects.values_list("kind", flat=True)) == ["key"]


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_shards_a_queue_s_limit_is_checked_in_the_queue_s_shard(refused_shard):  # noqa: F811
    with pytest.raises(OperationalError):  # shard_c's limits and window: it refuses
        rate_limit(queue="video").check()
    assert rate_limit(type="noop").check().allowed  # the caller's database: JOB_DATABASE


@pytest.mark.parametrize("value", [
    {"type": "noop", "max_starts": 1},
    [{"type": "noop", "queue": "q", "max_starts": 1, "period_seconds": 1}],
    [{"key": "k", "max_starts": 1, "period_seconds": -1}],
])
def test_a_malformed_declaration_is_reported_by_the_check(value):
    from django_pg_jobqueue.conf import rate_limit_list

    assert rate_limit_list(value) is not None


# -- from Python, outside a job -------------------------------------------------------------

def test_try_acquire_counts_until_the_limit_then_says_when_it_frees():
    set_rate_limit(key="api:*", max_starts=2, period_seconds=30)
    limiter = rate_limit("api:acme")
    assert limiter.try_acquire().allowed
    assert limiter.check().allowed  # check counts nothing
    second = limiter.try_acquire()
    assert second.allowed and second.used == 1
    third = limiter.try_acquire()
    assert not third.allowed and third.used == 2 and third.max_starts == 2
    assert 29 < third.retry_in_seconds <= 30
    assert rate_limit("api:other").try_acquire().allowed  # a window of its own


def test_try_acquire_says_when_enough_weight_leaves_the_window():
    set_rate_limit(type="flaky", max_starts=4, period_seconds=10)
    starts_ago("type:flaky", 8, weight=1)  # leaves in 2 s
    starts_ago("type:flaky", 5, weight=2)  # leaves in 5 s
    decision = rate_limit(type="flaky").try_acquire(weight=3)
    assert not decision.allowed and decision.used == 3
    assert 4 < decision.retry_in_seconds <= 5  # both must leave for 3 to fit


def test_acquired_starts_and_the_claim_share_one_window():
    set_rate_limit(key="customer:*", max_starts=2, period_seconds=60)
    assert rate_limit("customer:7").try_acquire().allowed
    for i in range(3):
        enqueue("noop", {"i": i}, concurrency_key="customer:7", concurrency_key_limit=1000)
    assert len(claim()) == 1
    assert not rate_limit("customer:7").try_acquire().allowed


def test_without_a_limit_every_acquisition_is_allowed_and_nothing_is_written():
    decision = rate_limit("nobody").try_acquire(weight=5)
    assert decision.allowed and decision.max_starts is None
    assert not RateStart.objects.exists()


def test_a_weight_that_can_never_fit_is_refused():
    set_rate_limit(type="noop", max_starts=2, period_seconds=1)
    with pytest.raises(InvalidJobArgument) as error:
        rate_limit(type="noop").try_acquire(weight=3)
    assert error.value.argument == "weight"
    with pytest.raises(InvalidJobArgument):
        rate_limit(type="noop").try_acquire(weight=0)


# -- upkeep and metrics ---------------------------------------------------------------------

def test_pruning_keeps_the_starts_of_the_longest_period_and_a_slack_for_late_claims():
    # A claim whose transaction began a while ago (it waited for the limit's lock) still counts
    # from its own start: a start just past the period is kept for it.
    set_rate_limit(type="noop", max_starts=5, period_seconds=60)
    starts_ago("type:noop", 60 + RATE_STARTS_SLACK_SECONDS + 1)
    starts_ago("type:noop", 61)
    starts_ago("type:noop", 30)
    assert prune_rate_starts() == 1
    assert RateStart.objects.count() == 2


def test_the_use_of_each_limit_is_read_for_the_metrics():
    set_rate_limit(type="noop", max_starts=5, period_seconds=60)
    set_rate_limit(key="customer:*", max_starts=2, period_seconds=10)
    starts_ago("type:noop", 1, weight=2)
    starts_ago("key:customer:1", 1)
    starts_ago("key:customer:1", 11)  # out of its window
    assert snapshot().rate_use == [("key:customer:1", "customer:*", 2, 10.0, 1),
                                   ("type:noop", "noop", 5, 60.0, 2)]


def test_a_keys_use_counts_against_its_exact_limit_before_a_prefix():
    set_rate_limit(key="customer:*", max_starts=2, period_seconds=10)
    set_rate_limit(key="customer:vip", max_starts=9, period_seconds=10)
    starts_ago("key:customer:vip", 1)
    starts_ago("key:customer:7", 1)
    assert [(r.scope, r.limit) for r in snapshot().rate_use] == [
        ("key:customer:7", "customer:*"), ("key:customer:vip", "customer:vip")]
    shown = {r["name"]: r for r in rate_limits()}
    assert shown["customer:*"]["keys"] == [{"key": "customer:7", "used": 1}]
    assert shown["customer:vip"]["keys"] == [{"key": "customer:vip", "used": 1}]


@pytest.mark.parametrize("changes, constraint", [
    ({"max_starts": 0}, "rate_limit_max_starts_positive"),
    ({"period_seconds": 0}, "rate_limit_period_within_bounds"),
    ({"period_seconds": 86401}, "rate_limit_period_within_bounds"),
    ({"kind": "job"}, "rate_limit_kind_known"),
])
def test_the_database_refuses_an_impossible_limit(changes, constraint):
    from django.db import IntegrityError, transaction

    from django_pg_jobqueue.models import RateLimit

    set_rate_limit(type="noop", max_starts=1, period_seconds=1)
    with pytest.raises(IntegrityError) as error, transaction.atomic():
        RateLimit.objects.filter(kind="type", name="noop").update(**changes)
    assert constraint in str(error.value)


def test_the_limits_in_force_say_which_were_set_and_which_declared():
    with override_settings(JOB_RATE_LIMITS=[{"type": "noop", "max_starts": 1, "period_seconds": 2},
                                            {"queue": "default", "max_starts": 5,
                                             "period_seconds": 1}]):
        set_rate_limit(type="noop", max_starts=3, period_seconds=1)
        assert rate_limits() == [
            {"kind": "queue", "name": "default", "max_starts": 5, "period_seconds": 1.0,
             "source": "declared", "used": 0},
            {"kind": "type", "name": "noop", "max_starts": 3, "period_seconds": 1.0,
             "source": "set", "used": 0}]


# -- why a job waits ------------------------------------------------------------------------

def test_a_queued_job_says_which_rate_limit_holds_it_back_and_when_it_fits():
    set_rate_limit(type="noop", max_starts=2, period_seconds=60)
    set_rate_limit(queue="default", max_starts=100, period_seconds=60)
    starts_ago("type:noop", 50)
    starts_ago("type:noop", 10)
    job = enqueue("noop")
    why = job_detail(job.id).job.rate_limit_wait
    # The older start leaves the window 10 s from now; the queue's limit has room.
    assert why.startswith("rate limit of type noop: 2 of 2 started in the last 60 s; room for it in ")
    assert 9.0 <= float(why.rsplit(" ", 2)[1]) <= 10.0
    assert "queue" not in why


def test_a_keys_weighted_job_waits_until_enough_starts_leave():
    set_rate_limit(key="customer:*", max_starts=3, period_seconds=60)
    starts_ago("key:customer:42", 55)
    starts_ago("key:customer:42", 30)
    starts_ago("key:customer:7", 30, weight=3)  # another key's window
    with override_settings(JOB_RATE_WEIGHTS={"noop": 2}):
        job = enqueue("noop", concurrency_key="customer:42", concurrency_key_limit=100)
        why = job_detail(job.id).job.rate_limit_wait
    # 2 used + 2 > 3: the start 55 s ago must leave (in 5 s) for 1 + 2 to fit.
    assert why.startswith("rate limit of key customer:42: 2 of 3 started in the last 60 s; room "
                          "for it in ")
    assert 4.0 <= float(why.rsplit(" ", 2)[1]) <= 5.0


def test_no_rate_limit_wait_with_room_when_not_due_or_not_queued():
    set_rate_limit(type="noop", max_starts=1, period_seconds=60)
    assert job_detail(enqueue("noop").id).job.rate_limit_wait == ""  # room for it
    starts_ago("type:noop", 1)
    later = enqueue("noop", delay_seconds=30)
    assert job_detail(later.id).job.rate_limit_wait == ""  # waits for its time first
    Job.objects.filter(pk=later.pk).update(status=Status.SUCCEEDED, finished_at=now())
    assert job_detail(later.id).job.rate_limit_wait == ""
