"""What an enqueue costs in round trips to the database, counted on the wire (libpq's protocol
trace of the connection): a plain `enqueue`, with any option but a key or a dependency, is one
statement and one round trip, whatever goes through Django's cursor or around it; the paths
that take more take the number docs/explanation/performance.md states, for the reason it gives.

Counted on a warm connection (each statement already prepared on it, as in a process that has
enqueued before) and outside any transaction of the caller's: what a view or a task pays."""
import contextlib
import tempfile
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from django_pg_jobqueue import services

pytestmark = pytest.mark.django_db(transaction=True)


@contextlib.contextmanager
def wire():
    """The messages the client sends on the queue's connection meanwhile: `trips` are the round
    trips (each Sync of the extended protocol, each simple Query, waits for the server's
    ReadyForQuery), `parses` the statements prepared."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    seen = {"trips": 0, "parses": 0}
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield seen
        finally:
            pgconn.untrace()
            trace.seek(0)
            sent = [line.split("\t")[2].strip() for line in trace if line.startswith("F\t")]
    seen["trips"] = sum(message in ("Sync", "Query") for message in sent)
    seen["parses"] = sent.count("Parse")


def trips(call) -> int:
    """Round trips of `call()` run a second time, the first having prepared its statements."""
    call()
    with wire() as seen:
        call()
    return seen["trips"]


SOON = timedelta(hours=1)


# Each enqueue a producer writes most: one statement, the job, its `created` event, its
# search text and its NOTIFY, in one round trip.
@pytest.mark.parametrize("options", [
    {},
    {"priority": 5, "queue": "reports", "max_attempts": 4, "timeout_seconds": 30},
    {"delay_seconds": 30},
    {"run_at": "soon"},
    {"retry_policy": {"delays_seconds": [1, 5]}},
    {"concurrency_key": "customer:1", "concurrency_key_limit": 2},
    {"expires_in_seconds": 3600},
], ids=lambda options: ",".join(options) or "plain")
def test_an_enqueue_without_a_key_or_a_dependency_is_one_round_trip(options):
    if options.get("run_at") == "soon":
        options = {"run_at": timezone.now() + SOON}
    assert trips(lambda: services.enqueue("noop", {"n": 1}, **options)) == 1


def test_without_prepared_statements_an_enqueue_is_still_one_round_trip(settings):
    settings.JOB_PREPARED_STATEMENTS = False  # through Django's cursor, its values inlined
    assert trips(lambda: services.enqueue("noop", {"n": 1}, delay_seconds=5)) == 1
    assert trips(lambda: services.enqueue_many([{"type": "noop"}] * 10)) == 1


def test_enqueue_many_without_keys_is_one_round_trip():
    batch = [{"type": "noop", "payload": {"i": i}, "delay_seconds": i} for i in range(100)]
    assert trips(lambda: services.enqueue_many(batch)) == 1


def test_a_new_key_is_one_round_trip_and_a_replay_two():
    counter = iter(range(100))
    assert trips(lambda: services.enqueue("noop", idempotency_key=f"k{next(counter)}")) == 1
    assert trips(lambda: services.enqueue("noop", unique={"key": f"u{next(counter)}"})) == 1
    # The insert inserts nothing; then the job that holds the key is read.
    assert trips(lambda: services.enqueue("noop", idempotency_key="k0")) == 2
    assert trips(lambda: services.enqueue("noop", unique={"key": "u1"})) == 2


def test_a_key_with_a_period_first_releases_the_holders_that_no_longer_count(settings):
    # One statement before the insert frees the key from jobs past their period or TTL.
    counter = iter(range(100))
    assert trips(lambda: services.enqueue(
        "noop", throttle={"key": f"t{next(counter)}", "period_seconds": 60})) == 2
    settings.JOB_IDEMPOTENCY_KEY_TTL_SECONDS = 3600
    assert trips(lambda: services.enqueue("noop", idempotency_key=f"k{next(counter)}")) == 2


def test_a_debounced_enqueue_is_one_round_trip_and_two_when_it_updates_the_pending_job():
    counter = iter(range(100))
    assert trips(lambda: services.enqueue(
        "noop", debounce={"key": f"d{next(counter)}", "period_seconds": 60})) == 1
    # The pending job is updated in the same statement, then read back whole.
    assert trips(lambda: services.enqueue(
        "noop", debounce={"key": "d0", "period_seconds": 60})) == 2


def test_a_keyed_batch_is_its_statement_in_a_transaction():
    counter = iter(range(1000))

    def batch():
        return services.enqueue_many([{"type": "noop", "idempotency_key": f"b{next(counter)}"}
                                      for _ in range(10)])
    # BEGIN, the insert, COMMIT: a key found held afterwards undoes the whole batch.
    assert trips(batch) == 3


def test_a_dependent_job_waits_in_the_transaction_that_creates_it():
    first = services.enqueue("noop")
    # BEGIN, the insert, its edges written (the job waiting), the jobs it names locked, the
    # job settled (one that had already finished lets it run), COMMIT.
    assert trips(lambda: services.enqueue("noop", after=[first.id])) == 6


def test_a_connection_prepares_the_enqueue_once_then_sends_it_alone():
    connection.close()
    connection.ensure_connection()
    with wire() as first:
        services.enqueue("noop")
    with wire() as then:
        services.enqueue("noop")
    # The first enqueue on a connection prepares its statement (Parse, then its execution).
    assert (first["parses"], first["trips"]) == (1, 2)
    assert (then["parses"], then["trips"]) == (0, 1)
