"""The claim that seeks (sql.CLAIM_SEEK, worker/seek.py): from a lane's last claim instead of the
head of the claim order, so that the index entries of jobs claimed while a snapshot is held open
elsewhere (which no vacuum can remove) are not walked again by every claim. It keeps the order
of priorities, and what it cannot see (a job behind the key) the head claim still finds."""
import json
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from django_pg_jobqueue import services, sql
from django_pg_jobqueue.db import connection_params
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.worker.seek import ClaimSeek


def key(job) -> tuple:
    return (job.priority, job.available_at, job.created_at, job.id)


def claim(n: int, after=None) -> list:
    return services.claim(worker_ids=[f"w{i}" for i in range(n)], after=after)


@pytest.mark.django_db
def test_a_seek_claim_goes_on_from_its_key_in_claim_order_and_keeps_priorities():
    jobs = [j.id for j in services.enqueue_many([{"type": "noop"} for _ in range(10)])]
    first = claim(3)
    assert [c.id for c in first] == jobs[:3]
    services.enqueue("noop", {}, priority=5)  # higher: taken first, wherever the key is
    low = services.enqueue("noop", {}, priority=-5)  # lower: after every job of the key's
    later = claim(8, after=key(first[0]))
    assert [c.priority for c in later][:1] == [5]
    assert [c.id for c in later][1:] == jobs[3:10]
    assert low.id not in {c.id for c in later}
    assert [c.id for c in claim(2, after=key(first[0]))] == [low.id]


@pytest.mark.django_db
def test_a_job_behind_the_key_is_left_to_the_head_claim():
    jobs = services.enqueue_many([{"type": "noop"} for _ in range(4)])
    [first] = claim(1)
    straggler = jobs[3]  # released keeping an old available_at, or a run_at in the past
    Job.objects.filter(pk=straggler.id).update(
        available_at=timezone.now() - timedelta(hours=1))
    assert [c.id for c in claim(4, after=key(first))] == [jobs[1].id, jobs[2].id]
    assert [c.id for c in claim(4)] == [straggler.id]


@pytest.mark.django_db(transaction=True)
def test_under_a_held_snapshot_a_seek_claim_reads_a_fraction_of_what_a_head_claim_reads():
    """What the seek is for: with a snapshot held since before 20,032 jobs were claimed, a
    claim from the head steps over all their index entries (and their heap pages); one from
    the key, the first job of the lane's last claim, only over that claim's."""
    for _ in range(5):
        services.enqueue_many([{"type": "noop"} for _ in range(4100)])
    holder = psycopg.connect(**connection_params("held snapshot"), autocommit=True)
    try:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1")  # the snapshot is taken, and held
        for _ in range(20):
            claim(1000)
        last = claim(32)[0]  # a lane's claim: its first job is the key
        head, seek = (_claim_buffers(None), _claim_buffers(key(last)))
    finally:
        holder.close()
    print(f"\nbuffers a claim of 32 touches 20,000 claimed jobs into a held snapshot: "
          f"{head} from the head, {seek} from the key")
    assert seek * 4 < head, (head, seek)


def _claim_buffers(after) -> int:
    """The shared buffers one claim of 32 touches finding and locking its jobs (EXPLAIN
    ANALYZE, rolled back; the update of the rows it found costs the same either way)."""
    statement = sql.CLAIM_SEEK if after else sql.CLAIM
    params = dict(limit=32, worker_ids=json.dumps([f"w{i}" for i in range(32)]),
                  lease_seconds=30.0)
    if after:
        params.update(seek_priority=after[0], seek_available_at=after[1],
                      seek_created_at=after[2], seek_id=after[3])
    with connection.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(sql.CLAIM_PREAMBLE)
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                    + statement.format(queue_filter=""), params)
        plan = cur.fetchone()[0]
        cur.execute("ROLLBACK")
    top = (plan[0] if isinstance(plan, list) else json.loads(plan)[0])["Plan"]
    [picked] = [p for p in top["Plans"] if p.get("Subplan Name") == "CTE picked"]
    return picked["Shared Hit Blocks"] + picked["Shared Read Blocks"]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_lane_seeks_only_after_a_slow_head_claim_and_claims_from_the_head_each_second(
        monkeypatch):
    clock = Clock()
    monkeypatch.setattr("django_pg_jobqueue.worker.seek.time.monotonic", clock)

    class Row:
        priority, available_at, created_at, id = 0, "a", "c", 7

    seek = ClaimSeek()
    assert seek.after() is None
    seek.claimed([Row()], seconds=0.001, sought=False)  # fast: no seeking
    assert seek.after() is None
    slow = ClaimSeek.SLOW_SECONDS * 1.2  # slow, found nothing: seek from the key
    assert slow * ClaimSeek.HEAD_SPACING <= ClaimSeek.SEEK_SECONDS * 1.5
    seek.claimed([], seconds=slow, sought=False)
    assert seek.after() == (0, "a", "c", 7)
    seek.claimed([], seconds=0.001, sought=True)
    clock.now += ClaimSeek.SEEK_SECONDS / 2
    assert seek.after() == (0, "a", "c", 7)
    clock.now += ClaimSeek.SEEK_SECONDS
    assert seek.after() is None  # about a second on: from the head, which decides again
    seek.claimed([], seconds=0.001, sought=False)  # fast now (the snapshot is gone)
    assert seek.after() is None


def test_the_slower_the_head_claim_the_longer_a_lane_seeks_before_the_next_one(monkeypatch):
    """The jobs that arrive while a head claim walks a held snapshot's dead entries wait for
    it: head claims are spaced by a hundred times their duration (about 1 % of the lane's
    time), from a second to SEEK_MAX_SECONDS."""
    clock = Clock()
    monkeypatch.setattr("django_pg_jobqueue.worker.seek.time.monotonic", clock)

    class Row:
        priority, available_at, created_at, id = 0, "a", "c", 7

    def seeking_for(head_seconds: float) -> float:
        seek = ClaimSeek()
        seek.claimed([Row()], seconds=head_seconds, sought=False)
        start = clock.now
        while seek.after() is not None:
            clock.now += 0.25
        return clock.now - start

    assert seeking_for(0.030) == pytest.approx(3.0, abs=0.25)
    assert seeking_for(0.060) == pytest.approx(6.0, abs=0.25)
    assert seeking_for(2.0) == pytest.approx(ClaimSeek.SEEK_MAX_SECONDS, abs=0.25)
