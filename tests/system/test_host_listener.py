"""One LISTEN connection per host: under `run_job_workers --processes N` the supervisor holds
the host's only LISTEN connection and wakes one child per notification, so a job enqueued
alone is claimed by one child, not by every child; a burst still spreads over all of them;
and when the supervisor's LISTEN connection is lost (and cannot come back) the children still
pick up every job by polling, and the supervisor listens again once it can."""
import re
import time
import uuid

import pytest
from django.db import connection

from django_pg_jobqueue.services import enqueue, enqueue_many
from tests.handlers.chaos_handlers import Ledger, Output
from tests.utils import (
    spawn_workers,
    stop_workers,
    wait_until_jobs,
    worker_database_url,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

CLAIM = re.compile(r"polled, claimed (\d+) of \d+")
CHILDREN = 4


def _env(**extra) -> dict:
    env = {"JOB_WORKER_LOG_LEVEL": "DEBUG", "JOB_POLL_JITTER_SECONDS": "0.1",
           "JOB_LEASE_SECONDS": "6"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _listeners(user: str | None = None) -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND application_name = 'jobqueue-listener' "
                    "AND (%s::text IS NULL OR usename = %s::text)", [user, user])
        return cur.fetchone()[0]


LISTENING = "LISTEN connection up"  # the supervisor's line once its LISTEN connection is up


def _wait_host_up(out: Output, children: int, role: str | None = None) -> None:
    """Until every child's pool started (its own line, under its process id) and, after the
    supervisor's LISTEN connection came up, the children claimed (found nothing): the
    wake-everyone that follows a connection, or a child's first poll. The host then holds its
    one LISTEN connection."""
    out.wait_for_line(" starting: ", count=children, timeout=90)
    out.wait_for_line("polled, claimed 0 of", count=children, after=LISTENING, timeout=90)
    assert _listeners(role) == 1


def _claims(out: Output, since: float) -> tuple[int, int]:
    """(claims, of which empty) the children logged since `since` (monotonic)."""
    counts = [int(CLAIM.search(line).group(1)) for line in out.matching("polled, claimed", since)]
    return len(counts), counts.count(0)


def test_one_job_enqueued_to_a_supervisor_of_several_children_is_claimed_by_one_child():
    # Polls rare enough not to blur the count: only the notifications make the children claim.
    proc = spawn_workers("--processes", str(CHILDREN), "--threads", "1",
                         env=_env(JOB_POLL_INTERVAL_SECONDS=10, JOB_POLL_INTERVAL_MAX_SECONDS=60))
    out = Output(proc)
    try:
        # The host holds one LISTEN connection, the supervisor's, not one per child.
        _wait_host_up(out, CHILDREN)
        start, jobs = time.monotonic(), 12
        for i in range(jobs):
            job = enqueue("noop", {"i": i})
            # One job at a time: the next once the child that ran it says it succeeded.
            out.wait_for_line(f"succeeded job={job.pk} ", timeout=15)
        claims, empty = _claims(out, start)
        # Each job: the one woken child's claim, then (when it came back full) one more that
        # finds nothing. Every child woken by every job would make at
        # least CHILDREN + 1 claims a job; a stray poll or two may add to the count.
        assert claims <= 2 * jobs + CHILDREN, (claims, empty)
        assert empty <= jobs + CHILDREN, (claims, empty)
    finally:
        stop_workers(proc, timeout=40)
    assert proc.returncode == 0, out.text()[-3000:]


def test_a_burst_enqueued_in_one_batch_is_shared_by_the_children(tmp_path):
    ledger = tmp_path / "ledger.tsv"
    proc = spawn_workers("--processes", str(CHILDREN), "--threads", "1",
                         env=_env(JOB_POLL_INTERVAL_SECONDS=10, JOB_POLL_INTERVAL_MAX_SECONDS=60,
                                  JOB_EXTRA_HANDLER_MODULES="tests.handlers.chaos_handlers",
                                  CHAOS_LEDGER=ledger))
    out = Output(proc)
    try:
        _wait_host_up(out, CHILDREN)
        # One NOTIFY for 40 jobs of 0.2 s each: one child alone would need 8 s.
        enqueue_many([{"type": "chaos", "payload": {"mode": "ok", "seconds": 0.2}}
                      for _ in range(40)])
        wait_until_jobs("succeeded", timeout=60, message="the burst ran")
        executions = Ledger.read(ledger).executions.values()
        assert len({x.pid for x in executions}) == CHILDREN, "every child ran some of them"
    finally:
        stop_workers(proc, timeout=40)
    assert proc.returncode == 0, out.text()[-3000:]


@pytest.fixture
def listen_role():
    """A role of its own for the supervisor's LISTEN connection (JOB_LISTEN_DATABASE_URL), so
    that the test can end that connection and keep it from coming back (NOLOGIN)."""
    name = f"jq_listen_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cur:
        cur.execute(f"CREATE ROLE {name} LOGIN")
    url = worker_database_url()
    scheme, rest = url.split("://", 1)
    yield name, f"{scheme}://{name}@{rest.split('@', 1)[1]}"
    with connection.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    [name])
        cur.execute(f"DROP ROLE IF EXISTS {name}")


def test_children_still_pick_up_work_when_the_supervisors_listen_connection_is_gone(
        listen_role):
    role, listen_url = listen_role
    proc = spawn_workers("--processes", "3", "--threads", "1",
                         env=_env(JOB_POLL_INTERVAL_SECONDS=0.5, JOB_POLL_INTERVAL_MAX_SECONDS=4,
                                  JOB_LISTEN_DATABASE_URL=listen_url))
    out = Output(proc)
    try:
        _wait_host_up(out, 3, role)
        # Idle long enough for the children to back off to the ceiling: four claims each that
        # found nothing (0.5 s doubled from the second on: 4 s next).
        out.wait_for_line("polled, claimed 0 of", count=3 * 4, after=LISTENING, timeout=30)
        with connection.cursor() as cur:
            cur.execute(f"ALTER ROLE {role} NOLOGIN")  # the listener cannot reconnect
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE usename = %s", [role])
        out.wait_for_line("listener:", timeout=10)  # the supervisor logs its lost connection
        assert _listeners(role) == 0
        # No notification reaches any child now: they find the jobs by polling.
        jobs = [enqueue("noop", {"i": i}) for i in range(5)]
        wait_until_jobs("succeeded", pk__in=[j.pk for j in jobs], timeout=20,
                        message="the jobs ran without LISTEN")
        assert _listeners(role) == 0
        with connection.cursor() as cur:
            cur.execute(f"ALTER ROLE {role} LOGIN")
        out.wait_for_line(LISTENING, count=2, timeout=40)  # the supervisor listens again
        assert _listeners(role) == 1
        job = enqueue("noop", {"after": "reconnect"})
        wait_until_jobs("succeeded", pk=job.pk, timeout=15,
                        message="a job after the reconnect ran")
    finally:
        stop_workers(proc, timeout=40)
    assert proc.returncode == 0, out.text()[-3000:]
