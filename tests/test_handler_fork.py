"""A handler that forks, in a real worker process: a child that returns into the worker's
code instead of calling os._exit() is ended there at once, and nothing it inherited (the
worker's connections, its threads' state) is used or closed by it: the worker goes on."""
import os
import signal

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.models import Job
from tests import chaos_handlers  # noqa: F401  (registers `fork_and_return` in this process)
from tests.chaos_handlers import Output, worker_env
from tests.utils import process_alive, spawn_workers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def test_a_forked_child_that_returns_into_the_worker_exits_at_once(tmp_path):
    pid_file = tmp_path / "child.pid"
    job = services.enqueue("fork_and_return", {"pid_file": str(pid_file)})
    proc = spawn_workers("--threads", "1",
                         env=worker_env(tmp_path / "ledger.tsv", JOB_WORKER_LOG_LEVEL="INFO"))
    out = Output(proc)
    child = child_sockets = None
    try:
        wait_for(lambda: pid_file.exists() and len(pid_file.read_text().split()) == 2,
                 timeout=60,
                 message="the handler forked")
        child, child_sockets = map(int, pid_file.read_text().split())
        wait_for(lambda: Job.objects.filter(pk=job.pk, status="succeeded").exists(), timeout=30,
                 message="the forking job recorded")
        # The worker's connections are intact: it runs the next job and stops cleanly.
        other = services.enqueue("chaos", {"mode": "ok"})
        wait_for(lambda: Job.objects.filter(pk=other.pk, status="succeeded").exists(),
                 timeout=30, message="the next job succeeded")
    finally:
        if child is not None and process_alive(child):
            os.kill(child, signal.SIGKILL)  # a leftover of the code under test
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    job.refresh_from_db()
    assert {k: job.result[k] for k in ("child", "child_exit")} == {
        "child": False, "child_exit": 0}, out.text()[-3000:]
    # The worker held its PostgreSQL sockets when the handler forked; the child held none.
    assert job.result["sockets"] >= 2 and child_sockets == 0, (job.result, child_sockets)
    assert "returned into the worker" in out.text(), out.text()[-3000:]
    assert rc == 0, out.text()[-3000:]
