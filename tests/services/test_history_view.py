"""The history's read path (models.HistoryEvent, the view job_history): a job's stored events
(job_events) and the outcome its completion keeps on the job row, shown as the event it is,
each once; an operator's retry (of a job a cancel ended as it completed) writes the kept
outcome into job_events without moving it."""
import pytest
from django.db import connection

from django_pg_jobqueue import feed, services, sql
from django_pg_jobqueue.models import HistoryEvent, Job, JobEvent

pytestmark = pytest.mark.django_db

COLUMNS = ("id", "job_id", "kind", "attempt", "worker_id", "message", "data", "created_at")


def _positions(job_id: int) -> list[tuple[int, int]]:
    with connection.cursor() as cur:
        cur.execute("SELECT tx_id, id FROM job_history WHERE job_id = %s ORDER BY id", [job_id])
        return cur.fetchall()


def _drained(worker_id: str = "h-1-0", *, cancel: bool = False) -> tuple[Job, object]:
    """A job run to its completion; `cancel`: cancelled while it ran (the operator may retry
    that one, not a success)."""
    job = services.enqueue("noop", {"n": 1})
    claimed = services.claim(worker_ids=[worker_id], job_ids=[job.id])[0]
    if cancel:
        services.cancel(job.id)  # requested: the running handler finishes first
    services.complete(job.id, claimed.lease_token, worker_id=worker_id, result={"ok": True})
    job.refresh_from_db()
    return job, claimed


def test_a_completion_keeps_its_outcome_on_the_job_row_and_the_history_shows_it_as_an_event():
    job, claimed = _drained()
    assert list(JobEvent.objects.filter(job=job).values_list("kind", flat=True)) == ["created"]
    created, succeeded = HistoryEvent.objects.filter(job=job).order_by("id")
    assert created.kind == "created" and created.id < succeeded.id
    assert (succeeded.kind, succeeded.attempt, succeeded.worker_id, succeeded.message) == (
        "succeeded", 1, "h-1-0", "")
    assert succeeded.created_at == job.finished_at
    assert succeeded.data["lease_token"] == str(claimed.lease_token)
    assert set(succeeded.data) == {"lease_token", "run_seconds", "started_at", "wait_seconds"}
    # Its id comes from job_events' own sequence: an event written next follows it.
    later = services.enqueue("noop")
    assert JobEvent.objects.get(job=later).id > succeeded.id


def test_a_retry_writes_the_kept_outcome_into_job_events_at_the_same_id_and_position():
    job, _ = _drained(cancel=True)
    before = {e.id: tuple(getattr(e, c) for c in COLUMNS) for e in HistoryEvent.objects.filter(job=job)}
    positions = _positions(job.id)
    services.retry(job.id)
    stored = {e.id: tuple(getattr(e, c) for c in COLUMNS)
              for e in JobEvent.objects.filter(job=job, id__in=list(before))}
    assert stored == before  # every event as it read before, now a row of job_events
    assert _positions(job.id)[:len(positions)] == positions  # the feed's places unchanged
    with connection.cursor() as cur:
        cur.execute("SELECT outcome_event_id, outcome_tx, outcome_worker_id, outcome_data"
                    " FROM jobs WHERE id = %s", [job.id])
        assert cur.fetchone() == (None, None, None, None)
    kinds = list(HistoryEvent.objects.filter(job=job).order_by("id").values_list("kind", flat=True))
    assert kinds[0] == "created" and kinds[-1] == "retried" and kinds.count("cancelled") == 1


@pytest.mark.django_db(transaction=True)  # the feed returns committed events only
def test_the_feed_returns_a_kept_outcome_once_before_and_after_it_is_written_out():
    job, _ = _drained(cancel=True)
    start = feed.position_of(JobEvent.objects.get(job=job, kind="created").id)
    before = feed.rows_after(start, limit=100)
    kept = HistoryEvent.objects.get(job=job, kind="cancelled")
    assert [event_id for _, event_id in before][-1] == kept.id  # after the cancel's request
    assert feed.position_of(kept.id) == before[-1]
    services.retry(job.id)
    after = feed.rows_after(start, limit=100)
    assert after[:len(before)] == before  # written out, at the same place, once
    assert [event_id for _, event_id in after].count(kept.id) == 1
    assert feed.position_of(kept.id) == before[-1]


def test_a_cancel_that_reached_the_running_job_is_kept_as_its_cancelled_outcome():
    job, _ = _drained(cancel=True)
    outcome = HistoryEvent.objects.filter(job=job).order_by("id").last()
    assert (outcome.kind, outcome.worker_id) == ("cancelled", "h-1-0")
    assert not JobEvent.objects.filter(job=job, kind="cancelled").exists()


def test_the_database_refuses_a_partly_kept_outcome():
    job, _ = _drained()
    with pytest.raises(Exception, match="job_outcome_kept_whole"):  # noqa: PT011
        with connection.cursor() as cur:
            cur.execute("UPDATE jobs SET outcome_tx = NULL WHERE id = %s", [job.id])


def test_the_feed_reads_each_place_on_its_index_when_most_jobs_keep_their_outcome():
    # Over the view's UNION ALL, PostgreSQL 15 sorted every kept outcome (a sequential scan of
    # jobs) to find a page's first: the feed's statements read each place on its own index.
    jobs = services.enqueue_many([{"type": "noop"}] * 2000)
    claimed = services.claim(worker_ids=[f"h-1-{n}" for n in range(2000)],
                             job_ids=[j.id for j in jobs])
    services.complete_many([services.lifecycle.Completion(c.id, c.lease_token, c.worker_id)
                            for c in claimed])
    with connection.cursor() as cur:
        cur.execute("ANALYZE jobs")
        cur.execute("ANALYZE job_events")
        plans = {}
        for name, statement in (
                ("after", sql.EVENTS_AFTER.format(
                    stored=sql.EVENTS_AFTER_CURSOR.format(**sql.EVENTS_STORED_POSITION),
                    kept=sql.EVENTS_AFTER_CURSOR.format(**sql.EVENTS_KEPT_POSITION))),
                ("after_id", sql.EVENTS_AFTER.format(
                    stored=sql.EVENTS_AFTER_ID_CURSOR.format(**sql.EVENTS_STORED_POSITION),
                    kept=sql.EVENTS_AFTER_ID_CURSOR.format(**sql.EVENTS_KEPT_POSITION))),
                ("latest", sql.EVENTS_LATEST)):
            cur.execute("EXPLAIN " + statement, {"after": 0, "after_tx": 0, "limit": 100})
            plans[name] = "\n".join(row[0] for row in cur.fetchall())
    for name, plan in plans.items():
        assert "Seq Scan on jobs" not in plan and "jobs_outcome_feed_idx" in plan, (name, plan)
