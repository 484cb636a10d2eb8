"""What shards by queue cost the hot path: nothing with JOB_SHARDS empty (the same statements
for an enqueue, a batch and a claim as before shards existed), and nothing more for a queue
JOB_DATABASE keeps when shards are set. Every statement counts: those the ORM and Django's
cursors run (CaptureQueriesContext) and the prepared ones `db.fetch_all` runs beside them."""
from contextlib import contextmanager
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_pg_jobqueue import db, enqueue, enqueue_many, services, shards
from django_pg_jobqueue.services import claiming

ROUTER = "django_pg_jobqueue.routers.JobQueueRouter"
pytestmark = pytest.mark.django_db


@contextmanager
def statements():
    """Every statement the block runs on the queue's database, in order (their SQL)."""
    prepared: list[str] = []
    real = db.fetch_all

    def counting(statement, params):
        prepared.append(statement)
        return real(statement, params)

    with mock.patch.object(db, "fetch_all", counting), CaptureQueriesContext(connection) as orm:
        yield lambda: prepared + [q["sql"] for q in orm.captured_queries]


def hot_path() -> list[int]:
    """Statements of: one enqueue, a batch of three, one claim of them all."""
    counts = []
    with statements() as ran:
        enqueue("noop", queue="billing")
    counts.append(len(ran()))
    with statements() as ran:
        enqueue_many([{"type": "noop", "queue": "billing"}] * 3)
    counts.append(len(ran()))
    claiming.note_keyed_jobs(False)  # as the once-a-second probe found: none waits
    # The probes (queue and rate limits, keyed jobs) run at most once a second: read now,
    # and kept for the claim, so that no count has them.
    with mock.patch.object(claiming, "_LIMITS_TTL", 0):
        claiming.queue_limits()
    with statements() as ran, mock.patch.object(claiming, "_LIMITS_TTL", 3600):
        assert len(services.claim(worker_ids=[f"w{i}" for i in range(4)])) == 4
    counts.append(len(ran()))
    return counts


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_shards_add_no_statement_to_enqueue_or_claim(settings):
    assert not getattr(settings, "JOB_SHARDS", {})
    with mock.patch.object(shards, "_table", side_effect=AssertionError("looked up")):
        without = hot_path()  # JOB_SHARDS empty: the routing is not even consulted
    # An enqueue and a batch: one statement each. A claim: the planner's settings, the claim,
    # the settings restored, and the savepoint's two round trips of a claim inside the
    # test's transaction.
    assert without == [1, 1, 5]
    # With shards set, a queue JOB_DATABASE keeps costs the same statements.
    settings.DATABASES = {**settings.DATABASES, "shard_b": dict(settings.DATABASES["default"])}
    settings.DATABASE_ROUTERS = [ROUTER]
    settings.JOB_SHARDS = {"shard_b": {"number": 1, "queues": ["emails"]}}
    assert shards.alias_for_queue("billing") == "default"
    assert hot_path() == without
