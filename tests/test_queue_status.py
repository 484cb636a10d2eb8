"""manage.py queue_status: the terminal summary for people without Prometheus."""
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job, QueueSetting, WorkerProcess
from django_pg_jobqueue.services.lifecycle import Completion


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
    # queued, running, succeeded, failed, cancelled, runnable, oldest runnable, flow
    assert default.split() == ["default", "1", "1", "1", "0", "0", "1", default.split()[7], "-"]
    assert re.fullmatch(r"3\.\dm", default.split()[7])
    mail = next(line for line in out.splitlines() if line.strip().startswith("mail"))
    assert mail.split()[:6] == ["mail", "0", "0", "0", "1", "0"]
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
