"""Property: no mixture of hostile handlers wedges a real `run_job_workers` process.

Hypothesis draws mixtures of jobs of the `poison` handler (tests/handlers/poison_handlers.py): results
with NUL and lone surrogates, huge, circular, deeply nested and non-JSON results; exceptions
that are unprintable or carry NUL, SystemExit, KeyboardInterrupt, GeneratorExit, the handler's
own BaseException, a spurious LeaseLost, a handler overrunning its timeout; among ordinary
jobs. One worker subprocess (3 threads, prefetch on) runs every example. After each:

- every job reaches a final state within the bound its attempts, lease, timeout and retry
  backoff allow, and the state its kind dictates (stored cleaned: succeeded; unstorable:
  failed at once; raising: failed after all its attempts);
- every ordinary job succeeded exactly once (one execution in the ledger, one `succeeded`);
- the process is alive, heartbeating, and logged no "unexpected error";
- `audit_jobs` is clean.

`make test` runs a short variant (an example holding every kind, and a few drawn ones);
`make poison` (POISON_FULL=1) a long one (POISON_EXAMPLES, default 60).
"""
import os
import signal

import pytest
from django.db import connection
from django.db.models import Count
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import HistoryEvent, Job
from tests.handlers import poison_handlers  # noqa: F401  (registers `poison` in this process)
from tests.handlers.chaos_handlers import LEASE_SECONDS, REAPER_INTERVAL_SECONDS, Output, worker_env
from tests.handlers.poison_handlers import KINDS, ORDINARY, OVERRUN_SECONDS, read_ledger
from tests.utils import spawn_workers, wait_until_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

THREADS, PREFETCH = 3, 2
RETRY_MAX_SECONDS = 0.5  # worker_env's JOB_RETRY_MAX_SECONDS
TIMEOUT_SECONDS = 1  # for the `overruns_timeout` kind
FINAL = ("succeeded", "failed", "cancelled")

job_strategy = st.tuples(
    st.one_of(st.just(ORDINARY), st.sampled_from(sorted(KINDS))),  # about half ordinary
    st.integers(min_value=1, max_value=3),  # max_attempts
)
EVERY_KIND = [(kind, 2) for kind in sorted(KINDS)] + [(ORDINARY, 1)] * 6


def bound_seconds(kind: str, max_attempts: int, backlog: int) -> float:
    """How long a job may take from enqueue to its final state: per attempt a lease and a
    reaper pass (a job dropped by its handler's LeaseLost waits for both) or its timeout and
    a renewal, plus the retry backoff; plus the queue ahead of it on THREADS threads."""
    per_attempt = max(LEASE_SECONDS + REAPER_INTERVAL_SECONDS, OVERRUN_SECONDS) \
        + RETRY_MAX_SECONDS + 1.0
    return 5.0 + max_attempts * per_attempt + backlog * 2.0 / THREADS


class PoisonWorker:
    def __init__(self, ledger):
        env = worker_env(ledger, JOB_EXTRA_HANDLER_MODULES="tests.handlers.poison_handlers",
                         POISON_LEDGER=str(ledger))
        self.proc = spawn_workers("--threads", str(THREADS), "--prefetch", str(PREFETCH), env=env)
        self.out = Output(self.proc)
        self.out.wait_for_line("running (", timeout=60)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@pytest.fixture
def poison_worker(tmp_path):
    ledger = tmp_path / "poison-ledger.tsv"
    worker = PoisonWorker(ledger)
    worker.ledger = ledger
    yield worker
    worker.stop()


def run_mixture(worker: PoisonWorker, mixture: list[tuple[str, int]]) -> None:
    jobs = services.enqueue_many([
        {"type": "poison", "payload": {"kind": kind}, "max_attempts": attempts,
         **({"timeout_seconds": TIMEOUT_SECONDS} if kind == "overruns_timeout" else {})}
        for kind, attempts in mixture])
    ids = [j.id for j in jobs]
    bounds = {j.id: bound_seconds(kind, attempts, len(mixture))
              for j, (kind, attempts) in zip(jobs, mixture)}
    try:
        wait_until_jobs(FINAL, pk__in=ids, timeout=max(bounds.values()) + 5)
    except AssertionError:
        assert worker.proc.poll() is None, "the worker process died:\n" + worker.out.text()[-3000:]
        stuck = list(Job.objects.filter(pk__in=ids).exclude(status__in=FINAL)
                     .values_list("id", "payload__kind", "status", "attempts"))
        pytest.fail(f"jobs never reached a final state: {stuck}\n" + worker.out.text()[-3000:])

    runs = read_ledger(worker.ledger)
    rows = {j.id: j for j in Job.objects.filter(pk__in=ids)}
    successes = dict(HistoryEvent.objects.filter(job_id__in=ids, kind="succeeded")
                     .values_list("job_id").annotate(n=Count("id")).values_list("job_id", "n"))
    for job_id, (kind, attempts) in zip(ids, mixture):
        row = rows[job_id]
        _, expected_status, spent = KINDS[kind]
        expected_attempts = 1 if spent == "one" else attempts
        where = f"job {job_id} ({kind}, max_attempts {attempts})"
        assert row.status == expected_status, f"{where}: {row.status}, {row.last_error!r}"
        assert row.attempts == expected_attempts, f"{where}: {row.attempts} attempt(s)"
        assert len(runs.get(job_id, [])) == expected_attempts, f"{where}: ran {runs.get(job_id)}"
        assert successes.get(job_id, 0) == (1 if expected_status == "succeeded" else 0), where
        took = (row.finished_at - row.created_at).total_seconds()
        assert took <= bounds[job_id], f"{where}: took {took:.1f}s, bound {bounds[job_id]:.1f}s"
        if row.last_error is not None:
            assert len(row.last_error) <= 10000 and "\x00" not in row.last_error, where
        if expected_status == "failed" and kind.startswith("result_"):
            assert HistoryEvent.objects.get(job_id=job_id, kind="failed").data["reason"] == "bad_result"
    for job_id, (kind, _) in zip(ids, mixture):
        if kind == "result_nul":
            assert rows[job_id].result == {"text": "a\ufffdb", "k\ufffd": ["\ufffd"]}

    assert worker.proc.poll() is None, "the worker process died:\n" + worker.out.text()[-3000:]
    assert not worker.out.matching("unexpected error"), worker.out.text()[-3000:]
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM job_workers WHERE pid = %s"
                    " AND heartbeat_at > now() - interval '10 seconds'", [worker.proc.pid])
        assert cur.fetchone()[0] == 1, "the worker process stopped heartbeating"
    report = audit()
    assert report.ok, report.format()


PROPERTY_SETTINGS = {
    "deadline": None, "database": None, "print_blob": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@settings(max_examples=2, **PROPERTY_SETTINGS)
@given(mixture=st.lists(job_strategy, min_size=1, max_size=10))
@example(mixture=EVERY_KIND)
def test_no_mixture_of_hostile_handlers_wedges_a_worker_process(poison_worker, mixture):
    run_mixture(poison_worker, mixture)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("POISON_FULL"),
                    reason="long hostile-handler property run: POISON_FULL=1 (make poison)")
@pytest.mark.timeout(3600)
@settings(max_examples=int(os.environ.get("POISON_EXAMPLES", "60")), **PROPERTY_SETTINGS)
@given(mixture=st.lists(job_strategy, min_size=1, max_size=40))
@example(mixture=EVERY_KIND)
def test_no_mixture_of_hostile_handlers_wedges_a_worker_process_long(poison_worker, mixture):
    run_mixture(poison_worker, mixture)


def test_the_worker_process_stops_cleanly_after_hostile_handlers(poison_worker):
    run_mixture(poison_worker, [("system_exit", 1), ("keyboard_interrupt", 1), (ORDINARY, 1),
                                ("result_nul", 1), ("raise_unprintable", 1)])
    assert poison_worker.stop() == 0, poison_worker.out.text()[-2000:]
    assert not Job.objects.filter(status="running").exists()
    with connection.cursor() as cur:  # its heartbeat row goes with it
        cur.execute("SELECT count(*) FROM job_workers WHERE pid = %s", [poison_worker.proc.pid])
        assert cur.fetchone()[0] == 0
