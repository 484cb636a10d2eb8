"""A host's queue overrides (services/worker_overrides.py): validated once, naming the
argument; only for a queue and a host that exist; idempotent; each change and removal in the
audit log with the host and the old and new values; the table's shapes held by named check
constraints. What workers do with them: tests/system/test_worker_overrides_workers.py and
tests/unit/test_worker_overrides.py."""
import pytest
from django.db import IntegrityError, transaction

from django_pg_jobqueue import services
from django_pg_jobqueue.exceptions import HostNotFound, InvalidJobArgument, QueueNotFound
from django_pg_jobqueue.models import AuditLogEntry, WorkerOverride
from django_pg_jobqueue.services import remove_worker_override, set_worker_override

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def host_and_queue():
    services.heartbeat("vm-1-100", hostname="vm-1", pid=100, threads=4, queues=["*"])
    services.enqueue("noop", queue="reports")


def _entries():
    return [(e.actor, e.action, e.target_kind, e.target, e.data)
            for e in AuditLogEntry.objects.order_by("id")]


def test_set_change_and_remove_are_each_recorded_once():
    row = set_worker_override("reports", "vm-1", stopped=True, actor="ops")
    assert (row.threads, row.stopped, row.actor) == (None, True, "ops")
    set_worker_override("reports", "vm-1", stopped=True, actor="ops")  # the same: no entry
    set_worker_override("reports", "vm-1", threads=2, actor="ops")
    assert services.host_overrides("vm-1") == {"reports": (2, False)}
    assert remove_worker_override("reports", "vm-1", actor="ops") is True
    assert remove_worker_override("reports", "vm-1", actor="ops") is False  # none: no entry
    assert services.host_overrides("vm-1") == {}
    assert _entries() == [
        ("ops", "set_worker_override", "queue", "reports",
         {"hostname": "vm-1", "stopped": [False, True]}),
        ("ops", "set_worker_override", "queue", "reports",
         {"hostname": "vm-1", "threads": [None, 2], "stopped": [True, False]}),
        ("ops", "remove_worker_override", "queue", "reports",
         {"hostname": "vm-1", "threads": [2, None]}),
    ]


@pytest.mark.parametrize("kwargs, argument", [
    ({"threads": -1}, "threads"),
    ({"threads": 10_001}, "threads"),
    ({"threads": 1.5}, "threads"),
    ({"threads": True}, "threads"),
    ({"stopped": "yes"}, "stopped"),
    ({}, "threads"),  # says nothing: remove it instead
    ({"threads": 1, "queue": "bad queue"}, "queue"),
    ({"threads": 1, "hostname": ""}, "hostname"),
    ({"threads": 1, "hostname": "a/b"}, "hostname"),
    ({"threads": 1, "hostname": "x" * 201}, "hostname"),
])
def test_a_bad_argument_is_refused_naming_it_and_nothing_is_written(kwargs, argument):
    queue, hostname = kwargs.pop("queue", "reports"), kwargs.pop("hostname", "vm-1")
    with pytest.raises(InvalidJobArgument) as caught:
        set_worker_override(queue, hostname, **kwargs)
    assert caught.value.argument == argument
    assert not WorkerOverride.objects.exists() and not AuditLogEntry.objects.exists()


def test_an_unknown_queue_or_host_is_refused():
    with pytest.raises(QueueNotFound):
        set_worker_override("nope", "vm-1", stopped=True)
    with pytest.raises(HostNotFound):
        set_worker_override("reports", "vm-9", stopped=True)
    assert not WorkerOverride.objects.exists()


def test_a_host_with_an_override_stays_known_after_its_workers_stop():
    set_worker_override("reports", "vm-1", threads=1)
    services.remove_stopped_workers(["vm-1-100"])
    set_worker_override("reports", "vm-1", threads=3)  # e.g. before it starts again
    assert services.host_overrides("vm-1") == {"reports": (3, False)}


def test_overrides_are_per_host():
    services.heartbeat("vm-2-200", hostname="vm-2", pid=200, threads=4, queues=["*"])
    set_worker_override("reports", "vm-1", stopped=True)
    assert services.host_overrides("vm-2") == {}


@pytest.mark.parametrize("change", [{"threads": -1}, {"threads": 10_001},
                                    {"threads": None, "stopped": False}, {"hostname": ""}])
def test_the_table_refuses_a_shape_the_service_never_writes(change):
    set_worker_override("reports", "vm-1", threads=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkerOverride.objects.update(**change)
