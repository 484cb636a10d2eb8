"""The history's read path (models.HistoryEvent, the view job_history) shows a job's events
exactly as job_events holds them: every row, each column, in the same order."""
import pytest
from django.db import connection

from django_pg_jobqueue import services
from django_pg_jobqueue.models import HistoryEvent, JobEvent

pytestmark = pytest.mark.django_db

COLUMNS = ("id", "job_id", "kind", "attempt", "worker_id", "message", "data", "created_at")


def test_every_event_of_a_job_s_attempts_reads_back_through_the_history_as_written():
    job = services.enqueue("noop", {"n": 1}, max_attempts=3)
    first = services.claim(worker_ids=["h-1-0"], job_ids=[job.id])[0]
    services.log_message(job.id, first.lease_token, worker_id="h-1-0", message="half way")
    services.fail(job.id, first.lease_token, worker_id="h-1-0", error="boom")
    with connection.cursor() as cur:  # due now, so that the second claim finds it
        cur.execute("UPDATE jobs SET available_at = now() WHERE id = %s", [job.id])
    second = services.claim(worker_ids=["h-1-1"], job_ids=[job.id])[0]
    services.complete(job.id, second.lease_token, worker_id="h-1-1", result={"ok": True})

    stored = list(JobEvent.objects.filter(job=job).order_by("id").values_list(*COLUMNS))
    read = list(HistoryEvent.objects.filter(job=job).order_by("id").values_list(*COLUMNS))
    assert [row[2] for row in stored] == ["created", "log", "retry_scheduled", "succeeded"]
    assert read == stored
    with connection.cursor() as cur:
        cur.execute("SELECT id, tx_id FROM job_history WHERE job_id = %s ORDER BY id", [job.id])
        through_view = cur.fetchall()
        cur.execute("SELECT id, tx_id FROM job_events WHERE job_id = %s ORDER BY id", [job.id])
        assert through_view == cur.fetchall()

