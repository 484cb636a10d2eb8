"""One validation of a job's arguments, shared with the API: `enqueue` and -------
`enqueue_many` refuse what the table must never hold, with an `InvalidJobArgument` (a
ValueError; TypeError too for a value of the wrong type) naming the argument, and write
nothing. What they accept is stored as given and runs."""
import math
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from django_pg_jobqueue import states
from django_pg_jobqueue.exceptions import InvalidJobArgument, JobPayloadTooLarge, UnknownJobType
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services import enqueue, enqueue_many

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int]:
    return Job.objects.count(), JobEvent.objects.count()


def refused(argument: str, *args, error=InvalidJobArgument, **kwargs) -> InvalidJobArgument:
    """enqueue(*args, **kwargs) raises `error` naming `argument`, and writes nothing."""
    before = counts()
    with pytest.raises(error) as caught:
        enqueue(*args, **kwargs)
    assert caught.value.argument == argument
    assert argument in str(caught.value)
    assert counts() == before
    return caught.value


# -- PostgreSQL's 'infinity' never reaches the table ------------------------------------------

@pytest.mark.parametrize("run_at", ["infinity", "-infinity", "tomorrow", "2030-01-01T00:00:00Z"])
def test_run_at_as_a_string_is_refused_and_nothing_is_committed(run_at):
    error = refused("run_at", "noop", run_at=run_at, error=TypeError)
    assert isinstance(error, ValueError)  # InvalidJobArgument either way
    assert not Job.objects.filter(available_at__year__gt=9999).exists()


def test_run_at_as_a_string_in_enqueue_many_writes_no_job_of_the_batch():
    before = counts()
    with pytest.raises(InvalidJobArgument) as caught:
        enqueue_many([{"type": "noop"}, {"type": "noop", "run_at": "infinity"}])
    assert caught.value.argument == "run_at" and caught.value.index == 1
    assert "jobs[1]" in str(caught.value)
    assert counts() == before


def test_a_naive_run_at_is_refused():
    refused("run_at", "noop", run_at=datetime(2030, 1, 1))


def test_an_aware_run_at_is_stored_as_that_instant():
    at = datetime(2031, 5, 6, 7, 8, 9, tzinfo=dt_timezone(timedelta(hours=-5)))
    job = enqueue("noop", run_at=at)
    assert job.available_at == at
    assert Job.objects.get(pk=job.pk).available_at == at


# -- enqueue() accepts nothing the API refuses ------------------------------------------------

@pytest.mark.parametrize("queue", ["bad queue!/..", "", "x" * 101, "é", "a\x00b"])
def test_a_queue_name_outside_the_pattern_is_refused(queue):
    refused("queue", "noop", queue=queue)


def test_a_queue_name_of_the_wrong_type_is_a_type_error():
    refused("queue", "noop", queue=7, error=TypeError)


def test_a_queue_name_inside_the_pattern_is_accepted():
    assert enqueue("noop", queue="mail.high:eu-1_a").queue == "mail.high:eu-1_a"
    assert states.QUEUE_NAME_RE.fullmatch("x" * states.MAX_QUEUE_NAME_LENGTH)


@override_settings(JOB_MAX_PAYLOAD_BYTES=1000)
def test_a_payload_over_job_max_payload_bytes_is_refused():
    error = refused("payload", "noop", {"text": "x" * 1000}, error=JobPayloadTooLarge)
    assert error.limit == 1000 and error.size > 1000
    assert "JOB_MAX_PAYLOAD_BYTES" in str(error)
    enqueue("noop", {"text": "x" * 900})  # under the limit: fine


def test_the_payload_limit_applies_to_enqueue_many_too():
    with override_settings(JOB_MAX_PAYLOAD_BYTES=100):
        before = counts()
        with pytest.raises(JobPayloadTooLarge):
            enqueue_many([{"type": "noop"}] * 3 + [{"type": "noop", "payload": {"t": "x" * 200}}])
        assert counts() == before


@pytest.mark.parametrize("delay", [-5, -0.001, math.nan, math.inf, -math.inf,
                                   timedelta(seconds=-1), states.MAX_DELAY_SECONDS + 1,
                                   timedelta(days=10**6)])
def test_a_negative_infinite_or_huge_delay_is_refused(delay):
    refused("delay_seconds", "noop", delay_seconds=delay)


@pytest.mark.parametrize("delay", ["5", True, [5]])
def test_a_delay_of_the_wrong_type_is_a_type_error(delay):
    refused("delay_seconds", "noop", delay_seconds=delay, error=TypeError)


def test_a_delay_within_bounds_defers_the_job():
    job = enqueue("noop", delay_seconds=timedelta(hours=1))
    assert job.available_at - job.created_at == timedelta(hours=1)
    assert enqueue("noop", delay_seconds=states.MAX_DELAY_SECONDS).available_at > timezone.now()


@pytest.mark.parametrize("timeout", [0, -1, states.MAX_TIMEOUT_SECONDS + 1])
def test_a_zero_negative_or_huge_timeout_is_refused(timeout):
    refused("timeout_seconds", "noop", timeout_seconds=timeout)


@pytest.mark.parametrize("timeout", [1.5, "30", True])
def test_a_timeout_that_is_not_a_whole_number_is_a_type_error(timeout):
    refused("timeout_seconds", "noop", timeout_seconds=timeout, error=TypeError)


@pytest.mark.parametrize("max_attempts", [0, -3, states.MAX_ATTEMPTS_LIMIT + 1])
def test_max_attempts_out_of_bounds_is_refused(max_attempts):
    refused("max_attempts", "noop", max_attempts=max_attempts)


@pytest.mark.parametrize("max_attempts", [2.0, "3", False])
def test_max_attempts_that_is_not_a_whole_number_is_a_type_error(max_attempts):
    refused("max_attempts", "noop", max_attempts=max_attempts, error=TypeError)


@pytest.mark.parametrize("priority", [states.PRIORITY_MIN - 1, states.PRIORITY_MAX + 1, 10**6])
def test_priority_outside_the_named_bounds_is_refused(priority):
    error = refused("priority", "noop", priority=priority)
    assert f"{states.PRIORITY_MIN} and {states.PRIORITY_MAX}" in str(error)


@pytest.mark.parametrize("priority", [True, 1.0, "5"])
def test_priority_that_is_not_an_int_is_a_type_error(priority):
    refused("priority", "noop", priority=priority, error=TypeError)


def test_priority_bounds_are_django_tasks_bounds():
    from django_pg_jobqueue.tasks_compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY

    assert (states.PRIORITY_MIN, states.PRIORITY_MAX) == (TASK_MIN_PRIORITY, TASK_MAX_PRIORITY)
    assert enqueue("noop", priority=states.PRIORITY_MAX).priority == states.PRIORITY_MAX
    assert enqueue("noop", priority=states.PRIORITY_MIN).priority == states.PRIORITY_MIN


@pytest.mark.parametrize("key", ["", "   ", "k" * (states.MAX_IDEMPOTENCY_KEY_LENGTH + 1),
                                 "a\x00b", "\ud800"])
def test_a_blank_long_or_unstorable_idempotency_key_is_refused(key):
    refused("idempotency_key", "noop", idempotency_key=key)


def test_an_idempotency_key_of_the_wrong_type_is_a_type_error():
    refused("idempotency_key", "noop", idempotency_key=12, error=TypeError)


# -- payloads PostgreSQL's jsonb refuses, refused before the database sees them ---------------

@pytest.mark.parametrize("payload, where", [
    ({"text": "a\x00b"}, "payload['text']"),
    ({"a\x00": 1}, "payload"),
    ({"list": [1, {"deep": "\x00"}]}, "payload['list'][1]['deep']"),
    ({"text": "\ud800"}, "payload['text']"),
    ({"\udfff": "x"}, "payload"),
])
def test_nul_and_lone_surrogates_in_a_payload_are_refused_naming_where(payload, where):
    error = refused("payload", "noop", payload)
    assert where in str(error)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_in_a_payload_are_refused(value):
    error = refused("payload", "noop", {"x": [value]})
    assert "payload['x'][0]" in str(error)


@pytest.mark.parametrize("payload", [{1: "a"}, {(1, 2): "a"}, {None: 1}])
def test_payload_keys_that_are_not_strings_are_a_type_error(payload):
    refused("payload", "noop", payload, error=TypeError)


@pytest.mark.parametrize("payload", [[1, 2], "text", 5, {"when": datetime(2030, 1, 1)},
                                     {"s": {1, 2}}, {"b": b"bytes"}, {"o": object()}])
def test_a_payload_that_is_not_a_json_object_is_a_type_error(payload):
    refused("payload", "noop", payload, error=TypeError)


def test_a_payload_nested_too_deep_or_referring_to_itself_is_refused():
    deep: dict = {}
    node = deep
    for _ in range(states.MAX_PAYLOAD_DEPTH + 1):
        node["d"] = {}
        node = node["d"]
    refused("payload", "noop", deep)
    circular: dict = {}
    circular["self"] = circular
    refused("payload", "noop", circular)


def test_a_payload_is_stored_as_the_json_it_encodes_to():
    payload = {"t": (1, 2), "é": "😀 ok", "n": None, "f": -0.5, "big": 10**30}
    job = enqueue("noop", payload)
    stored = Job.objects.get(pk=job.pk).payload
    assert stored == {"t": [1, 2], "é": "😀 ok", "n": None, "f": -0.5, "big": 10**30}
    assert job.payload == stored  # the returned job is the row as stored


def test_an_unregistered_or_non_string_type_is_refused_naming_type():
    for job_type, error in [("no-such-type", UnknownJobType), (None, TypeError), (["noop"], TypeError)]:
        refused("type", job_type, error=error)
    assert issubclass(UnknownJobType, ValueError)


def test_run_at_and_delay_together_are_refused():
    refused("delay_seconds", "noop", run_at=timezone.now(), delay_seconds=5)


# -- enqueue_many: all or nothing -------------------------------------------------------------

def test_enqueue_many_refuses_a_malformed_item_and_writes_none():
    good = {"type": "noop", "payload": {"ok": 1}}
    for bad, argument in [
        ({"type": "noop", "payload": {"x": "\x00"}}, "payload"),
        ({"type": "noop", "priority": 500}, "priority"),
        ({"type": "noop", "colour": "red"}, "colour"),
        ({"payload": {}}, "type"),
        ("noop", "jobs"),
    ]:
        before = counts()
        with pytest.raises(InvalidJobArgument) as caught:
            enqueue_many([good, good, bad])
        assert caught.value.argument == argument, bad
        assert caught.value.index == 2 and "jobs[2]" in str(caught.value)
        assert counts() == before


def test_a_refused_enqueue_inside_a_transaction_leaves_the_callers_work_intact():
    with transaction.atomic():
        kept = enqueue("noop")
        with pytest.raises(InvalidJobArgument):
            enqueue("noop", delay_seconds=-1)
        assert Job.objects.filter(pk=kept.pk).exists()
        with connection.cursor() as cur:  # the transaction is still usable
            cur.execute("SELECT 1")


def test_accepted_hostile_looking_input_runs(db):
    from django_pg_jobqueue.testing import drain

    job = enqueue("noop", {"text": "back\\slash \\u0000 not a NUL", "ctl": "\x01\x1f"},
                  queue="q.1", priority=-100, max_attempts=1, timeout_seconds=1)
    assert Job.objects.get(pk=job.pk).payload["text"] == "back\\slash \\u0000 not a NUL"
    assert drain(queues=["q.1"]).succeeded == 1
    assert Job.objects.get(pk=job.pk).status == "succeeded"


def test_an_instant_outside_years_1_to_9999_in_utc_is_refused():
    # PostgreSQL would store it, but it could not be read back into a Python datetime.
    refused("run_at", "noop", run_at=datetime(1, 1, 1, tzinfo=dt_timezone(timedelta(hours=14))))
    refused("run_at", "noop",
            run_at=datetime(9999, 12, 31, 23, tzinfo=dt_timezone(timedelta(hours=-14))))


def test_a_key_given_twice_in_one_batch_replays_or_conflicts():
    from django_pg_jobqueue.exceptions import IdempotencyConflict

    first, again = enqueue_many([{"type": "noop", "idempotency_key": "twice"},
                                 {"type": "noop", "idempotency_key": "twice"}])
    assert first.pk == again.pk and Job.objects.filter(idempotency_key="twice").count() == 1
    before = counts()
    with pytest.raises(IdempotencyConflict):
        enqueue_many([{"type": "noop", "idempotency_key": "other"},
                      {"type": "noop", "idempotency_key": "other", "priority": 5}])
    assert counts() == before
