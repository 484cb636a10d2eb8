"""Fencing: a worker whose lease expired can write nothing more to its job, whatever the
interleaving with the reaper and the next worker."""
import random
import threading
import time
from collections import Counter, defaultdict

import pytest
from django.db import connection
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.exceptions import LeaseLost
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.testing import expire_lease, run_reaper
from tests.utils import wait_until_jobs


def _make_due(job_id):
    with connection.cursor() as cur:
        cur.execute("UPDATE jobs SET available_at = now() WHERE id = %s AND status = 'queued'", [job_id])


@pytest.mark.django_db
def test_a_stale_worker_is_refused_renew_progress_log_complete_fail_release_and_snooze():
    job = services.enqueue("noop", max_attempts=5)
    stale = services.claim(worker_ids=["stale-1"], job_ids=[job.id])[0]
    expire_lease(job)
    assert run_reaper() == {"queued": 1}
    _make_due(job.id)
    fresh = services.claim(worker_ids=["fresh-1"], job_ids=[job.id])[0]
    assert fresh.lease_token != stale.lease_token
    # The row is `running` again, so a guard on the status alone would let every one through.
    assert services.renew_many([(job.id, stale.lease_token)]) == {}
    with pytest.raises(LeaseLost):
        services.record_progress(job.id, stale.lease_token, worker_id="stale-1", percent=99)
    with pytest.raises(LeaseLost):
        services.log_message(job.id, stale.lease_token, worker_id="stale-1", message="late")
    with pytest.raises(LeaseLost):
        services.complete(job.id, stale.lease_token, worker_id="stale-1", result={"stale": True})
    with pytest.raises(LeaseLost):
        services.fail(job.id, stale.lease_token, worker_id="stale-1", error="late failure")
    assert services.release_many([(job.id, stale.lease_token, "stale-1")]) == []
    with pytest.raises(LeaseLost):
        services.snooze(job.id, stale.lease_token, worker_id="stale-1", seconds=1)

    job.refresh_from_db()
    assert (job.status, job.locked_by, job.lease_token) == ("running", "fresh-1", fresh.lease_token)
    assert job.progress_percent is None and job.attempts == 2
    refused = HistoryEvent.objects.filter(job=job, kind="lease_lost")
    assert sorted(e.data["refused"] for e in refused) == ["complete", "fail"]
    assert all(e.data["lease_token"] == str(stale.lease_token) for e in refused)
    assert not HistoryEvent.objects.filter(job=job, kind__in=["progress", "log"]).exists()

    # The fresh worker's lease is intact: it renews and completes.
    assert set(services.renew_many([(job.id, fresh.lease_token)])) == {job.id}
    assert services.complete(job.id, fresh.lease_token, worker_id="fresh-1", result={"n": 1}) == "succeeded"
    # And once the job is finished, the stale worker still cannot overwrite it.
    with pytest.raises(LeaseLost):
        services.complete(job.id, stale.lease_token, worker_id="stale-1", result={"stale": True})
    with pytest.raises(LeaseLost):
        services.fail(job.id, stale.lease_token, worker_id="stale-1", error="late", permanent=True)
    job.refresh_from_db()
    assert (job.status, job.result) == ("succeeded", {"n": 1})
    assert audit().ok


@pytest.mark.django_db
def test_the_reaper_leaves_a_lease_renewed_in_time_alone():
    job = services.enqueue("noop")
    c = services.claim(worker_ids=["w"], job_ids=[job.id])[0]
    assert run_reaper() == {}
    assert set(services.renew_many([(job.id, c.lease_token)])) == {job.id}
    assert run_reaper() == {}
    assert services.complete(job.id, c.lease_token, worker_id="w") == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_randomized_interleavings_of_reaper_completion_and_reclaim_never_overwrite_a_finished_job():
    """Hundreds of jobs, each claimed with a lease a few tens of milliseconds long; a worker
    completes (or fails) each after a random pause, while two reapers and a rival worker
    race it. Whoever wins, the loser's write must be refused, never applied."""
    seed = random.randrange(1_000_000)
    n_jobs = 300
    with override_settings(JOB_RETRY_BASE_SECONDS=0.005, JOB_RETRY_MAX_SECONDS=0.02, JOB_RETRY_JITTER=0):
        jobs = services.enqueue_many([{"type": "noop", "max_attempts": 50} for _ in range(n_jobs)])
        ids = [j.id for j in jobs]
        outcomes: dict[tuple[int, str], str] = {}   # (job, token) -> "succeeded" | "queued" | "refused"
        lock = threading.Lock()
        stop = threading.Event()
        errors: list[BaseException] = []

        def guarded(fn):
            def run():
                try:
                    fn()
                except BaseException as exc:  # surfaced in the main thread
                    errors.append(exc)
                finally:
                    connection.close()
            return threading.Thread(target=run)

        def jitter(r, most):
            time.sleep(r.uniform(0, most))  # by design: random timing is the race

        def first_workers(my_ids, name, r):
            for job_id in my_ids:
                got = services.claim(worker_ids=[name], job_ids=[job_id],
                                     lease_seconds=r.uniform(0.005, 0.05))
                if not got:
                    continue   # already reaped and reclaimed by the rival: fine
                c = got[0]
                jitter(r, 0.06)
                try:
                    if r.random() < 0.75:
                        status = services.complete(job_id, c.lease_token, worker_id=name)
                    else:
                        status, _ = services.fail(job_id, c.lease_token, worker_id=name, error="x")
                except LeaseLost:
                    status = "refused"
                with lock:
                    outcomes[(job_id, str(c.lease_token))] = status

        def reaper(r):
            while not stop.is_set():
                services.reap()
                jitter(r, 0.01)

        def rival(r):
            while not stop.is_set():
                for c in services.claim(worker_ids=[f"rival-{i}" for i in range(4)],
                                        lease_seconds=r.uniform(0.01, 0.05)):
                    jitter(r, 0.02)
                    try:
                        status = services.complete(c.id, c.lease_token, worker_id=c.worker_id)
                    except LeaseLost:
                        status = "refused"
                    with lock:
                        outcomes[(c.id, str(c.lease_token))] = status
                jitter(r, 0.004)  # a pause between rounds

        chunks = [ids[i::6] for i in range(6)]
        threads = [guarded(lambda ch=ch, k=k: first_workers(ch, f"first-{k}", random.Random(seed + k)))
                   for k, ch in enumerate(chunks)]
        background = [guarded(lambda k=k: reaper(random.Random(seed + 100 + k))) for k in range(2)]
        background.append(guarded(lambda: rival(random.Random(seed + 200))))
        for t in threads + background:
            t.start()
        for t in threads:
            t.join(120)
        # Let the rival finish everything that was requeued.
        wait_until_jobs("succeeded", timeout=60)  # the rival calls services: no signal
        stop.set()
        for t in background:
            t.join(30)
        connection.close()
    assert not errors, errors

    statuses = Counter(Job.objects.values_list("status", flat=True))
    assert statuses == {"succeeded": n_jobs}, (seed, statuses)
    wins = defaultdict(list)
    for (job_id, token), status in outcomes.items():
        if status == "succeeded":
            wins[job_id].append(token)
    success_events = {e.job_id: e.data["lease_token"]
                      for e in HistoryEvent.objects.filter(kind="succeeded")}
    assert HistoryEvent.objects.filter(kind="succeeded").count() == n_jobs
    for job_id in ids:
        # Exactly one write won, and it is the one the event records.
        assert wins[job_id] == [success_events[job_id]], (seed, job_id, wins[job_id])
    kinds = Counter(outcomes.values())
    reaped = HistoryEvent.objects.filter(kind="lease_expired").count()
    lost = HistoryEvent.objects.filter(kind="lease_lost").count()
    print(f"\nfencing races (seed {seed}): {len(outcomes)} runs, outcomes {dict(kinds)}, "
          f"{reaped} leases reaped, {lost} stale writes refused")
    # Both sides of every race happened: completions that beat the reaper and ones it fenced out.
    assert kinds["refused"] > 0 and reaped > 0 and lost == kinds["refused"]
    report = audit()
    assert report.ok, report.format()


@pytest.mark.django_db
def test_the_renewer_does_not_report_a_lease_lost_for_a_completion_its_process_just_committed():
    """Found by the chaos drain: a false `lease_lost` ("renewal refused") 10-95 ms after the
    job's own `succeeded`, under the same token, because the renewer's pass fell between the
    completer's commit and its discard of the job. Held jobs are now marked finishing before
    their final write, and the renewer leaves those to their writer."""
    from django_pg_jobqueue.engine import PostgresEngine
    from django_pg_jobqueue.services.lifecycle import Completion
    from django_pg_jobqueue.testing import _context
    from django_pg_jobqueue.worker.completer import Completer
    from django_pg_jobqueue.worker.held import Held, HeldJobs
    from django_pg_jobqueue.worker.renewer import LeaseRenewer

    job = services.enqueue("noop")
    c = services.claim(worker_ids=["proc-1"], job_ids=[job.id])[0]
    held = HeldJobs()
    held.add(Held(c, _context(c, "proc-1")))
    renewer = LeaseRenewer(held, process_id="proc", threads=1, queues=["*"])
    renewals = []

    class RenewsRightAfterCompleting(PostgresEngine):
        def complete_many(self, batch):
            # The renewer's periodic pass lands right after the completion committed, before
            # the completer has forgotten the job: a window of a few milliseconds in production.
            out = super().complete_many(batch)
            renewals.append(renewer.run_once())
            return out

    Completer(held, engine=RenewsRightAfterCompleting()).flush([Completion(c.id, c.lease_token, "proc-1", {"ok": True})])
    job.refresh_from_db()
    assert job.status == "succeeded"
    assert renewals[0]["lost"] == 0
    assert not HistoryEvent.objects.filter(job=job, kind="lease_lost").exists()


@pytest.mark.django_db
def test_a_timed_out_attempt_is_failed_before_its_handler_is_told_to_stop():
    """A handler that returns as soon as it is told to stop must find its completion refused:
    were it told first, its success could be written before the timeout's failure."""
    from datetime import timedelta

    from django_pg_jobqueue.testing import _context
    from django_pg_jobqueue.worker.held import Held, HeldJobs
    from django_pg_jobqueue.worker.renewer import LeaseRenewer

    job = services.enqueue("noop", timeout_seconds=1, max_attempts=1)
    c = services.claim(worker_ids=["proc-1"], job_ids=[job.id])[0]
    Job.objects.filter(pk=job.pk).update(started_at=c.started_at - timedelta(hours=1))
    ctx = _context(c, "proc-1")
    status_when_told = []
    real_request_stop = ctx.request_stop

    def request_stop(reason):
        status_when_told.append(Job.objects.get(pk=job.pk).status)
        real_request_stop(reason)

    ctx.request_stop = request_stop
    held = HeldJobs()
    held.add(Held(c, ctx))
    counts = LeaseRenewer(held, process_id="proc", threads=1, queues=["*"]).run_once()
    assert counts["timed_out"] == 1
    assert status_when_told == ["failed"]
    assert ctx.stop_reason == "timeout"
