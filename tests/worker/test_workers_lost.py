"""Workers you can see: a worker process that stops beating is shown as lost (not removed) in
the API and the admin, with when it was last seen and the jobs it held, and counted by
`jobqueue_workers_lost`, until the reaper has requeued its jobs; then its row is forgotten. The
page of a job a lost process held says its owner is lost."""
from datetime import timedelta

import pytest
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.metrics import families, snapshot
from django_pg_jobqueue.models import Job, WorkerProcess
from django_pg_jobqueue.worker.reaper import Reaper

pytestmark = pytest.mark.django_db(transaction=True)


def _worker(pid: int, silent_seconds: float, interval: float = 2.0) -> WorkerProcess:
    w = WorkerProcess.objects.create(id=f"vm-{pid}", hostname="vm", pid=pid, threads=2,
                                     queues=["*"], heartbeat_interval_seconds=interval,
                                     rss_bytes=50 << 20, jobs_done=7)
    WorkerProcess.objects.filter(pk=w.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=silent_seconds))
    return w


def _gauge(name: str) -> float:
    return next(f for f in families(snapshot()) if f.name == name).samples[0].value


def test_a_silent_worker_is_shown_lost_with_when_last_seen_and_what_it_held(client_for, viewer):
    job = services.enqueue("noop", {})
    dead = _worker(111, silent_seconds=5)     # > 2 intervals of 2 s
    live = _worker(222, silent_seconds=0.5)
    [claimed] = services.claim(worker_ids=[f"{dead.id}-1"], lease_seconds=30)
    assert claimed.id == job.pk

    rows = {w["id"]: w for w in client_for(viewer).get("/api/v1/workers/").json()}
    assert rows[live.id]["state"] == "alive"
    assert rows[dead.id]["state"] == "lost"
    assert rows[dead.id]["heartbeat_age_seconds"] >= 5
    assert rows[dead.id]["heartbeat_at"]
    assert [(j["id"], j["worker_id"]) for j in rows[dead.id]["running_jobs"]] == [
        (job.pk, f"{dead.id}-1")]
    assert (rows[dead.id]["rss_bytes"], rows[dead.id]["jobs_done"]) == (50 << 20, 7)
    assert _gauge("jobqueue_workers_lost") == 1
    # When a live one turns lost if it beats no more: 2 intervals of 2 s, less its silence.
    assert rows[dead.id]["lost_in_seconds"] == 0
    assert 3.0 <= rows[live.id]["lost_in_seconds"] <= 3.5


def test_a_job_held_by_a_lost_process_names_its_owner_lost_and_a_live_ones_alive(client_for,
                                                                                 viewer):
    held, other, free = (services.enqueue("noop", {}) for _ in range(3))
    dead = _worker(777, silent_seconds=5)
    live = _worker(888, silent_seconds=0.5)
    services.claim(worker_ids=[f"{dead.id}-prefetch"], job_ids=[held.pk], lease_seconds=30)
    services.claim(worker_ids=[f"{live.id}-3"], job_ids=[other.pk], lease_seconds=30)
    api = client_for(viewer)

    def owner(job):
        body = api.get(f"/api/v1/jobs/{job.pk}/").json()
        return body["locked_by"], body["locked_by_state"], body["locked_by_last_seen_at"]

    locked_by, state, seen = owner(held)
    assert (locked_by, state) == (f"{dead.id}-prefetch", "lost") and seen
    assert owner(other)[:2] == (f"{live.id}-3", "alive")
    assert owner(free) == (None, None, None)
    WorkerProcess.objects.filter(pk=live.pk).delete()  # no row (not beaten yet, or gone)
    assert owner(other)[1:] == ("unknown", None)


def test_the_admin_lists_a_lost_worker_and_its_held_jobs(admin_client):
    job = services.enqueue("noop", {})
    dead = _worker(333, silent_seconds=60)
    services.claim(worker_ids=[f"{dead.id}-2"], lease_seconds=30)
    page = admin_client.get("/admin/django_pg_jobqueue/workerprocess/").content.decode()
    assert dead.id in page and "lost" in page and f"#{job.pk} noop" in page


def test_a_lost_worker_is_kept_until_its_jobs_are_requeued_then_forgotten():
    services.enqueue("noop", {})
    dead = _worker(444, silent_seconds=60)
    idle_dead = _worker(555, silent_seconds=60)
    live = _worker(666, silent_seconds=0)
    services.claim(worker_ids=[f"{dead.id}-1"], lease_seconds=0.2)
    reaper = Reaper()
    reaper.run_once()  # the lease has not expired yet: the lost worker still holds its job
    assert set(WorkerProcess.objects.values_list("id", flat=True)) == {dead.id, live.id}
    # The lease runs out: its end moved into the past, as the database's clock would.
    Job.objects.filter(status="running").update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert reaper.run_once() == {"queued": 1}
    assert set(WorkerProcess.objects.values_list("id", flat=True)) == {live.id}
    assert Job.objects.filter(status="queued").count() == 1
    assert not WorkerProcess.objects.filter(pk=idle_dead.pk).exists()


def test_a_forgotten_lost_worker_is_kept_in_a_history_with_what_became_of_its_jobs(client_for,
                                                                                 viewer):
    retried = services.enqueue("noop", {})
    last_try = services.enqueue("noop", {}, max_attempts=1)
    dead = _worker(919, silent_seconds=60)
    idle_dead = _worker(929, silent_seconds=60)
    live = _worker(939, silent_seconds=0)
    services.claim(worker_ids=[f"{dead.id}-1"], job_ids=[retried.pk], lease_seconds=0.2)
    services.claim(worker_ids=[f"{dead.id}-2"], job_ids=[last_try.pk], lease_seconds=0.2)
    # The leases run out: their end moved into the past, as the database's clock would.
    Job.objects.filter(status="running").update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert Reaper().run_once() == {"queued": 1, "failed": 1}

    body = client_for(viewer).get("/api/v1/workers/lost/").json()
    assert [(w["worker_id"], w["jobs_requeued"], w["jobs_failed"]) for w in body] in (
        [(dead.id, 1, 1), (idle_dead.id, 0, 0)], [(idle_dead.id, 0, 0), (dead.id, 1, 1)])
    row = next(w for w in body if w["worker_id"] == dead.id)
    assert (row["hostname"], row["pid"], row["threads"], row["jobs_done"]) == ("vm", 919, 2, 7)
    assert row["last_heartbeat_at"] < row["forgotten_at"]
    assert live.id not in {w["worker_id"] for w in body}
    assert {w["id"] for w in client_for(viewer).get("/api/v1/workers/").json()} == {live.id}


def test_the_lost_workers_history_keeps_a_day():
    from django_pg_jobqueue.models import LostWorker

    _worker(949, silent_seconds=60)
    services.forget_lost_workers(silent_seconds=15)
    LostWorker.objects.update(forgotten_at=timezone.now() - timedelta(hours=25))
    _worker(959, silent_seconds=60)
    services.forget_lost_workers(silent_seconds=15)
    assert list(LostWorker.objects.values_list("worker_id", flat=True)) == ["vm-959"]


def test_the_admin_lists_the_lost_workers_history(admin_client):
    _worker(969, silent_seconds=60)
    services.forget_lost_workers(silent_seconds=15)
    page = admin_client.get("/admin/django_pg_jobqueue/lostworker/").content.decode()
    assert "vm-969" in page
