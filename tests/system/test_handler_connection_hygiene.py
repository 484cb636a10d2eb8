"""Nothing a handler does to its database connection can lose another job's writes, or make its
own job report a success whose writes were rolled back, or break its executor thread, or keep
the worker process from exiting.

Each test runs a real `run_job_workers` subprocess with the `hygiene` handler
(tests/handlers/hygiene_handlers.py): jobs that leave something behind on their thread's connection (a
raw transaction, a row lock, an atomic block entered and never left, session settings, a
non-daemon thread) among jobs that write a row to a plain table of the test's own. The worker
runs the demo settings, CONN_MAX_AGE = 60: the connection is kept from one job to the next.

The property test drives random mixtures of them: every job that `succeeded` has its row,
every row saw a fresh session's settings, every `write_row` job succeeds on its first attempt
(its thread keeps working), the process stays alive and `audit_jobs` is clean. `make test`
runs a few examples; POISON_FULL=1 (`make poison`) runs HYGIENE_EXAMPLES (default 40) larger
ones."""
import os
import signal
import time

import pytest
from django.db import connection
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import hygiene_handlers  # noqa: F401  (registers `hygiene` in this process)
from tests.handlers.chaos_handlers import Output, worker_env
from tests.handlers.hygiene_handlers import CREATE_ROWS_TABLE, KINDS, LEAVE_TRANSACTION, ROWS_TABLE
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

FINAL = ("succeeded", "failed", "cancelled")
GRACE = 2.0
LEFT_OPEN = "left a transaction open"
# statement_timeout (the worker's JOB_STATEMENT_TIMEOUT_MS) and search_path of a new connection
FRESH_SESSION = ("30s", '"$user", public')


class HygieneWorker:
    def __init__(self, tmp_path, threads: int):
        env = worker_env(tmp_path / "ledger.tsv", JOB_EXTRA_HANDLER_MODULES="tests.handlers.hygiene_handlers",
                         JOB_SHUTDOWN_GRACE_SECONDS=str(GRACE), CONN_MAX_AGE="60")
        self.proc = spawn_workers("--threads", str(threads), env=env)
        self.out = Output(self.proc)
        self.out.wait_for_line("running (", timeout=60)

    def alive(self) -> None:
        assert self.proc.poll() is None, "the worker process died:\n" + self.out.text()[-3000:]

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except Exception:
            self.proc.kill()
            raise


@pytest.fixture
def rows_table():
    with connection.cursor() as cur:
        cur.execute(CREATE_ROWS_TABLE)
        cur.execute(f"TRUNCATE {ROWS_TABLE}")
    yield
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {ROWS_TABLE}")


@pytest.fixture
def hygiene_worker(tmp_path, rows_table):
    workers = []

    def start(threads: int = 1) -> HygieneWorker:
        workers.append(HygieneWorker(tmp_path, threads))
        return workers[-1]

    yield start
    for worker in workers:
        if worker.proc.poll() is None:
            worker.proc.kill()
            worker.proc.wait(10)


def enqueue(kinds: list[str]) -> list[int]:
    jobs = services.enqueue_many([{"type": "hygiene", "payload": {"kind": kind}} for kind in kinds])
    return [j.id for j in jobs]


def wait_final(worker: HygieneWorker, ids: list[int], timeout: float) -> dict[int, Job]:
    try:
        wait_until_jobs(FINAL, pk__in=ids, timeout=timeout)
    except AssertionError:
        worker.alive()
        stuck = list(Job.objects.filter(pk__in=ids).exclude(status__in=FINAL)
                     .values_list("id", "payload__kind", "status", "attempts"))
        pytest.fail(f"jobs never reached a final state: {stuck}\n" + worker.out.text()[-3000:])
    return {j.id: j for j in Job.objects.filter(pk__in=ids)}


def rows() -> dict[tuple[int, int], tuple[str, str, str]]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT job_id, attempt, kind, statement_timeout, search_path FROM {ROWS_TABLE}")
        return {(job_id, attempt): rest for job_id, attempt, *rest in cur.fetchall()}


def check(worker: HygieneWorker, ids: list[int], kinds: list[str], jobs: dict[int, Job]) -> None:
    """What every test here asserts of a finished mixture."""
    written = rows()
    for job_id, kind in zip(ids, kinds):
        job, where = jobs[job_id], f"job {job_id} ({kind})"
        if kind == "write_row":
            # its thread kept working: the first attempt succeeded, its row is there
            assert (job.status, job.attempts) == ("succeeded", 1), f"{where}: {job.last_error}"
        if job.status == "succeeded" and kind in ("write_row", "close_connection"):
            assert (job_id, job.attempts) in written, f"{where} succeeded without its row"
        if kind in LEAVE_TRANSACTION:
            assert job.status == "failed", f"{where}: {job.status}"
            assert LEFT_OPEN in job.last_error and "rolled back" in job.last_error, job.last_error
            assert not [key for key in written if key[0] == job_id], f"{where}: its row was kept"
        if job.status == "succeeded":
            assert HistoryEvent.objects.filter(job_id=job_id, kind="succeeded").count() == 1, where
    for (job_id, attempt), (kind, timeout, search_path) in written.items():
        assert (timeout, search_path) == FRESH_SESSION, \
            f"job {job_id} ({kind}) ran in a session another job had changed"
    worker.alive()
    assert not worker.out.matching("unexpected error"), worker.out.text()[-3000:]
    report = audit()
    assert report.ok, report.format()


def _hostile_then_30_writes(hygiene_worker, hostile):
    """One `hostile` job then 30 `write_row` jobs on one thread: the hostile one fails, every
    write succeeds with its row (check), and the 30 rows exist. Returns (ids, jobs)."""
    worker = hygiene_worker(threads=1)
    kinds = [hostile] + ["write_row"] * 30
    ids = enqueue(kinds)
    jobs = wait_final(worker, ids, timeout=40)
    check(worker, ids, kinds, jobs)
    assert len(rows()) == 30
    return ids, jobs


# --- a raw transaction left open ------------------------------------------------------------
@pytest.mark.parametrize("hostile", ["leave_begin", "leave_begin_after_a_write", "lock_own_row",
                                     "leave_aborted"])
def test_a_handler_that_leaves_a_raw_transaction_open_fails_and_later_jobs_keep_their_writes(
        hygiene_worker, hostile):
    ids, jobs = _hostile_then_30_writes(hygiene_worker, hostile)
    assert jobs[ids[0]].attempts == 2  # an ordinary failure: retried, and failed again


# --- transaction.atomic() entered and never left --------------------------------------------
@pytest.mark.parametrize("hostile", ["leave_atomic", "leave_atomic_after_a_write",
                                     "leave_nested_atomic", "leave_atomic_broken",
                                     "leave_autocommit_off"])
def test_a_handler_that_leaves_an_atomic_block_entered_fails_and_its_thread_keeps_working(
        hygiene_worker, hostile):
    _hostile_then_30_writes(hygiene_worker, hostile)


# --- session state ----------------------------------------------------------------------------
def test_session_settings_a_handler_changed_do_not_reach_the_next_job(hygiene_worker):
    worker = hygiene_worker(threads=1)
    kinds = ["set_statement_timeout", "write_row", "set_search_path", "write_row",
             "set_local_in_left_transaction", "write_row", "advisory_lock", "write_row"]
    ids = enqueue(kinds)
    jobs = wait_final(worker, ids, timeout=30)
    check(worker, ids, kinds, jobs)
    for job_id, kind in zip(ids, kinds):
        if kind in ("set_statement_timeout", "set_search_path", "advisory_lock"):
            assert jobs[job_id].status == "succeeded", jobs[job_id].last_error  # not a write
    with connection.cursor() as cur:  # the advisory lock went with the job's session
        cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        assert cur.fetchone()[0] == 0


# --- a handler's non-daemon thread ------------------------------------------------------------
def test_the_worker_exits_0_after_sigterm_though_a_handler_left_a_non_daemon_thread(
        hygiene_worker):
    worker = hygiene_worker(threads=1)
    ids = enqueue(["sleep_in_thread", "write_row"])
    wait_final(worker, ids, timeout=20)
    signalled = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    try:
        rc = worker.proc.wait(GRACE + 5)
    except Exception:
        pytest.fail("the worker still runs after SIGTERM:\n" + worker.out.text()[-3000:])
    took = time.monotonic() - signalled
    assert rc == 0, worker.out.text()[-3000:]
    assert took < GRACE + 5
    worker.out.join(5)  # the rest of its output
    assert worker.out.matching("handler-sleeper"), worker.out.text()[-3000:]


# --- testing.drain runs the same pipeline -----------------------------------------------------
@pytest.mark.parametrize("hostile", ["leave_begin_after_a_write", "leave_atomic_after_a_write"])
def test_drain_fails_a_job_whose_handler_left_a_transaction_open_and_rolls_it_back(
        rows_table, hostile):
    from django_pg_jobqueue.testing import drain

    [bad, good] = enqueue([hostile, "write_row"])
    result = drain()
    assert (result.retried, result.succeeded) == (1, 1), result.errors
    assert LEFT_OPEN in Job.objects.get(pk=bad).last_error
    assert not connection.in_atomic_block and connection.connection.info.transaction_status == 0
    assert set(rows()) == {(good, 1)}


@pytest.mark.django_db(transaction=False)
def test_drain_inside_a_tests_transaction_rolls_back_only_what_the_handler_left(rows_table):
    from django_pg_jobqueue.testing import drain

    depth = len(connection.atomic_blocks)
    [bad, good] = enqueue(["leave_nested_atomic", "write_row"])
    result = drain()
    assert (result.retried, result.succeeded) == (1, 1), result.errors
    assert LEFT_OPEN in Job.objects.get(pk=bad).last_error
    assert len(connection.atomic_blocks) == depth and connection.in_atomic_block
    assert set(rows()) == {(good, 1)}  # the handler's own row went with its savepoint


# --- property ---------------------------------------------------------------------------------
HOSTILE = sorted(set(KINDS) - {"write_row", "sleep_in_thread"})
kind_strategy = st.one_of(st.just("write_row"), st.sampled_from(HOSTILE))  # about half rows
EVERY_KIND = [kind for hostile in HOSTILE for kind in (hostile, "write_row")]
PROPERTY_SETTINGS = {
    "deadline": None, "database": None, "print_blob": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@pytest.fixture
def property_worker(hygiene_worker):
    return hygiene_worker(threads=2)


def run_mixture(worker: HygieneWorker, kinds: list[str]) -> None:
    ids = enqueue(kinds)
    jobs = wait_final(worker, ids, timeout=20 + len(kinds))
    check(worker, ids, kinds, jobs)


@settings(max_examples=3, **PROPERTY_SETTINGS)
@given(kinds=st.lists(kind_strategy, min_size=1, max_size=12))
@example(kinds=EVERY_KIND)
def test_no_mixture_of_connection_abuse_loses_a_write_or_breaks_a_thread(property_worker, kinds):
    run_mixture(property_worker, kinds)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("POISON_FULL"),
                    reason="long connection-hygiene property run: POISON_FULL=1 (make poison)")
@pytest.mark.timeout(3600)
@settings(max_examples=int(os.environ.get("HYGIENE_EXAMPLES", "40")), **PROPERTY_SETTINGS)
@given(kinds=st.lists(kind_strategy, min_size=1, max_size=60))
@example(kinds=EVERY_KIND)
def test_no_mixture_of_connection_abuse_loses_a_write_or_breaks_a_thread_long(property_worker,
                                                                              kinds):
    run_mixture(property_worker, kinds)
