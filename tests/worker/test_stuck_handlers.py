"""A handler that keeps running past its job's timeout (it never looks at its context) is
stuck: in a plain thread pool too, it is logged, counted in its process's heartbeat and the
`jobqueue_stuck_handlers` metric, and noted on its job's timeline, while its attempt is failed
as timed out and retried by its policy."""
import logging
import time

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.metrics import families, snapshot
from django_pg_jobqueue.models import Job, JobEvent, WorkerProcess
from django_pg_jobqueue.registry import registry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oblivious_handler():
    """Sleeps `seconds` without ever checking ctx.should_stop()."""
    def oblivious(ctx, payload):
        time.sleep(payload["seconds"])  # the job's work, deaf to a stop: the point
        return {"slept": payload["seconds"]}

    registry.register("oblivious", oblivious, timeout_seconds=1, max_attempts=2)
    yield
    registry.unregister("oblivious")


def test_a_handler_past_its_timeout_is_logged_counted_and_noted_on_its_job(
        worker_pool, oblivious_handler, settings):
    settings.JOB_TIMEOUT_GRACE_SECONDS = 0.5
    logged = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append
    logging.getLogger("django_pg_jobqueue.worker").addHandler(handler)
    job = services.enqueue("oblivious", {"seconds": 4})
    pool = worker_pool(threads=2)
    signals = pool.test_signals
    # Written by the renewer's pass (its stuck watch): looked for after each pass.
    signals.renewed.wait(lambda _: JobEvent.objects.filter(
        job=job, kind="log", data__stuck=True).exists(), 15, "a stuck event on the job")
    stuck = JobEvent.objects.get(job=job, kind="log", data__stuck=True)
    assert "past its 1s timeout" in stuck.message and stuck.attempt == 1
    assert stuck.worker_id in {e.worker_id for e in pool.executors}
    # Its attempt was failed as timed out and retried meanwhile (its policy: 2 attempts).
    job.refresh_from_db()
    assert "timed out after 1s" in job.last_error
    signals.renewed.wait(lambda _: WorkerProcess.objects.filter(
        pk=pool.process_id, stuck_handlers__gte=1).exists(), 10, "the heartbeat counts it")
    gauge = next(f for f in families(snapshot()) if f.name == "jobqueue_stuck_handlers")
    assert gauge.samples[0].value >= 1
    logging.getLogger("django_pg_jobqueue.worker").removeHandler(handler)
    assert any("stuck: the handler is still running" in r.getMessage() for r in logged)
    # Noted once per attempt, not on every pass.
    signals.wait_passes(signals.renewed, 3)  # two whole passes more
    assert JobEvent.objects.filter(job=job, kind="log", data__stuck=True, attempt=1).count() == 1
    assert Job.objects.get(pk=job.pk).attempts >= 1
