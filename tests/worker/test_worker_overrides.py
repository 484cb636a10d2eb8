"""A pool applies its host's queue overrides (worker/overrides.py): a queue stopped on its
host is left out of its claims from its first one, while the other queues run; removed, the
pool takes it again at its next refresh; an override of another host changes nothing here.
Two real processes as two hosts: tests/system/test_worker_overrides_workers.py."""
from django_pg_jobqueue import enqueue
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.services import heartbeat, remove_worker_override, set_worker_override


def _host(name: str) -> None:
    heartbeat(f"{name}-0", hostname=name, pid=0, threads=1, queues=["*"])


def test_a_queue_stopped_on_the_pool_s_host_is_not_claimed_until_the_override_goes(worker_pool):
    _host("vm-a")
    stopped = enqueue("noop", queue="reports")
    set_worker_override("reports", "vm-a", stopped=True)
    pool = worker_pool(threads=2, hostname="vm-a")
    other = enqueue("noop", queue="emails")
    pool.test_signals.wait_ended([other.id], "succeeded")
    pool.test_signals.wait_polls(3, empty=True)  # three claims that would have taken it
    assert Job.objects.get(pk=stopped.pk).status == "queued"

    remove_worker_override("reports", "vm-a")
    pool.refresh_overrides()  # what the renewer's next pass does
    pool.test_signals.wait_ended([stopped.id], "succeeded")


def test_another_host_s_override_changes_nothing_here(worker_pool):
    _host("vm-b")
    job = enqueue("noop", queue="reports")
    set_worker_override("reports", "vm-b", stopped=True)
    pool = worker_pool(threads=1, hostname="vm-a")
    pool.test_signals.wait_ended([job.id], "succeeded")
    assert pool.process_id.startswith("vm-a-")
