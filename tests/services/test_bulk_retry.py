"""Dead letter: retry every failed job matching a filter, in batches."""
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_pg_jobqueue import services, sql
from django_pg_jobqueue.models import Job, JobEvent
from django_pg_jobqueue.services.bulk_retry import retry_matching


def failed_jobs(n: int, *, type="noop", error="boom", finished_ago=timedelta(minutes=1),
                queue=None, max_attempts=3):
    """n jobs that really failed (claimed, then failed for good), finished `finished_ago` ago."""
    jobs = services.enqueue_many([{"type": type, "payload": {"i": i}, "queue": queue,
                                   "max_attempts": max_attempts} for i in range(n)])
    ids = [j.id for j in jobs]
    for c in services.claim(worker_ids=[f"w-{i}" for i in range(n)], job_ids=ids):
        services.fail(c.id, c.lease_token, worker_id=c.worker_id, error=error,
                      traceback="Traceback ...", permanent=True)
    Job.objects.filter(pk__in=ids).update(finished_at=timezone.now() - finished_ago)
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"failed"}
    return ids


def statuses(ids):
    return sorted(set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)))


@pytest.mark.django_db
def test_retries_every_failed_job_of_the_type_and_nothing_else():
    target = failed_jobs(3, type="noop", max_attempts=1)
    other_type = failed_jobs(2, type="fail")
    done = services.enqueue("noop", {})
    [c] = services.claim(worker_ids=["w"], job_ids=[done.id])
    services.complete(c.id, c.lease_token, worker_id="w", result={})
    cancelled = services.enqueue("noop", {})
    services.cancel(cancelled.id)
    queued = services.enqueue("noop", {})

    assert retry_matching(type="noop", actor="ops@example.com") == 3

    for job in Job.objects.filter(pk__in=target):
        assert job.status == "queued" and job.finished_at is None
        assert job.attempts == 1 and job.max_attempts == 2  # room for one more attempt
        assert job.last_error == "boom"  # the dead letter keeps its last error
        assert timezone.now() - job.available_at < timedelta(seconds=30)
        event = JobEvent.objects.filter(job=job).last()
        assert event.kind == "retried" and event.data == {"bulk": True}
        assert event.message == "retried from failed (bulk) by ops@example.com"
    assert statuses(other_type) == ["failed"]
    assert Job.objects.get(pk=done.id).status == "succeeded"
    assert Job.objects.get(pk=cancelled.id).status == "cancelled"
    assert Job.objects.get(pk=queued.id).status == "queued"
    # They are runnable again: a worker claims them, as attempt 2.
    claimed = services.claim(worker_ids=["a", "b", "c"], job_ids=target)
    assert sorted(c.id for c in claimed) == sorted(target)
    assert {c.attempt for c in claimed} == {2}


@pytest.mark.django_db
def test_error_text_filter_is_a_case_insensitive_substring_taken_literally():
    smtp = failed_jobs(2, error="ConnectionError: SMTP 421 service not available")
    other = failed_jobs(2, error="ValueError: bad payload")
    assert retry_matching(error_contains="smtp 421") == 2
    assert statuses(smtp) == ["queued"] and statuses(other) == ["failed"]

    literal = failed_jobs(1, error="quota at 100% for tenant a_b")
    lookalike = failed_jobs(1, error="quota at 1000 for tenant axb")
    assert retry_matching(error_contains="100%") == 1  # % is not a wildcard
    assert retry_matching(error_contains="a_b") == 0  # nor is _: `literal` is queued already
    assert statuses(literal) == ["queued"] and statuses(lookalike + other) == ["failed"]


@pytest.mark.django_db
def test_time_range_is_finished_after_inclusive_and_before_exclusive():
    now = timezone.now()
    old = failed_jobs(1, finished_ago=timedelta(days=3))
    mid = failed_jobs(1, finished_ago=timedelta(days=1))
    new = failed_jobs(1, finished_ago=timedelta(minutes=5))
    mid_at = Job.objects.get(pk=mid[0]).finished_at
    assert retry_matching(finished_after=now - timedelta(days=2),
                          finished_before=now - timedelta(hours=1)) == 1
    assert statuses(mid) == ["queued"] and statuses(old + new) == ["failed"]
    assert retry_matching(finished_before=Job.objects.get(pk=old[0]).finished_at) == 0
    assert retry_matching(finished_after=Job.objects.get(pk=new[0]).finished_at) == 1
    assert mid_at is not None


@pytest.mark.django_db
def test_filters_combine_with_and():
    a = failed_jobs(2, type="noop", error="timeout talking to S3")
    b = failed_jobs(2, type="fail", error="timeout talking to S3")
    c = failed_jobs(2, type="noop", error="disk full")
    assert retry_matching(type="noop", error_contains="TIMEOUT") == 2
    assert statuses(a) == ["queued"] and statuses(b + c) == ["failed"]


@pytest.mark.django_db
def test_no_filter_retries_every_failed_job():
    ids = failed_jobs(3, type="noop") + failed_jobs(2, type="fail")
    assert retry_matching() == 5 and statuses(ids) == ["queued"]
    assert retry_matching() == 0


@pytest.mark.django_db
def test_retries_in_batches_of_one_statement_each():
    ids = failed_jobs(25)
    with CaptureQueriesContext(connection) as ctx:
        assert retry_matching(batch_size=10) == 25
    batches = [q for q in ctx.captured_queries if "UPDATE jobs j" in q["sql"]]
    assert len(batches) == 3  # 10, 10, 5
    assert statuses(ids) == ["queued"]
    assert JobEvent.objects.filter(job_id__in=ids, kind="retried").count() == 25


@pytest.mark.django_db(transaction=True)
def test_a_job_another_session_holds_is_skipped_not_waited_for():
    ids = failed_jobs(3)
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as other:
        with other.transaction():
            other.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", [ids[1]])
            with connection.cursor() as cur:
                cur.execute("SET lock_timeout = '2s'")
            assert retry_matching(batch_size=2) == 2
    assert Job.objects.get(pk=ids[1]).status == "failed"
    assert retry_matching() == 1


@pytest.mark.django_db(transaction=True)
def test_retried_queues_are_notified_so_idle_workers_wake():
    failed_jobs(2, queue="mail")
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as listener:
        listener.execute(f"LISTEN {sql.NOTIFY_CHANNEL}")
        assert retry_matching(type="noop") == 2
        got = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    assert got == ["mail"]


@pytest.mark.django_db
def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        retry_matching(batch_size=0)
    now = timezone.now()
    with pytest.raises(ValueError):
        retry_matching(finished_after=now, finished_before=now - timedelta(days=1))


@pytest.mark.django_db
def test_a_failed_job_whose_history_the_prune_dropped_is_retried_by_no_path(operator_client):
    """Its events left with their job_events partition (it is past its retention, about to be
    deleted): neither the single, the by-ids nor the bulk retry revives it without them."""
    from django_pg_jobqueue.exceptions import JobNotFound

    gone, whole = failed_jobs(2)
    JobEvent.objects.filter(job_id=gone).delete()  # what a dropped partition leaves
    with pytest.raises(JobNotFound):
        services.retry(gone)
    by_ids = operator_client.post("/api/v1/jobs/retry/", {"ids": [gone]}, format="json").json()
    assert by_ids == {"retried": 0, "not_retried": [gone]}
    assert retry_matching() == 1
    assert Job.objects.get(pk=gone).status == "failed"
    assert Job.objects.get(pk=whole).status == "queued"
    assert not JobEvent.objects.filter(job_id=gone).exists()
