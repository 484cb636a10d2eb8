"""Worker logs: one line per lifecycle event, and JOB_LOG_FORMAT=json lines carry the job."""
import io
import json
import logging
import re
import signal

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.logformat import JsonFormatter
from django_pg_jobqueue.models import Job
from tests.utils import spawn_workers


@pytest.fixture
def json_lines(request):
    """The worker's log lines as parsed JSON, at the level the test's `log_level` mark gives."""
    marker = request.node.get_closest_marker("log_level")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("django_pg_jobqueue.worker")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(marker.args[0] if marker else logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(old_level)


@pytest.mark.log_level(logging.DEBUG)
@pytest.mark.django_db(transaction=True)
def test_json_worker_log_lines_carry_job_id_type_attempt_and_worker_id(worker_pool, json_lines):
    ok = services.enqueue("noop", {})
    flaky = services.enqueue("flaky", {"fail_times": 1})
    dead = services.enqueue("fail", {"permanent": True})
    pool = worker_pool(threads=2)
    pool.test_signals.wait_finished([ok.id, flaky.id, dead.id])
    pool.shutdown(grace=2)
    lines = json_lines()
    with_job = [line for line in lines if "job_id" in line]
    assert with_job, lines
    for line in with_job:  # every line about a job says which job, attempt and worker
        assert {"time", "level", "logger", "message", "job_id", "job_type", "attempt",
                "worker_id"} <= set(line), line
        assert line["worker_id"].startswith(pool.process_id)

    def find(job, start):
        return [line for line in with_job
                if line["job_id"] == job.id and line["message"].startswith(start)]

    # "started" and "succeeded" lines are DEBUG (the claimed and succeeded events record
    # them); retries and failures are INFO or above.
    [succeeded] = find(ok, "succeeded")
    assert succeeded["job_type"] == "noop" and succeeded["attempt"] == 1
    assert succeeded["level"] == "DEBUG" and succeeded["worker_id"]
    assert [line["attempt"] for line in find(flaky, "succeeded")] == [2]
    [retry] = find(flaky, "retry scheduled")
    assert retry["attempt"] == 1 and retry["level"] == "INFO" and retry["job_type"] == "flaky"
    [ended] = find(dead, f"job={dead.id}")
    assert ended["level"] == "WARNING" and "ended failed" in ended["message"]
    assert ended["job_type"] == "fail" and ended["attempt"] == 1


def test_the_json_formatter_keeps_extra_fields_and_exceptions():
    record = logging.LogRecord("django_pg_jobqueue.worker", logging.ERROR, __file__, 1, "boom %s", ("x",),
                               None)
    record.job_id, record.worker_id = 7, "h-1-1"
    try:
        raise RuntimeError("kaput")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "boom x" and line["job_id"] == 7 and line["worker_id"] == "h-1-1"
    assert "RuntimeError: kaput" in line["exc"]


@pytest.mark.django_db(transaction=True)
def test_at_info_successes_are_quiet_and_failures_are_not(worker_pool, json_lines):
    ok = services.enqueue("noop", {})
    dead = services.enqueue("fail", {"permanent": True})
    pool = worker_pool(threads=2)
    pool.test_signals.wait_finished([ok.id, dead.id])
    pool.shutdown(grace=2)
    about = {}
    for line in json_lines():
        about.setdefault(line.get("job_id"), []).append(line)
    assert ok.id not in about
    assert [line["level"] for line in about[dead.id]] == ["WARNING"]


def _isolated_logger(monkeypatch):
    """This package's logger and the root logger with no handlers, as in a host whose LOGGING
    says nothing about them; restored afterwards."""
    pkg, root = logging.getLogger("django_pg_jobqueue"), logging.getLogger()
    monkeypatch.setattr(pkg, "handlers", [])
    monkeypatch.setattr(pkg, "level", logging.NOTSET)
    monkeypatch.setattr(pkg, "propagate", True)
    monkeypatch.setattr(root, "handlers", [])
    # configure_worker_logging silences the summary's logger when unset: restored afterwards.
    monkeypatch.setattr(logging.getLogger("django_pg_jobqueue.summary"), "level", logging.NOTSET)
    return pkg, root


def test_the_worker_installs_its_own_handler_when_the_hosts_logging_gives_none(monkeypatch):
    from django_pg_jobqueue.logformat import JsonFormatter, configure_worker_logging

    pkg, _ = _isolated_logger(monkeypatch)
    assert configure_worker_logging("DEBUG", "json") is True
    assert pkg.level == logging.DEBUG and not pkg.propagate
    (stream,) = pkg.handlers
    assert isinstance(stream.formatter, JsonFormatter)


def test_the_worker_leaves_a_hosts_own_logging_alone(monkeypatch):
    from django_pg_jobqueue.logformat import configure_worker_logging

    pkg, root = _isolated_logger(monkeypatch)
    hosts = logging.StreamHandler()
    root.handlers.append(hosts)
    pkg.setLevel(logging.WARNING)
    assert configure_worker_logging("DEBUG", "text") is False
    assert pkg.handlers == [] and pkg.propagate and pkg.level == logging.WARNING


@pytest.mark.django_db(transaction=True)
def test_run_job_workers_logs_each_django_tasks_line_once():
    from tests.handlers.chaos_handlers import Output
    from tests.tasks.test_tasks_backend import add

    result = add.enqueue(2, 3)
    # As in development; the task's module lies outside the installed apps, so the worker
    # imports it only when the settings name it.
    worker = spawn_workers("--threads", "1", env={
        "DEBUG": "true", "JOB_EXTRA_HANDLER_MODULES": "tests.tasks.test_tasks_backend"})
    output = Output(worker)
    try:
        # The worker's log line after the task_finished signal (the task's only run).
        output.wait_for_line("state=SUCCESSFUL", timeout=30)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        output.join(timeout=5)
    out = output.text()
    task_lines = [line for line in out.splitlines() if f"id={result.id} " in line
                  and "path=tests.tasks.test_tasks_backend.add" in line]
    assert task_lines, out[-3000:]
    # "Task id=.. state=RUNNING" and "state=SUCCESSFUL", each once and formatted
    for state in ("RUNNING", "SUCCESSFUL"):
        lines = [line for line in task_lines if f"state={state}" in line]
        assert len(lines) == 1, task_lines
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO django[._]tasks ", lines[0]), lines


# -- the summary: a line a second saying what finished ---------------------------------------
SUMMARY = "django_pg_jobqueue.summary"


@pytest.fixture
def summary_lines():
    """The lines of the summary logger, set to INFO as the demo's LOGGING sets it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger(SUMMARY)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: stream.getvalue().splitlines()
    logger.removeHandler(handler)
    logger.setLevel(old_level)


class _Job:
    def __init__(self, id):
        self.id = id


def test_the_summary_is_one_line_a_second_however_many_jobs_finish(summary_lines):
    from django_pg_jobqueue.worker.stats import PoolStats

    now = [100.0]
    stats = PoolStats(clock=lambda: now[0])
    now[0] = 100.5
    for batch in range(10):  # 5,000 successes within the first second: no line yet
        stats.completed([(batch * 500 + i, "succeeded", 0.001) for i in range(500)])
    assert summary_lines() == []
    now[0] = 101.0
    stats.completed([(5000, "succeeded", 0.001)])  # a second has passed: one line for all
    now[0] = 101.2
    stats.failed(_Job(5001), "queued")
    stats.failed(_Job(5002), "failed")
    assert summary_lines() == ["finished in the last 1.0s: 5001 succeeded"]
    now[0] = 102.5  # the renewer's pass brings out the rest of the burst
    assert stats.log_summary() == "finished in the last 1.5s: 1 retry_scheduled, 1 failed"
    now[0] = 102.7  # 0.2 s after the last line, one more finishes and the pool stops
    stats.completed([(5003, "succeeded", 0.001)])
    assert stats.log_summary(final=True) == "finished in the last 0.2s: 1 succeeded"
    now[0] = 110.0
    assert stats.log_summary() is None  # nothing finished since: no line
    assert len(summary_lines()) == 3


def test_the_summary_is_silent_unless_the_project_s_logging_names_it(monkeypatch):
    from django_pg_jobqueue.logformat import configure_worker_logging

    _isolated_logger(monkeypatch)
    summary = logging.getLogger(SUMMARY)
    configure_worker_logging("INFO", "text")
    assert not summary.isEnabledFor(logging.INFO)
    summary.setLevel(logging.INFO)  # what a LOGGING entry for it does
    configure_worker_logging("INFO", "text")
    assert summary.isEnabledFor(logging.INFO)


@pytest.mark.django_db(transaction=True)
def test_the_demo_s_worker_shows_work_happening_with_a_line_a_second():
    from django.conf import settings

    from tests.handlers.chaos_handlers import Output

    assert settings.LOGGING["loggers"][SUMMARY]["level"] == "INFO"
    jobs = [services.enqueue("noop", {"i": i}) for i in range(5)]
    worker = spawn_workers("--threads", "2", env={"JOB_LEASE_SECONDS": "3"})
    out = Output(worker)
    needle = " INFO django_pg_jobqueue.summary finished in the last "
    try:
        # Within a second of the first finished job, or of the renewer's next pass (1 s).
        out.wait_for_line(needle, timeout=30)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        out.join(timeout=5)
    assert Job.objects.filter(pk__in=[j.pk for j in jobs], status="succeeded").count() == 5
    lines = out.matching(needle)
    assert sum(int(n) for line in lines
               for n in re.findall(r"(\d+) succeeded", line)) == 5, out.text()[-3000:]
