"""Hostile enqueue arguments, property-based: whatever is drawn, enqueue refuses it or stores it.

Hypothesis draws enqueue() and enqueue_many() arguments mixing ordinary values with hostile
ones: payloads with NUL characters, lone surrogates, NaN and infinities, non-string keys,
huge or deeply nested; run_at as strings ("infinity", "tomorrow"), naive or extreme
datetimes; negative, infinite or huge delays; zero, negative, fractional or huge timeouts
and max_attempts; bad queue names and idempotency keys. Each call must either

- be refused with a ValueError/TypeError (an InvalidJobArgument) whose `argument` is one of
  the arguments and whose message names it, with nothing written (for enqueue_many: no job
  of the batch); or
- store the job as given (the payload as its JSON, the bounds respected), and the stored job
  must then run: claimed, completed and succeeded through the services.

Short by default (JOB_PROPERTY_EXAMPLES, 40 examples per test); each example runs in a
savepoint that is rolled back, so examples do not see each other's jobs.
"""
import json
import math
import os
from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_pg_jobqueue import services, states
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.models import Job, JobEvent

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("JOB_PROPERTY_EXAMPLES", "40"))
ARGUMENTS = {"type", "payload", "priority", "queue", "run_at", "delay_seconds",
             "idempotency_key", "max_attempts", "timeout_seconds", "jobs"}
WORKER = "property-test"

# Any code point, surrogates and NUL included.
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
hostile_text = st.one_of(
    st.text(any_char, max_size=12),
    st.sampled_from(["", "a\x00b", "\ud800", "x\udfffy", "😀", "\\u0000", "é", " "]),
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), hostile_text,
)
keys = st.one_of(hostile_text, st.integers(-3, 3), st.none(), st.booleans(), st.just((1, 2)))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)


def nested(depth: int) -> dict:
    node: dict = {}
    root = node
    for _ in range(depth):
        node["d"] = {}
        node = node["d"]
    return root


payloads = st.one_of(
    st.none(),
    st.dictionaries(keys, json_values, max_size=5),
    st.dictionaries(st.text(max_size=5), json_values, max_size=5),  # mostly storable
    st.integers(states.MAX_PAYLOAD_DEPTH - 2, states.MAX_PAYLOAD_DEPTH + 2).map(nested),
    st.sampled_from([65_000, 65_536, 70_000, 200_000]).map(lambda n: {"big": "x" * n}),
    json_values,  # a list, a str ... as the payload itself
    st.just({"when": datetime(2030, 1, 1)}), st.just({"set": {1, 2}}),
)
aware = st.datetimes(timezones=st.timezones())  # years 1 to 9999, any offset
run_ats = st.one_of(
    st.none(), aware,
    st.datetimes(),  # naive
    st.sampled_from(["infinity", "-infinity", "tomorrow", "now", "2030-01-01T00:00:00Z", ""]),
    st.integers(), st.dates(),
)
delays = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**12), 10**12), st.integers(0, states.MAX_DELAY_SECONDS),
    st.timedeltas(), st.sampled_from(["5", True, 0, timedelta(0)]),
)
small_ints = st.one_of(
    st.none(), st.integers(-5, 5), st.integers(-(2**40), 2**40),
    st.sampled_from([0, 1, 2, states.MAX_ATTEMPTS_LIMIT, states.MAX_ATTEMPTS_LIMIT + 1,
                     states.MAX_TIMEOUT_SECONDS, states.MAX_TIMEOUT_SECONDS + 1, 2**31]),
    st.floats(allow_nan=True), st.booleans(), st.just("3"),
)
priorities = st.one_of(st.none(), st.integers(-150, 150), st.booleans(), st.floats(-200, 200),
                       st.just("5"))
queues = st.one_of(
    st.none(), st.sampled_from(["default", "mail.high:eu-1_a", "x" * 100, "x" * 101,
                                "bad queue!/..", "", "a\x00b", "é"]),
    st.text(any_char, max_size=8), st.integers(),
)
idempotency_keys = st.one_of(
    st.none(), st.text(any_char, max_size=10), st.sampled_from(["", "  ", "k" * 255, "k" * 256]),
    st.integers(),
)
job_types = st.one_of(st.just("noop"), st.just("noop"), st.just("no-such-type"), st.none(),
                      st.integers())


@st.composite
def enqueue_args(draw) -> dict:
    args = {"type": draw(job_types), "payload": draw(payloads)}
    for name, strategy in [("priority", priorities), ("queue", queues), ("run_at", run_ats),
                           ("delay_seconds", delays), ("idempotency_key", idempotency_keys),
                           ("max_attempts", small_ints), ("timeout_seconds", small_ints)]:
        if draw(st.booleans()):
            args[name] = draw(strategy)
    return args


def counts() -> tuple[int, int]:
    return Job.objects.count(), JobEvent.objects.count()


def assert_refusal(error: BaseException, index: int | None = None) -> None:
    assert isinstance(error, ValueError | TypeError), repr(error)
    assert isinstance(error, InvalidJobArgument), repr(error)
    assert error.argument in ARGUMENTS | {"colour"}, error.argument
    assert error.argument in str(error), str(error)
    if index is not None:
        assert error.index == index and f"jobs[{index}]" in str(error)


def same_json(a, b) -> bool:
    """Equal as JSON values. jsonb keeps numbers as PostgreSQL numerics, so a float comes
    back as the nearest float or, when it has no fraction (1e300), as an int of that value."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
            and not isinstance(b, bool)):
        return a == b or math.isclose(a, b, rel_tol=1e-15)
    return a == b and type(a) is type(b)


def assert_stored_as_given(job: Job, args: dict) -> None:
    # Reading the row back is itself a check: a timestamp PostgreSQL holds but Python cannot
    # (infinity, year 0) would raise here, as it would on every page that lists the job.
    row = Job.objects.get(pk=job.pk)
    payload = args.get("payload") or {}
    # The payload is stored as the JSON it encodes to, and the returned job says the same.
    assert same_json(row.payload, json.loads(json.dumps(payload)))
    assert same_json(job.payload, row.payload)
    assert len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()) <= 65536
    assert states.PRIORITY_MIN <= row.priority <= states.PRIORITY_MAX
    assert states.QUEUE_NAME_RE.fullmatch(row.queue) and len(row.queue) <= 100
    assert 1 <= row.max_attempts <= states.MAX_ATTEMPTS_LIMIT
    assert row.timeout_seconds is None or 1 <= row.timeout_seconds <= states.MAX_TIMEOUT_SECONDS
    for name, column in [("priority", "priority"), ("queue", "queue"),
                         ("max_attempts", "max_attempts"), ("timeout_seconds", "timeout_seconds"),
                         ("idempotency_key", "idempotency_key")]:
        if args.get(name) is not None:
            assert getattr(row, column) == args[name], name
    if args.get("run_at") is not None:
        assert row.available_at == args["run_at"]
    delay = args.get("delay_seconds")
    if delay is not None and args.get("run_at") is None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        assert abs((row.available_at - row.created_at).total_seconds() - seconds) < 1e-3
    assert JobEvent.objects.filter(job_id=job.pk, kind="created").count() == 1


def assert_runs(job: Job) -> None:
    """Claimable (made due now, whatever its run_at) and completed through the services."""
    with connection.cursor() as cur:
        cur.execute("UPDATE jobs SET available_at = now() WHERE id = %s", [job.pk])
    [claimed] = services.claim(worker_ids=[WORKER], job_ids=[job.pk])
    assert same_json(claimed.payload, job.payload)
    # The payload itself as the result: whatever the payload limits let in, a handler that
    # returns it can store (wrapping it would add a level past MAX_JSON_DEPTH).
    status = services.complete(claimed.id, claimed.lease_token, worker_id=WORKER,
                               result=claimed.payload)
    assert status == "succeeded"
    assert Job.objects.get(pk=job.pk).status == "succeeded"


def in_savepoint(check):
    with transaction.atomic():
        check()
        transaction.set_rollback(True)


COMMON = dict(max_examples=EXAMPLES, deadline=None, derandomize=False,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(**COMMON)
@given(args=enqueue_args())
def test_enqueue_refuses_hostile_arguments_cleanly_or_stores_a_runnable_job(args):
    def check():
        before = counts()
        kwargs = {k: v for k, v in args.items() if k not in ("type", "payload")}
        try:
            job = services.enqueue(args["type"], args["payload"], **kwargs)
        except Exception as error:
            assert_refusal(error)
            assert counts() == before
            return
        assert_stored_as_given(job, args)
        assert_runs(job)

    in_savepoint(check)


@settings(**COMMON)
@given(batch=st.lists(st.one_of(enqueue_args(), enqueue_args().map(lambda a: {**a, "colour": 1}),
                                st.just("noop")), min_size=1, max_size=4),
       good=st.integers(0, 3))
def test_enqueue_many_is_all_or_nothing_under_hostile_items(batch, good):
    # Some batches are all ordinary jobs, so that the stored branch is exercised as well.
    items = [{"type": "noop", "payload": {"n": i}} for i in range(good)] + batch
    seen_keys = set()  # a key repeated within a batch replays or conflicts: tested elsewhere
    for item in items:
        if isinstance(item, dict) and "idempotency_key" in item:
            if item["idempotency_key"] in seen_keys:
                del item["idempotency_key"]
            elif isinstance(item["idempotency_key"], str):
                seen_keys.add(item["idempotency_key"])

    def check():
        before = counts()
        try:
            jobs = services.enqueue_many(items)
        except Exception as error:
            assert_refusal(error, index=getattr(error, "index", None))
            assert error.index is not None and error.index >= good
            assert counts() == before
            return
        assert len(jobs) == len(items) and counts()[0] == before[0] + len(items)
        for job, item in zip(jobs, items, strict=True):
            assert_stored_as_given(job, item)
            assert_runs(job)

    in_savepoint(check)


def test_the_strategies_reach_both_outcomes():
    """The properties above are only worth something if examples are both refused and
    stored: check that the argument strategy produces each, without the database."""
    from django_pg_jobqueue.services.preparing import prepare as _prepare

    outcomes = set()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(args=enqueue_args())
    def sample(args):
        kwargs = {k: v for k, v in args.items() if k not in ("type", "payload")}
        try:
            _prepare(args["type"], args["payload"], **kwargs)
            outcomes.add("stored")
        except InvalidJobArgument as error:
            outcomes.add(error.argument)

    sample()
    assert "stored" in outcomes
    assert {"type", "payload", "run_at", "delay_seconds", "queue", "priority"} <= outcomes, outcomes
