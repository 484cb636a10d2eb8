"""Helpers for the suite's own tests (users get `django_pg_jobqueue.testing`)."""
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.db import close_old_connections

REPO = Path(__file__).resolve().parents[1]


def manage(env: dict, *args: str, timeout: float = 240) -> str:
    """`manage.py *args` in a child process with `env` (another cluster's settings, say); its
    output, or an assertion error with the end of what it printed when it fails."""
    result = subprocess.run([sys.executable, str(REPO / "manage.py"), *args], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05, message: str = ""):
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(interval)  # the one polling interval: another process, or a row, has no signal


def wait_until_no_session(count_sessions, name: str, timeout: float = 5.0) -> None:
    """Poll `count_sessions()` (the sessions named `name`) until it is 0. A closed session's
    backend leaves pg_stat_activity once its process has exited, which a loaded machine may
    put off for a moment; a kept one stays for good. Nothing reports either, hence the poll."""
    wait_for(lambda: count_sessions() == 0, timeout=timeout, message=f"no session named {name}")


async def give_back_the_loop() -> None:
    """What an `async def` handler or task does between awaits: it lets the event loop run
    others."""
    await asyncio.sleep(0.01)  # by design: the handler gives the event loop back once


def wait_until_jobs(status: str | tuple[str, ...], *, count: int | None = None,
                    at_least: int | None = None, timeout: float = 30.0, message: str = "",
                    using: str | None = None, **filters):
    """Wait until the jobs `filters` select (Job.objects.filter(**filters); every job if none)
    are all in `status` (one or a tuple), or, with `count`, until exactly `count` of them are
    (`at_least`: that many or more); return those jobs. Fail the test after `timeout` seconds.
    `using`: the database alias to read (the router's, by default).

    For jobs run by `run_job_workers` subprocesses: no in-process test signal reaches here from
    another OS process, and no NOTIFY tells an outcome, so this reads the rows (every 50 ms,
    one query). In-process pools wait on `pool.test_signals` instead."""
    from django_pg_jobqueue.models import Job

    statuses = (status,) if isinstance(status, str) else tuple(status)
    selected = (Job.objects.using(using) if using else Job.objects).filter(**filters)

    def settled():  # (the jobs,) once settled: a tuple, truthy even with no job
        if count is not None or at_least is not None:
            jobs = list(selected.filter(status__in=statuses))
            return (jobs,) if (len(jobs) == count if count is not None
                               else len(jobs) >= (at_least or 0)) else None
        return None if selected.exclude(status__in=statuses).exists() else (list(selected),)

    what = f"{count if count is not None else at_least or 'every'} job(s) {filters or ''} {'/'.join(statuses)}"
    return wait_for(settled, timeout, message=message or what)[0]


def maintenance_leader() -> str | None:
    """The process id that holds the maintenance leader's lease now (unexpired), or None."""
    from django.db import connection

    from django_pg_jobqueue.worker.leader import MAINTENANCE

    with connection.cursor() as cur:
        cur.execute("SELECT holder FROM job_leader WHERE role = %s AND expires_at > now()",
                    [MAINTENANCE])
        row = cur.fetchone()
    return row[0] if row else None


def wait_for_leader(*, other_than: str | None = None, timeout: float = 60.0) -> str:
    """Wait until a `run_job_workers` process (another than `other_than`) holds the
    maintenance leader's lease: its process id. Reads the lease's row, as wait_until_jobs
    reads jobs': the leader is another OS process."""
    return wait_for(lambda: (h := maintenance_leader()) and h != other_than and h, timeout,
                    message="a new leader" if other_than else "a leader elected")


def stop_gracefully(proc: subprocess.Popen, out=None, timeout: float = 20) -> int:
    """SIGTERM a worker process (if still running) and wait for it: its exit code. One that
    has not exited within `timeout` is killed and fails the test with its output's tail
    (`out`: its tests.handlers.chaos_handlers.Output)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            tail = out.text()[-4000:] if out is not None else ""
            raise AssertionError(f"{proc.args[2:]} did not stop on SIGTERM:\n{tail}") from None
    return proc.returncode


def start_pool(**kwargs):
    """A started in-process WorkerPool with test signals on: wait on `pool.test_signals`
    (django_pg_jobqueue.worker.signals) rather than polling for what the pool does."""
    from django_pg_jobqueue.worker.pool import WorkerPool
    from django_pg_jobqueue.worker.signals import TestSignals

    kwargs.setdefault("threads", 4)
    kwargs.setdefault("test_signals", TestSignals())
    return WorkerPool(**kwargs).start()


def worker_database_url() -> str:
    """A DATABASE_URL for the test database, for worker subprocesses."""
    from django.db import connection

    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def spawn_workers(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """Start `manage.py run_job_workers` as a real subprocess against the test database."""
    full_env = {**os.environ, "DATABASE_URL": worker_database_url(), "PYTHONUNBUFFERED": "1",
                **(env or {})}
    return subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "run_job_workers", *args],
        env=full_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        **popen,
    )


def stop_workers(*procs: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM every worker process still running (a graceful stop for all at once), then wait
    for each; one that has not exited within `timeout` is killed."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


def circular_dict():
    """A dict that contains itself: what a handler's careless result can be."""
    loop = {"name": "loop"}
    loop["self"] = loop
    return loop


def deeply_nested_list(depth: int = 5000):
    """A list nested deeper than any JSON encoder recurses."""
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def finish_job(job_id, status):
    """Move a job to a finished status through the services (claim, then fail/complete)."""
    from django_pg_jobqueue import services
    from django_pg_jobqueue.states import Status

    claimed = services.claim(worker_ids=["test-1-0"], job_ids=[job_id])
    assert claimed and claimed[0].id == job_id
    job = claimed[0]
    if status == Status.SUCCEEDED:
        services.complete(job.id, job.lease_token, worker_id="test-1-0", result={"ok": True})
    else:
        services.fail(job.id, job.lease_token, worker_id="test-1-0", error="boom", permanent=True)


def job_owner_pk(client) -> int:
    """The id of the user an API client is logged in as (idempotency keys are scoped by it)."""
    return client.get("/api/v1/auth/me/").json()["id"]


def process_alive(pid: int) -> bool:
    """Whether a process with this pid still exists (signal 0 probes without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
