"""The NOTIFY an enqueue sends: at commit only, one per queue the jobs went to (a batch of a
thousand jobs into one queue wakes the workers once, as PostgreSQL would fold it anyway)."""
import psycopg
import pytest
from django.db import connection, transaction
from django.test import override_settings

from django_pg_jobqueue import services, sql

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listener():
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f"LISTEN {sql.NOTIFY_CHANNEL}")

        def received() -> list[str]:
            return sorted(n.payload for n in conn.notifies(timeout=0.5, stop_after=None))

        yield received


def test_a_batch_notifies_once_per_queue_at_commit(listener):
    with transaction.atomic():
        services.enqueue_many([{"type": "noop", "queue": q} for q in ["a", "b", "a"] * 50])
        assert listener() == []  # nothing before commit
    assert listener() == ["a", "b"]


def test_a_single_enqueue_notifies_its_queue_and_a_rolled_back_one_does_not(listener):
    services.enqueue("noop", queue="reports")
    assert listener() == ["reports"]
    with pytest.raises(RuntimeError), transaction.atomic():
        services.enqueue("noop", queue="reports")
        raise RuntimeError("rolled back")
    assert listener() == []


@override_settings(JOB_LISTEN_NOTIFY=False)
def test_no_notify_when_listen_notify_is_off(listener):
    services.enqueue("noop")
    services.enqueue_many([{"type": "noop"}, {"type": "noop"}])
    assert listener() == []
