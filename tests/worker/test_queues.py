"""Named queues: workers claim only the queues they are given; per-queue threads keep a flood
of slow jobs in one queue from starving another."""
import pytest
from django.core.management import CommandError, call_command

from django_pg_jobqueue import enqueue, enqueue_many
from django_pg_jobqueue.models import Job
from django_pg_jobqueue.registry import registry
from tests.handlers.chaos_handlers import Output
from tests.utils import spawn_workers, wait_until_jobs


def statuses(queue: str) -> list[str]:
    return list(Job.objects.filter(queue=queue).values_list("status", flat=True))


def enqueue_in_each(queues, n=3):
    return {q: [enqueue("noop", queue=q).id for _ in range(n)] for q in queues}


def test_jobs_go_to_default_unless_a_queue_or_the_type_default_says_otherwise(db):
    registry.register("test_media_job", registry.get("noop").func, queue="media")
    try:
        assert enqueue("noop").queue == "default"
        assert enqueue("noop", queue="emails").queue == "emails"
        assert enqueue("test_media_job").queue == "media"
        assert enqueue("test_media_job", queue="urgent").queue == "urgent"
    finally:
        registry.unregister("test_media_job")


def test_a_pool_with_queues_claims_only_from_them(worker_pool):
    ids = enqueue_in_each(["emails", "reports", "default", "other"])
    pool = worker_pool(threads=2, queues="emails,reports")
    pool.test_signals.wait_ended(ids["emails"] + ids["reports"], "succeeded")
    # Three more claims that found nothing: each would have taken another queue's job.
    pool.test_signals.wait_polls(3, empty=True)
    assert statuses("default") == ["queued"] * 3 and statuses("other") == ["queued"] * 3
    assert pool.stats.snapshot()["claimed"] == 6


def test_a_pool_without_queues_claims_from_every_queue(worker_pool):
    ids = enqueue_in_each(["emails", "default", "anything"])
    pool = worker_pool(threads=2)
    pool.test_signals.wait_ended([i for queue in ids.values() for i in queue], "succeeded")


@pytest.mark.e2e
def test_run_job_workers_queues_flag_claims_only_those_queues(transactional_db):
    enqueue_in_each(["emails", "reports", "default"])
    proc = spawn_workers("--queues", "emails,reports", "--threads", "2",
                         env={"JOB_POLL_INTERVAL_SECONDS": "0.1", "JOB_WORKER_LOG_LEVEL": "DEBUG"})
    out = Output(proc)
    try:
        wait_until_jobs("succeeded", queue__in=["emails", "reports"], count=6, timeout=30)
        # Three more claims that found nothing, by the worker's own log: each would have taken
        # a default job.
        empty = len(out.matching("polled, claimed 0 of"))
        out.wait_for_line("polled, claimed 0 of", count=empty + 3)
        assert statuses("default") == ["queued"] * 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        out.join(30)
    assert "emails,reports x2" in out.text()


def test_per_queue_threads_keep_a_flood_of_slow_reports_from_starving_emails(worker_pool):
    # Ten slow reports first, at a higher priority: a shared pool would run them first.
    reports = enqueue_many([{"type": "sleep", "payload": {"seconds": 2.0}, "queue": "reports",
                             "priority": 50} for _ in range(10)])
    emails = enqueue_many([{"type": "sleep", "payload": {"seconds": 0.05}, "queue": "emails"}
                           for _ in range(8)])
    # Prefetch off: this is about threads per lane (a prefetched report would be `running`
    # too while it waits for the one thread, until it went back to the queue a second later).
    pool = worker_pool(queues="emails=2,reports=1", prefetch=0)
    pool.test_signals.wait_ended([e.id for e in emails], "succeeded", timeout=5)
    report_statuses = list(Job.objects.filter(id__in=[r.id for r in reports])
                           .values_list("status", flat=True))
    # Every email finished while reports still wait their turn on their one thread.
    assert report_statuses.count("queued") >= 6, report_statuses
    assert report_statuses.count("running") <= 1


def test_a_shared_lane_lets_the_same_flood_delay_emails(worker_pool):
    """The contrast: with one lane over both queues, the reports take every thread."""
    reports = enqueue_many([{"type": "sleep", "payload": {"seconds": 1.0}, "queue": "reports",
                             "priority": 50} for _ in range(4)])
    emails = enqueue_many([{"type": "noop", "queue": "emails"} for _ in range(4)])
    pool = worker_pool(threads=3, queues="emails,reports")
    # The emails wait behind the 1 s reports: none ends before the first report does.
    report_ids, email_ids = {r.id for r in reports}, {e.id for e in emails}
    ended = [job_id for job_id, _ in pool.test_signals.ended.wait(
        lambda seen: seen if any(job_id in report_ids for job_id, _ in seen) else None)]
    before = ended[:next(i for i, job_id in enumerate(ended) if job_id in report_ids)]
    assert not set(before) & email_ids, ended


@pytest.mark.parametrize("spec", ["emails=0", "emails=x", "emails=2,reports", "=3"])
def test_run_job_workers_refuses_a_malformed_queues_flag(spec):
    with pytest.raises(CommandError):
        call_command("run_job_workers", queues=spec)
