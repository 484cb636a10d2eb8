"""Poison handlers: nothing a handler returns or raises may wedge a worker, stall ----------
other jobs, or leave its job running forever.

Each test runs a real in-process WorkerPool (or the `drain` test helper, which runs the
worker's own executor) against PostgreSQL, with a hostile handler among ordinary jobs."""
import os
import re
import socket
import sys
import threading

import pytest
from django.db import DataError, connection
from django.test import override_settings

from django_pg_jobqueue import services
from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.models import HistoryEvent, Job
from django_pg_jobqueue.testing import drain
from tests.utils import circular_dict, deeply_nested_list

pytestmark = pytest.mark.django_db(transaction=True)


def final(pool, *jobs, timeout=20.0):
    """The jobs' rows once `pool` wrote each one's final outcome (its test signals)."""
    pool.test_signals.wait_finished([j.pk for j in jobs], timeout)
    return {j.pk: Job.objects.get(pk=j.pk) for j in jobs}


def reason(job, kind="failed"):
    return HistoryEvent.objects.filter(job_id=job.pk, kind=kind).latest("id").data["reason"]


def noops(n):
    return [services.enqueue("noop", {"i": i}) for i in range(n)]


class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no str for you")


class CustomBase(BaseException):
    pass


# --- a NUL byte in a result -----------------------------------------------------------------
def test_a_result_holding_nul_bytes_is_stored_with_replacement_characters_and_later_successes_complete(
        worker_pool, custom_handler):
    custom_handler("nul_result", lambda ctx, payload: {"text": "a\x00b", "k\x00": ["\x00"]})
    bad = services.enqueue("nul_result")
    pool = worker_pool(threads=2)
    rows = final(pool, bad)
    later = noops(5)
    rows.update(final(pool, *later))
    assert rows[bad.pk].status == "succeeded"
    assert rows[bad.pk].result == {"text": "a\ufffdb", "k\ufffd": ["\ufffd"]}
    assert {rows[j.pk].status for j in later} == {"succeeded"}
    assert pool.completer.wait_idle(5) and len(pool.held) == 0
    assert audit().ok


def test_a_result_holding_lone_surrogates_is_stored_cleaned_and_a_real_pair_is_kept(
        worker_pool, custom_handler):
    custom_handler("surrogate_result",
                   lambda ctx, payload: {"lone": "x\ud800y", "low": "\udc00", "pair": "\U0001f600",
                                         "escaped_backslash": "\\u0000"})
    job = services.enqueue("surrogate_result")
    pool = worker_pool(threads=1)
    row = final(pool, job)[job.pk]
    assert row.status == "succeeded"
    assert row.result == {"lone": "x\ufffdy", "low": "\ufffd", "pair": "\U0001f600",
                          "escaped_backslash": "\\u0000"}


def test_one_completion_the_database_refuses_fails_alone_and_spares_the_rest_of_its_batch(
        transactional_db):
    """The completer's batch statement fails: it falls back to row by row; the bad row ends
    failed for good with the database's error, the others succeed, nothing stays held."""
    from django_pg_jobqueue.services.lifecycle import Completion
    from django_pg_jobqueue.worker.completer import Completer
    from django_pg_jobqueue.worker.held import Held, HeldJobs

    jobs = noops(4)
    claimed = services.claim(worker_ids=["proc-1"] * 4, lease_seconds=30)
    held = HeldJobs()
    completer = Completer(held)
    for c in claimed:
        held.add(Held.of(c, "proc-1", owner=completer))
    batch = [Completion(c.id, c.lease_token, "proc-1", None, c.type, c.attempt, '{"ok": true}')
             for c in claimed]
    poisoned = batch[1]
    poisoned.result_json = '{"text": "a\\u0000b"}'  # what jsonb refuses, past every cleaning
    completer.flush(batch)
    rows = {j.pk: Job.objects.get(pk=j.pk) for j in jobs}
    assert rows[poisoned.job_id].status == "failed"
    assert "could not be stored" in rows[poisoned.job_id].last_error
    assert HistoryEvent.objects.get(job_id=poisoned.job_id, kind="failed").data["reason"] == "bad_result"
    assert sorted(r.status for pk, r in rows.items() if pk != poisoned.job_id) == ["succeeded"] * 3
    assert len(held) == 0
    assert audit().ok


def test_a_completion_that_cannot_be_written_even_as_a_failure_is_left_to_its_lease_expiry(
        transactional_db):
    from django_pg_jobqueue.engine import PostgresEngine
    from django_pg_jobqueue.services.lifecycle import Completion
    from django_pg_jobqueue.worker.completer import Completer
    from django_pg_jobqueue.worker.held import Held, HeldJobs
    from django_pg_jobqueue.worker.renewer import LeaseRenewer

    job = services.enqueue("noop")
    [c] = services.claim(worker_ids=["proc-1"], lease_seconds=30)
    held = HeldJobs()

    class RefusesFailures(PostgresEngine):
        def fail(self, *args, **kwargs):
            raise DataError("the database refuses this row")

    completer = Completer(held, engine=RefusesFailures())
    held.add(Held.of(c, "proc-1", owner=completer))
    completer.flush([Completion(c.id, c.lease_token, "proc-1", None, c.type, c.attempt,
                                '"\\u0000"')])
    assert len(held) == 0, "no longer held: its renewals stop"
    before = Job.objects.get(pk=job.pk).lease_expires_at
    LeaseRenewer(held, process_id="proc", threads=1, queues=["*"]).run_once()
    row = Job.objects.get(pk=job.pk)
    assert row.status == "running" and row.lease_expires_at == before


# --- an error that cannot be written --------------------------------------------------------
@pytest.mark.parametrize("exc, expected", [
    (RuntimeError("bad\x00"), "RuntimeError: bad\ufffd"),
    (RuntimeError("half a pair \ud800"), "RuntimeError: half a pair \ufffd"),
    (Unprintable(), "Unprintable: [str() of the exception raised ValueError]"),
], ids=["nul", "lone_surrogate", "str_raises"])
def test_an_error_postgres_cannot_store_fails_the_job_with_a_cleaned_message(
        worker_pool, custom_handler, exc, expected):
    def raises(ctx, payload):
        raise exc

    custom_handler("bad_error", raises)
    job = services.enqueue("bad_error", max_attempts=2)
    later = noops(3)
    pool = worker_pool(threads=1)
    rows = final(pool, job, *later)
    row = rows[job.pk]
    assert row.status == "failed" and row.attempts == 2, "retried once, as any error"
    assert row.last_error == expected
    assert "Traceback (most recent call last)" in row.last_traceback
    assert "\x00" not in row.last_traceback
    assert {rows[j.pk].status for j in later} == {"succeeded"}
    assert audit().ok


def test_progress_and_log_messages_with_nul_and_lone_surrogates_are_stored_cleaned(
        worker_pool, custom_handler):
    def chatty(ctx, payload):
        ctx.progress(50, "half\x00way \udfff")
        ctx.log("line\x00one", detail="d\x00", nested={"k\ud800": ["\x00"]})
        return {"ok": True}

    custom_handler("chatty", chatty)
    job = services.enqueue("chatty")
    pool = worker_pool(threads=1)
    assert final(pool, job)[job.pk].status == "succeeded"
    progress = HistoryEvent.objects.get(job_id=job.pk, kind="progress")
    logged = HistoryEvent.objects.get(job_id=job.pk, kind="log")
    assert progress.message == "half\ufffdway \ufffd"
    assert logged.message == "line\ufffdone"
    assert logged.data == {"detail": "d\ufffd", "nested": {"k\ufffd": ["\ufffd"]}}


# --- a BaseException does not kill the executor thread --------------------------------------
@pytest.mark.parametrize("exc, expected", [
    (SystemExit(1), "SystemExit: 1"),
    (KeyboardInterrupt(), "KeyboardInterrupt"),
    (GeneratorExit("closed"), "GeneratorExit: closed"),
    (CustomBase("mine"), "CustomBase: mine"),
], ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit", "custom_BaseException"])
def test_a_base_exception_from_a_handler_fails_its_job_and_the_thread_runs_the_next_ones(
        worker_pool, custom_handler, exc, expected):
    def raises(ctx, payload):
        raise exc

    custom_handler("base_exc", raises)
    job = services.enqueue("base_exc", max_attempts=1, priority=5)  # runs first
    later = noops(4)
    pool = worker_pool(threads=1, prefetch=2)  # a second job is already handed to the thread
    rows = final(pool, job, *later)
    assert rows[job.pk].status == "failed" and rows[job.pk].last_error == expected
    assert reason(job) == "error"
    assert {rows[j.pk].status for j in later} == {"succeeded"}
    assert all(e.is_alive() for e in pool.executors)
    assert audit().ok


def test_sys_exit_in_a_handler_is_retried_like_any_error_and_the_process_does_not_exit(
        worker_pool, custom_handler):
    def exits_once(ctx, payload):
        if ctx.attempt == 1:
            sys.exit("bailing out")
        return {"attempt": ctx.attempt}

    custom_handler("exits_once", exits_once)
    job = services.enqueue("exits_once", max_attempts=3)
    pool = worker_pool(threads=1)
    row = final(pool, job)[job.pk]
    assert row.status == "succeeded" and row.result == {"attempt": 2}
    retry = HistoryEvent.objects.get(job_id=job.pk, kind="retry_scheduled")
    assert retry.message == "SystemExit: bailing out"


# --- failures classified by type, never by message text -------------------------------------
def test_a_handlers_own_type_error_about_json_is_retried_like_any_error(worker_pool, custom_handler):
    def serialises_a_decimal(ctx, payload):
        raise TypeError("Object of type Decimal is not JSON serializable")

    custom_handler("own_type_error", serialises_a_decimal)
    job = services.enqueue("own_type_error", max_attempts=2)
    pool = worker_pool(threads=1)
    row = final(pool, job)[job.pk]
    assert row.status == "failed" and row.attempts == 2
    assert row.last_error == "TypeError: Object of type Decimal is not JSON serializable"
    assert reason(job) == "error"
    assert HistoryEvent.objects.filter(job_id=job.pk, kind="retry_scheduled").count() == 1


class Circular(list):
    pass


_circular = circular_dict
_deep = deeply_nested_list


@pytest.mark.parametrize("make, words", [
    (_circular, "Circular reference"),
    (_deep, "nested too deeply"),
    (lambda: {"when": object()}, "not JSON serializable"),
    (lambda: float("nan"), "Out of range float"),
], ids=["circular", "deep", "object", "nan"])
def test_a_result_that_cannot_be_encoded_fails_the_job_for_good_saying_why(
        worker_pool, custom_handler, make, words):
    custom_handler("bad_result", lambda ctx, payload: make())
    job = services.enqueue("bad_result", max_attempts=3)
    pool = worker_pool(threads=1)
    row = final(pool, job)[job.pk]
    assert row.status == "failed" and row.attempts == 1
    assert row.last_error.startswith("the handler's result cannot be stored: ")
    assert words in row.last_error
    assert reason(job) == "bad_result"


def test_a_result_nested_past_the_json_depth_limit_fails_for_good_naming_it_on_any_python(
        worker_pool, custom_handler):
    # The rule is ours, not the encoder's: Python 3.13's json encodes a depth where 3.12's
    # raises RecursionError, and the outcome must not depend on which one runs the worker.
    from django_pg_jobqueue.states import MAX_JSON_DEPTH
    custom_handler("nested_result", lambda ctx, payload: deeply_nested_list(payload["wraps"]))
    # deeply_nested_list(n) is n + 1 nested lists: at the limit, then one level past it.
    at_limit = services.enqueue("nested_result", {"wraps": MAX_JSON_DEPTH - 1})
    past = services.enqueue("nested_result", {"wraps": MAX_JSON_DEPTH}, max_attempts=3)
    also_not_json = services.enqueue("nested_result", {"wraps": 5000}, max_attempts=3)
    pool = worker_pool(threads=1)
    rows = final(pool, at_limit, past, also_not_json)
    assert rows[at_limit.pk].status == "succeeded"
    assert rows[at_limit.pk].result == deeply_nested_list(MAX_JSON_DEPTH - 1)
    for job in (past, also_not_json):
        row = rows[job.pk]
        assert row.status == "failed" and row.attempts == 1, (row.status, row.attempts)
        assert row.last_error == ("the handler's result cannot be stored: it is nested too "
                                  f"deeply: it nests deeper than {MAX_JSON_DEPTH} levels "
                                  "(MAX_JSON_DEPTH)")
        assert reason(job) == "bad_result"


def test_a_deep_value_that_is_also_not_json_fails_the_same_way_on_any_python():
    from django_pg_jobqueue import storable
    from django_pg_jobqueue.exceptions import UnstorableResult
    deep_object = [object()]
    for _ in range(5000):
        deep_object = [deep_object]
    with pytest.raises(UnstorableResult, match="nests deeper than 64 levels"):
        storable.encode_json(deep_object)
    with pytest.raises(ValueError, match=r"ctx.log\(\) data is nested too deeply"):
        storable.log_data({"tree": deeply_nested_list(64)})
    assert storable.log_data({"tree": deeply_nested_list(62)})  # 64 levels with the data's own
    with pytest.raises(UnstorableResult, match="Circular reference"):
        storable.encode_json(circular_dict())


# --- size caps ------------------------------------------------------------------------------
def test_a_result_over_job_max_result_bytes_fails_the_job_for_good_with_the_sizes(
        worker_pool, custom_handler):
    custom_handler("big_result", lambda ctx, payload: {"blob": "x" * payload["n"]})
    with override_settings(JOB_MAX_RESULT_BYTES=1000):
        small = services.enqueue("big_result", {"n": 900})
        big = services.enqueue("big_result", {"n": 1000}, max_attempts=3)
        pool = worker_pool(threads=1)
        rows = final(pool, small, big)
    assert rows[small.pk].status == "succeeded"
    assert rows[big.pk].status == "failed" and rows[big.pk].attempts == 1
    assert rows[big.pk].result is None
    assert rows[big.pk].last_error == ("the handler's result cannot be stored: it is 1012 bytes "
                                       "of JSON, over JOB_MAX_RESULT_BYTES (1000)")
    assert reason(big) == "bad_result"


def test_the_default_result_cap_is_one_mebibyte(worker_pool, custom_handler):
    custom_handler("big_result", lambda ctx, payload: "x" * payload["n"])
    fits = services.enqueue("big_result", {"n": 1024 * 1024 - 2})  # its JSON: n + 2 quotes
    over = services.enqueue("big_result", {"n": 1024 * 1024 - 1})
    pool = worker_pool(threads=1)
    rows = final(pool, fits, over)
    assert rows[fits.pk].status == "succeeded" and len(rows[fits.pk].result) == 1024 * 1024 - 2
    assert rows[over.pk].status == "failed" and "JOB_MAX_RESULT_BYTES (1048576)" in rows[over.pk].last_error


def test_error_messages_and_tracebacks_are_capped_and_say_so(worker_pool, custom_handler):
    def long_error(ctx, payload):
        raise RuntimeError("e" * 5000)

    custom_handler("long_error", long_error)
    with override_settings(JOB_MAX_ERROR_CHARS=200, JOB_MAX_TRACEBACK_CHARS=300):
        job = services.enqueue("long_error", max_attempts=1)
        pool = worker_pool(threads=1)
        row = final(pool, job)[job.pk]
    assert len(row.last_error) <= 200 and row.last_error.startswith("RuntimeError: eee")
    kept, cut = re.fullmatch(r"(RuntimeError: e+) \[cut: (\d+) more characters\]",
                             row.last_error).groups()
    assert len(kept) + int(cut) == len("RuntimeError: ") + 5000
    assert len(row.last_traceback) <= 300
    assert row.last_traceback.startswith("[cut: ") and row.last_traceback.rstrip().endswith("eee")
    assert HistoryEvent.objects.get(job_id=job.pk, kind="failed").message == row.last_error


# --- the watchdog ---------------------------------------------------------------------------
def test_a_held_job_whose_executor_thread_is_gone_is_no_longer_renewed_and_runs_again(worker_pool):
    """A job the process holds but no live executor runs (here: its thread exited) must not be
    renewed forever: the renewer stops, the lease expires, the reaper requeues it."""
    from django_pg_jobqueue.worker.held import Held

    job = services.enqueue("noop", max_attempts=3)
    # Claimed for the first executor thread, as if it had taken the job and then died.
    first = f"{socket.gethostname()}-{os.getpid()}-1"
    [c] = services.claim(worker_ids=[first], job_ids=[job.pk], lease_seconds=2)
    pool = worker_pool(threads=2)
    gone = pool.executors[0]
    assert gone.worker_id == first
    gone.stop()
    gone.join(5)
    assert not gone.is_alive()
    pool.held.add(Held.of(c, gone.worker_id, owner=gone))
    row = final(pool, job, timeout=20)[job.pk]
    assert row.status == "succeeded" and row.attempts == 2
    events = list(HistoryEvent.objects.filter(job_id=job.pk).order_by("id"))
    kinds = [e.kind for e in events]
    assert kinds.index("lease_expired") < kinds.index("succeeded")
    watchdog = [e for e in events if e.kind == "log" and "no live executor" in e.message]
    assert len(watchdog) == 1
    assert pool.renewer.orphaned == 1
    assert audit().ok


def test_the_lane_hands_no_job_to_a_dead_executor_thread(worker_pool):
    pool = worker_pool(threads=2)
    gone = pool.executors[0]
    gone.stop()
    gone.join(5)
    jobs = noops(10)
    rows = final(pool, *jobs)
    assert {r.status for r in rows.values()} == {"succeeded"}
    # None waited for a lease to expire: a claim that raced the thread's end was released.
    assert {r.attempts for r in rows.values()} == {1}
    events = HistoryEvent.objects.filter(job_id__in=[j.pk for j in jobs])
    assert not events.filter(kind="lease_expired").exists()
    assert not events.filter(kind="succeeded", worker_id=gone.worker_id).exists()


def test_a_job_claimed_for_a_thread_that_ended_during_the_claim_is_released_uncharged(
        transactional_db, fast_queue_settings):
    from django_pg_jobqueue.engine import PostgresEngine
    from django_pg_jobqueue.worker.pool import WorkerPool
    from django_pg_jobqueue.worker.signals import TestSignals

    class ClaimsAsTheThreadEnds(PostgresEngine):
        def claim(self, **kwargs):
            if victim.is_alive() and victim.worker_id in kwargs["worker_ids"]:
                victim.stop()
                victim.join(5)
            return super().claim(**kwargs)

    pool = WorkerPool(threads=2, engine=ClaimsAsTheThreadEnds(), test_signals=TestSignals())
    victim = pool.executors[0]
    jobs = noops(4)
    pool.start()
    try:
        rows = final(pool, *jobs)
    finally:
        pool.shutdown(grace=2)
    assert {r.status for r in rows.values()} == {"succeeded"}
    assert {r.attempts for r in rows.values()} == {1}
    events = HistoryEvent.objects.filter(job_id__in=[j.pk for j in jobs])
    released = events.filter(kind="released", worker_id=victim.worker_id)
    assert released.count() == 1
    assert "no longer alive" in released.get().message
    assert not events.filter(kind="lease_expired").exists()
    assert audit().ok


def test_audit_reports_a_running_job_a_live_worker_process_stopped_renewing(transactional_db):
    job = services.enqueue("noop")
    services.claim(worker_ids=["host-a-77-3"], lease_seconds=30)
    with connection.cursor() as cur:
        cur.execute("INSERT INTO job_workers (id, hostname, pid, threads, queues, started_at,"
                    " heartbeat_at) VALUES ('host-a-77', 'host-a', 77, 4, '[\"*\"]', now(), now())")
        # Its heartbeat is fresh, but the job's lease ran out 5 s ago: that process's renewer
        # ran since and left the job alone; no executor of it runs the job.
        cur.execute("UPDATE jobs SET lease_expires_at = now() - interval '5 seconds' WHERE id = %s",
                    [job.pk])
    report = audit()
    found = report.by_check()["held_without_executor"]
    assert [v.job_id for v in found] == [job.pk]
    assert "host-a-77" in found[0].message
    # A process that stopped heartbeating (killed, frozen) is the reaper's case, not this one.
    with connection.cursor() as cur:
        cur.execute("UPDATE job_workers SET heartbeat_at = now() - interval '10 seconds'")
    assert audit().by_check()["held_without_executor"] == []


# --- one executor for workers and drain -----------------------------------------------------
HOSTILE = {
    "h_nul_result": lambda ctx, payload: {"text": "a\x00b"},
    "h_set_result": lambda ctx, payload: {1, 2},
    "h_type_error": lambda ctx, payload: (_ for _ in ()).throw(
        TypeError("Object of type Decimal is not JSON serializable")),
    "h_system_exit": lambda ctx, payload: sys.exit(3),
    "h_unprintable": lambda ctx, payload: (_ for _ in ()).throw(Unprintable()),
    "h_nul_error": lambda ctx, payload: (_ for _ in ()).throw(RuntimeError("x\x00")),
}


def _outcomes(jobs):
    out = {}
    for j in jobs:
        row = Job.objects.get(pk=j.pk)
        events = [(e.kind, e.message, (e.data or {}).get("reason"))
                  for e in HistoryEvent.objects.filter(job_id=j.pk).exclude(kind__in=["created", "claimed"])
                  .order_by("id")]
        out[row.type] = (row.status, row.attempts, row.result, row.last_error, events)
    return out


def test_drain_and_the_worker_record_the_same_outcome_for_every_hostile_handler(
        worker_pool, custom_handler):
    for name, func in HOSTILE.items():
        custom_handler(name, func)
    by_worker = [services.enqueue(name, max_attempts=2) for name in HOSTILE]
    pool = worker_pool(threads=2)
    final(pool, *by_worker)
    pool.shutdown(grace=2)
    by_drain = [services.enqueue(name, max_attempts=2) for name in HOSTILE]
    result = drain(include_scheduled=True)
    assert _outcomes(by_drain) == _outcomes(by_worker)
    assert result.succeeded == 1 and result.failed == 5 and result.retried == 4
    assert any("cannot be stored" in e for e in result.errors)


def test_drain_fails_a_result_that_is_not_json_for_good_as_the_worker_does(custom_handler):
    custom_handler("returns_a_set", lambda ctx, payload: {1, 2})
    job = services.enqueue("returns_a_set", max_attempts=3)
    result = drain(include_scheduled=True)
    assert (result.failed, result.retried, result.ran) == (1, 0, 1)
    row = Job.objects.get(pk=job.pk)
    assert row.status == "failed" and row.attempts == 1
    assert "not JSON serializable" in row.last_error and reason(job) == "bad_result"


@pytest.mark.django_db(transaction=False)
def test_drain_inside_a_test_transaction_survives_a_result_the_database_refuses(
        custom_handler, monkeypatch):
    """Inside one transaction, a refused statement would abort it; drain writes through a
    savepoint, so the row-by-row fallback and the jobs after it still work."""
    from django_pg_jobqueue import storable

    real = storable.encode_result
    monkeypatch.setattr(storable, "encode_result",
                        lambda value: '"\\u0000"' if value == "poison" else real(value))
    custom_handler("refused_result", lambda ctx, payload: "poison")
    bad = services.enqueue("refused_result")
    ok = services.enqueue("noop")
    result = drain()
    assert (result.succeeded, result.failed) == (1, 1)
    assert Job.objects.get(pk=bad.pk).status == "failed"
    assert Job.objects.get(pk=ok.pk).status == "succeeded"
    assert "could not be stored" in Job.objects.get(pk=bad.pk).last_error


def test_a_slow_handler_is_renewed_while_it_runs_and_its_neighbours_are_not_disturbed(
        worker_pool, custom_handler):
    """The watchdog must not release a job its executor is still running."""
    release = threading.Event()

    def slow(ctx, payload):
        release.wait(6)
        return {"ok": True}

    custom_handler("slow", slow)
    job = services.enqueue("slow")
    pool = worker_pool(threads=2, prefetch=2)
    pool.test_signals.wait_started([job.pk])
    # Renewed all along, pass after pass, for two leases of 2 s (a pass each 2/3 s).
    passes = pool.test_signals.wait_passes(pool.test_signals.renewed, 7, timeout=20)
    assert all(p.get("renewed") == 1 and not p.get("lost") for p in passes[1:]), passes
    release.set()
    row = final(pool, job, *noops(3))[job.pk]
    assert row.status == "succeeded" and row.attempts == 1
    assert pool.renewer.orphaned == 0


# --- isolation: a failure the database refuses ----------------------------------------------
@pytest.fixture
def refuse_failures_mentioning(monkeypatch):
    """Make the database refuse the engine's `fail` writes whose error holds a marker (as it
    would a value the cleaning missed); `always=True` refuses every failure of those jobs."""
    from django_pg_jobqueue.engine import default_engine

    engine = default_engine()
    real_fail = engine.fail
    refused_jobs = set()

    def install(marker, *, always=False):
        def fail(job_id, *args, **kwargs):
            if marker in kwargs["error"] or (always and job_id in refused_jobs):
                refused_jobs.add(job_id)
                raise DataError(f"refused: {marker}")
            return real_fail(job_id, *args, **kwargs)

        monkeypatch.setattr(engine, "fail", fail)

    return install


def test_a_failure_the_database_refuses_is_recorded_without_its_text(
        worker_pool, custom_handler, refuse_failures_mentioning):
    def raises(ctx, payload):
        raise RuntimeError("poison-marker")

    custom_handler("refused_error", raises)
    refuse_failures_mentioning("poison-marker")
    job = services.enqueue("refused_error", max_attempts=1)
    later = noops(3)
    pool = worker_pool(threads=1)
    rows = final(pool, job, *later)
    assert rows[job.pk].status == "failed"
    assert rows[job.pk].last_error == ("RuntimeError: [the error could not be stored: "
                                       "the database refused it (DataError)]")
    assert {rows[j.pk].status for j in later} == {"succeeded"}
    assert len(pool.held) == 0


def test_a_job_whose_failure_cannot_be_written_at_all_is_left_to_lease_expiry_and_the_reaper(
        worker_pool, custom_handler, refuse_failures_mentioning):
    def raises(ctx, payload):
        raise RuntimeError("poison-marker")

    custom_handler("unwritable_error", raises)
    refuse_failures_mentioning("poison-marker", always=True)
    job = services.enqueue("unwritable_error", max_attempts=1)
    later = noops(3)
    pool = worker_pool(threads=1)
    rows = final(pool, *later)
    # The worker stopped renewing it; the reaper ended it when the lease ran out.
    pool.test_signals.reaped.wait(lambda passes: any(p.get("failed") for p in passes), 20)
    rows[job.pk] = Job.objects.get(pk=job.pk)
    assert rows[job.pk].status == "failed" and rows[job.pk].last_error.startswith("lease expired")
    assert "lease_expired" in HistoryEvent.objects.filter(job_id=job.pk).values_list("kind", flat=True)
    assert {rows[j.pk].status for j in later} == {"succeeded"}
    assert len(pool.held) == 0 and all(e.is_alive() for e in pool.executors)
    assert audit().ok
