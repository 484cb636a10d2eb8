"""manage.py queue_status: the terminal summary for people without Prometheus."""
import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, QueueSetting, WorkerProcess
from django_pg_jobqueue.services.lifecycle import Completion
from tests.utils import REPO, worker_database_url


@pytest.mark.django_db
def test_queue_status_summarises_counts_depth_throughput_workers_and_flow_control(capsys):
    now = timezone.now()
    jobs = [services.enqueue("noop", {"i": i}) for i in range(3)]
    claimed = services.claim(worker_ids=["host-a-1-1", "host-a-1-2"],
                             job_ids=[j.id for j in jobs[:2]])
    services.complete_many([Completion(claimed[0].id, claimed[0].lease_token,
                                       claimed[0].worker_id, {})])
    Job.objects.filter(pk=jobs[2].pk).update(available_at=now - timedelta(minutes=3))
    failing = services.enqueue("fail", {}, queue="mail")
    [c] = services.claim(worker_ids=["host-b-2-1"], job_ids=[failing.id])
    services.fail(c.id, c.lease_token, worker_id=c.worker_id, error="boom", permanent=True)
    QueueSetting.objects.create(queue="mail", paused=True, concurrency_limit=2)
    WorkerProcess.objects.create(id="host-a-1", hostname="host-a", pid=1, threads=4, queues=[])
    old = WorkerProcess.objects.create(id="host-b-2", hostname="host-b", pid=2, threads=2,
                                       queues=["mail"])
    WorkerProcess.objects.filter(pk=old.pk).update(heartbeat_at=now - timedelta(hours=1))

    call_command("queue_status")
    out = capsys.readouterr().out

    default = next(line for line in out.splitlines() if line.strip().startswith("default"))
    # queued, running, succeeded, failed, cancelled, waiting, runnable, oldest runnable, flow
    assert default.split() == ["default", "1", "1", "1", "0", "0", "0", "1", default.split()[8],
                               "-"]
    assert re.fullmatch(r"3\.\dm", default.split()[8])
    mail = next(line for line in out.splitlines() if line.strip().startswith("mail"))
    assert mail.split()[:7] == ["mail", "0", "0", "0", "1", "0", "0"]
    assert "PAUSED, limit 2" in mail
    assert "Queued depth: 1 (JOB_MAX_QUEUE_DEPTH off)" in out
    succeeded = next(line for line in out.splitlines() if line.strip().startswith("succeeded"))
    assert succeeded.split() == ["succeeded", "1", "1", "1"]
    failed = next(line for line in out.splitlines() if line.strip().startswith("failed "))
    assert failed.split() == ["failed", "1", "1", "1"]
    assert "Workers alive: 1 process(es), 4 thread(s)" in out
    assert re.search(r"host-a-1  alive  threads 4  queues \*  up \S+  running 1", out)
    assert re.search(rf"job {claimed[1].id} noop for ", out)
    assert re.search(r"host-b-2  SILENT 1\.0h", out)
    assert "Paused queues: mail" in out
    assert "Queue concurrency limits: mail=2" in out


@pytest.mark.django_db
def test_queue_status_on_an_empty_queue(capsys):
    call_command("queue_status")
    out = capsys.readouterr().out
    assert "Queued depth: 0" in out and "Workers alive: 0 process(es)" in out
    assert "Paused queues: none" in out
    assert "Rate limits: none" in out
    assert "Claim order (fair shares, aging): plain for every queue" in out


@pytest.mark.django_db
def test_queue_status_shows_fair_shares_weights_aging_and_rate_limits(capsys):
    services.enqueue("noop", queue="exports", fairness_key="tenant:a")
    services.enqueue("noop", queue="reports")
    services.set_queue_fairness("exports", True)
    services.set_fairness_weights("exports", {"tenant:big": 4, "tenant:*": 2})
    services.set_queue_aging("reports", 30, aging_max_priority=50)
    services.set_rate_limit(queue="exports", max_starts=20, period_seconds=1)
    services.claim(worker_ids=["host-a-1-1"], queues=["exports"])

    call_command("queue_status")
    out = capsys.readouterr().out

    assert "Rate limits: queue:exports=20/1s (used 1)" in out
    assert "  exports  turns by fairness key; weights tenant:*=2, tenant:big=4" in out
    assert ("  reports  priority, then oldest first; aging +1 priority per 30 s waited, "
            "up to 50") in out


# Without the `metrics` extra: a Python where `import prometheus_client` fails, as on the core
# install, runs the command (and /metrics says what it needs).
WITHOUT_PROMETHEUS = """
import sys
sys.modules["prometheus_client"] = None  # import prometheus_client raises ImportError
import django
django.setup()
from django.core.management import call_command
call_command("queue_status")
from django.test import RequestFactory
from django_pg_jobqueue.metrics import metrics_view
response = metrics_view(RequestFactory().get("/metrics"))
print("metrics:", response.status_code, response.content.decode().strip())
"""


@pytest.mark.django_db(transaction=True)
def test_queue_status_runs_without_prometheus_client_installed():
    services.enqueue("noop", {})
    env = {**os.environ, "DATABASE_URL": worker_database_url(),
           "DJANGO_SETTINGS_MODULE": "config.settings",
           "PYTHONPATH": os.pathsep.join([str(REPO / "backend"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", WITHOUT_PROMETHEUS], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Jobs by queue and status" in done.stdout
    default = next(line for line in done.stdout.splitlines() if line.strip().startswith("default"))
    assert default.split()[1] == "1"  # the queued job
    assert "metrics: 501 GET /metrics needs prometheus_client" in done.stdout
