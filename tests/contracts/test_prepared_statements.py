"""The hot-path statements (claim, complete, enqueue) run as server-side prepared statements,
planned once per connection; JOB_PREPARED_STATEMENTS=false turns that off for poolers."""
import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.services.lifecycle import Completion, complete_many

pytestmark = pytest.mark.django_db(transaction=True)


def prepared_statements() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        return [r[0] for r in cur.fetchall()]


def test_claim_complete_and_enqueue_are_prepared_once_per_connection():
    for _ in range(3):
        services.enqueue("noop", {})
    for _ in range(3):
        (job,) = services.claim(worker_ids=["w1"])
        complete_many([Completion(job.id, job.lease_token, "w1", {"ok": True}, job.type,
                                  job.attempt)])
    statements = prepared_statements()
    assert sum("FOR UPDATE SKIP LOCKED" in s for s in statements) == 1
    assert sum("INSERT INTO jobs" in s for s in statements) == 1
    assert sum("status = CASE WHEN j.cancel_requested_at IS NULL THEN 'succeeded'" in s
               for s in statements) == 1


def test_a_batch_of_one_shape_is_prepared_once_whatever_its_values():
    # The columns a batch sends are its shape: these three send the same ones (type, queue,
    # payload, priority, max_attempts, delay), whatever their sizes and values.
    for size, delay in ((3, 1.0), (50, 2.5), (7, 600.0)):
        services.enqueue_many([{"type": "noop", "payload": {"i": i}, "priority": i % 5,
                                "delay_seconds": delay} for i in range(size)])
    assert sum("INSERT INTO jobs" in s and "WITH ORDINALITY" in s
               for s in prepared_statements()) == 1


def test_the_setting_turns_preparing_off(settings):
    settings.JOB_PREPARED_STATEMENTS = False
    connection.close()
    services.enqueue("noop", {})
    (job,) = services.claim(worker_ids=["w1"])
    assert job.type == "noop"
    assert prepared_statements() == []
