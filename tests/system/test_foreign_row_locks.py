"""A transaction outside the worker that holds a lock on a running job's row (an enqueue naming
it in `after` until it commits, an operator's open transaction) for longer than the lease
stalls nothing else: the worker process's renewals and completions of its other jobs go on,
and the locked job is neither reaped nor run a second time; its own completion is written once
the lock is gone."""
import time

import psycopg
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import chaos_handlers  # noqa: F401  (registers `chaos` in this process)
from tests.handlers.chaos_handlers import LEASE_SECONDS, Ledger, Output, worker_env
from tests.utils import (
    spawn_workers,
    stop_workers,
    wait_for,
    wait_until_jobs,
    worker_database_url,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _ok(seconds: float, **extra) -> dict:
    return {"type": "chaos", "payload": {"mode": "ok", "seconds": seconds}, **extra}


def test_a_foreign_lock_on_a_running_job_stalls_no_other_job_and_runs_none_twice(tmp_path):
    ledger_path = tmp_path / "ledger.tsv"
    victim, bystander = services.enqueue_many([_ok(1.5 * LEASE_SECONDS, priority=10),
                                               _ok(5 * LEASE_SECONDS, priority=10)])
    worker = spawn_workers("--threads", "4", env=worker_env(ledger_path))
    out = Output(worker)
    try:
        wait_until_jobs("running", pk__in=[victim.id, bystander.id], timeout=30)
        with psycopg.connect(worker_database_url()) as foreign:
            foreign.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", [victim.id])
            locked_at = time.monotonic()
            lease_at_lock = Job.objects.get(pk=bystander.id).lease_expires_at
            # The victim's handler returns while its row is locked; jobs enqueued after it
            # are completed all the same, and the bystander's lease is still renewed.
            quick = services.enqueue_many([_ok(0.01) for _ in range(10)])
            wait_until_jobs("succeeded", pk__in=[j.id for j in quick], timeout=2 * LEASE_SECONDS,
                            message="the other jobs completed:\n" + out.text())
            # Polls: the renewal is another process's, seen in the row.
            wait_for(lambda: Job.objects.get(pk=bystander.id).lease_expires_at > lease_at_lock,
                     timeout=LEASE_SECONDS, message="the bystander's lease renewed")
            assert time.monotonic() - locked_at < 2 * LEASE_SECONDS
            # Held past the victim's lease (the scenario, not a wait for a condition).
            time.sleep(max(0.0, 2.5 * LEASE_SECONDS - (time.monotonic() - locked_at)))
            assert Job.objects.get(pk=victim.id).status == "running"
            foreign.rollback()
        wait_until_jobs("succeeded", pk__in=[victim.id, bystander.id], timeout=10 * LEASE_SECONDS,
                        message="victim and bystander succeeded")
    finally:
        stop_workers(worker)
    ledger = Ledger.read(ledger_path)
    for job in (victim, bystander):
        # One attempt started: one outcome carries a start (the claim writes no event).
        assert HistoryEvent.objects.filter(job_id=job.id, data__has_key="started_at").count() == 1
        assert not HistoryEvent.objects.filter(job_id=job.id, kind="lease_expired").exists()
        assert Job.objects.get(pk=job.id).attempts == 1
        assert len(ledger.by_job[job.id]) == 1, ledger.by_job[job.id]
