"""Test helpers for your own test suite: assert what was enqueued, run jobs synchronously,
and inject the faults production will throw at your handlers.

    from django_pg_jobqueue.testing import assert_enqueued, drain, crash_mid_handler, expire_lease, run_reaper

    def test_signup_sends_the_welcome_email(db):
        signup("ada@example.com")
        assert_enqueued(type="email_send", payload_subset={"to": "ada@example.com"})
        assert drain().succeeded == 1

    def test_charge_is_safe_to_run_twice(db):
        job = enqueue("charge_invoice", {"invoice_id": 7})
        crash_mid_handler(job)           # the handler ran, then the process died before the ack
        expire_lease(job)                # ... the lease runs out
        run_reaper()                     # ... the reaper requeues the job
        assert drain(include_scheduled=True).succeeded == 1   # and it runs a second time
        assert Charge.objects.filter(invoice_id=7).count() == 1

Everything goes through the real engine (`django_pg_jobqueue.engine`, the one a worker pool
uses): `drain()` is an inline use of it. It claims through the engine (worker id
"testing-drain") and runs each job through the worker's own executor pipeline
(`django_pg_jobqueue.worker.executor.JobRunner`, as Oban's drainer does): the same middleware,
the same handling of whatever the handler returns or raises, the same retry rules, the same
fenced writes. Only the threads differ: the success is written at once, in the calling thread,
and nothing renews leases or enforces timeouts. The
helpers work in an ordinary `db` test (one transaction: jobs enqueued in it are visible to
them) as well as with `transaction=True`. Inside one transaction the database clock stands
still, so retries and reaped jobs (due at now() + backoff) only run with
`drain(include_scheduled=True)`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.db.models.fields.json import KT

from . import sql
from .conf import DJANGO_TASK_TYPE
from .context import JobContext
from .db import queue_connection
from .engine import Engine, default_engine
from .models import Job
from .registry import registry
from .states import Status
from .worker.completer import write_completions
from .worker.executor import JobRunner
from .worker.held import HeldJobs
from .worker.stats import PoolStats
from .worker.unknown_types import UnknownTypes

DRAIN_WORKER_ID = "testing-drain"
CRASH_WORKER_ID = "testing-crashed"

__all__ = [
    "Crash",
    "DrainResult",
    "SimulatedCrash",
    "assert_enqueued",
    "assert_not_enqueued",
    "crash_mid_handler",
    "drain",
    "enqueued_jobs",
    "expire_lease",
    "run_reaper",
]


# --- what was enqueued ------------------------------------------------------------------------
def enqueued_jobs(type: str | None = None, *, payload_subset: dict[str, Any] | None = None,
                  queue: str | None = None, status: str | None = Status.QUEUED) -> list[Job]:
    """Jobs matching every given filter, oldest first. Sees jobs enqueued in the current
    transaction. `payload_subset` matches jobs whose payload contains it (JSON containment:
    nested objects match by subset too). `status=None` matches every status. A Django task's
    job is typed by its task's path; `type="django_task"` still matches every task's job."""
    qs = Job.objects.order_by("id")
    if type == DJANGO_TASK_TYPE:
        qs = qs.filter(Q(type=type) | Q(type=KT("payload__task")))
    elif type is not None:
        qs = qs.filter(type=type)
    if queue is not None:
        qs = qs.filter(queue=queue)
    if status is not None:
        qs = qs.filter(status=status)
    if payload_subset:
        qs = qs.filter(payload__contains=payload_subset)
    return list(qs)


def assert_enqueued(type: str | None = None, *, payload_subset: dict[str, Any] | None = None,
                    queue: str | None = None, count: int | None = None,
                    status: str | None = Status.QUEUED) -> list[Job]:
    """Assert that matching jobs were enqueued (exactly `count` of them, when given) and return
    them. The failure message lists what was enqueued instead."""
    found = enqueued_jobs(type, payload_subset=payload_subset, queue=queue, status=status)
    if (count is None and found) or (count is not None and len(found) == count):
        return found
    wanted = _describe(type, payload_subset, queue, status)
    expected = f"{count} job(s)" if count is not None else "a job"
    raise AssertionError(f"expected {expected} {wanted}, found {len(found)}.\n"
                         + _listing(status))


def assert_not_enqueued(type: str | None = None, *, payload_subset: dict[str, Any] | None = None,
                        queue: str | None = None, status: str | None = Status.QUEUED) -> None:
    found = enqueued_jobs(type, payload_subset=payload_subset, queue=queue, status=status)
    if found:
        raise AssertionError(f"expected no job {_describe(type, payload_subset, queue, status)}, "
                             f"found {len(found)}: " + ", ".join(f"#{j.id}" for j in found))


def _describe(type: str | None, payload_subset: dict[str, Any] | None, queue: str | None,
              status: str | None) -> str:
    parts = [f"{k}={v!r}" for k, v in (("type", type), ("payload_subset", payload_subset),
                                        ("queue", queue), ("status", status)) if v is not None]
    return "with " + ", ".join(parts) if parts else "at all"


def _listing(status: str | None, limit: int = 20) -> str:
    qs = Job.objects.order_by("id")
    if status is not None:
        qs = qs.filter(status=status)
    jobs = list(qs[:limit])
    if not jobs:
        return "No jobs " + (f"are {status}." if status else "exist.")
    lines = [f"  #{j.id} {j.type} queue={j.queue} status={j.status} payload={json.dumps(j.payload)}"
             for j in jobs]
    return ("Jobs" + (f" ({status})" if status else "") + ":\n" + "\n".join(lines))


# --- running jobs synchronously ---------------------------------------------------------------
@dataclass
class DrainResult:
    succeeded: int = 0
    failed: int = 0          # failed for good
    retried: int = 0         # the attempt failed; the job is queued again with backoff
    snoozed: int = 0
    parked: int = 0          # a durable wait (ctx.sleep_until, ctx.wait_for_signal) parked it
    cancelled: int = 0
    lease_lost: int = 0
    jobs: list[int] = field(default_factory=list)       # ids, in the order they ran
    errors: list[str] = field(default_factory=list)     # "#id: Error: message"

    @property
    def ran(self) -> int:
        return len(self.jobs)


def drain(types: list[str] | str | None = None, *, queues: list[str] | None = None,
          max_jobs: int = 1000, include_scheduled: bool = False,
          raise_errors: bool = False, engine: Engine | None = None) -> DrainResult:
    """Run due jobs one by one in this thread until none is left (or `max_jobs` ran).

    - `types` / `queues`: only jobs of these types / queues.
    - `include_scheduled`: also run jobs due later (delayed, retrying, reaped): each round makes
      them due now. Together with retries this runs a flaky job until it ends. A job that a
      durable wait parked in this drain is not made due again (it would only park again): it
      runs again when its signal makes it due (`send_signal`, from a later job's handler too).
    - `raise_errors`: re-raise the first handler exception (after recording it) instead of
      counting it in `errors`; a result that cannot be stored raises its
      `django_pg_jobqueue.storable.UnstorableResult`.
    - `engine`: the engine to claim, run and record through (default: the one a worker pool
      uses); a test's wrapper of `PostgresEngine` sees every claim and write drain makes, as
      it would a pool's. The handler's `ctx.progress` and `ctx.log` go through it too.

    Jobs that enqueue jobs are fine: those run too, in the same drain.
    """
    if isinstance(types, str):
        types = [types]
    result = DrainResult()
    engine = engine or default_engine()
    unknown = UnknownTypes()  # types with no handler here: given back, then left out
    parked: list[int] = []  # parked by a durable wait in this drain: not made due again
    while result.ran < max_jobs:
        if include_scheduled:
            _make_due(types, queues, parked)
        claimed = engine.claim(worker_ids=[DRAIN_WORKER_ID], queues=queues, types=types,
                               exclude_types=unknown.current())
        if not claimed:
            break
        job = claimed[0]
        result.jobs.append(job.id)
        before = result.parked
        error = _execute(job, result, unknown, engine)
        if result.parked > before:
            parked.append(job.id)
        if error is not None and raise_errors:
            raise error
    return result


def _make_due(types: list[str] | None, queues: list[str] | None, parked: list[int]) -> None:
    # now(), the engine's clock (transaction time), not Django's Now() (statement time): inside
    # a test's transaction the two differ, and the claim compares with now().
    statement = sql.MAKE_DUE
    params: list[list[str] | list[int]] = []
    if parked:
        statement += sql.AND_ID_NOT_IN
        params.append(parked)
    if types:
        statement += sql.AND_TYPE_IN
        params.append(list(types))
    if queues:
        statement += sql.AND_QUEUE_IN
        params.append(list(queues))
    with queue_connection().cursor() as cur:
        cur.execute(statement, params)


def _context(job: Any, worker_id: str, engine: Engine | None = None) -> JobContext:
    return JobContext(job_id=job.id, type=job.type, queue=job.queue, attempt=job.attempt,
                      max_attempts=job.max_attempts, lease_token=job.lease_token,
                      worker_id=worker_id, engine=engine)


def _runner(unknown_types: UnknownTypes | None = None, engine: Engine | None = None
            ) -> JobRunner:
    """The worker's pipeline for one job on `engine` (the worker's by default), with drain's
    completer: the worker's own row-isolating write, at once, in this thread. Nothing renews
    the lease meanwhile."""
    held, engine = HeldJobs(), engine or default_engine()

    def complete_now(completion: Any, _held: HeldJobs) -> str:
        done = write_completions([completion], held, engine)
        return done[0][1] if done else "lease_lost"

    return JobRunner(DRAIN_WORKER_ID, held=held, stats=PoolStats(), complete=complete_now,
                     keep_callers_transaction=True, engine=engine, unknown_types=unknown_types)


_COUNTED = {Status.SUCCEEDED: "succeeded", Status.CANCELLED: "cancelled", Status.QUEUED: "retried",
            Status.FAILED: "failed", "snoozed": "snoozed", "parked": "parked",
            "lease_lost": "lease_lost"}


def _execute(job: Any, result: DrainResult, unknown_types: UnknownTypes | None = None,
             engine: Engine | None = None) -> BaseException | None:
    """Run one claimed job through the worker's own pipeline (worker/executor.py JobRunner):
    the same outcomes, classifications and writes as in production."""
    outcome = _runner(unknown_types, engine).run(job)
    if outcome.status == "released" and unknown_types is not None:
        unknown_types.skip(job.type, math.inf)  # for the rest of this drain, whatever the setting
    counter = _COUNTED.get(outcome.status)
    if counter is not None:
        setattr(result, counter, getattr(result, counter) + 1)
    if outcome.reason == "unknown_type":
        result.errors.append(f"#{job.id}: no handler for {job.type!r}")
        return None
    if outcome.exception is not None and outcome.reason != "cancelled":
        result.errors.append(f"#{job.id}: {outcome.error}")
        return outcome.exception
    return None


# --- fault injection --------------------------------------------------------------------------
def expire_lease(job: Job | int) -> None:
    """Force a running job's lease deadline into the past, as if its worker stopped renewing
    it (died, froze, lost the network). The reaper will then requeue it."""
    job_id = getattr(job, "id", job)
    with queue_connection().cursor() as cur:
        cur.execute(sql.EXPIRE_LEASE_IF_RUNNING, [job_id])
        if cur.rowcount != 1:
            status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
            raise AssertionError(
                f"job {job_id} is not running (it is {status}): no lease to expire")


def run_reaper() -> dict[str, int]:
    """Run the reaper once, as the maintenance leader does periodically: jobs whose lease
    expired go back to queued (with backoff) or to failed, and queued jobs past their
    expires_at end cancelled. Returns counts by new status (`expired` for those)."""
    engine = default_engine()
    counts = engine.reap()
    expired = engine.expire_overdue()
    if expired:
        counts["expired"] = expired
    return counts


class SimulatedCrash(BaseException):
    """Raised inside a handler by `crash_mid_handler` at its crash point. A BaseException, so
    that handlers' own `except Exception` blocks do not swallow the "process death"."""


@dataclass
class Crash:
    job_id: int
    lease_token: object
    worker_id: str
    attempt: int
    handler_finished: bool      # True: the handler returned; the process died before the ack
    writes_before_crash: int    # progress/log calls that went through before the crash


def crash_mid_handler(job: Job | int | None = None, *, type: str | None = None,
                      after_writes: int | None = None) -> Crash:
    """Claim a job, run its handler, and abandon it as if the worker process died.

    Pass the job (or its id), or a job `type` to take the next due job of that type.

    - `after_writes=None` (default): the handler runs to the end, then the process "dies"
      before recording the outcome: the handler's side effects happened, the job is still
      running under a lease nobody will renew. The classic at-least-once case.
    - `after_writes=N`: the process "dies" at the handler's (N+1)-th `ctx.progress()` or
      `ctx.log()` call, that is after N of them went through: the handler stops half-way.
      If it makes fewer calls, it runs to the end as with None.

    Afterwards the job is still `running`: call `expire_lease(job)` and `run_reaper()` to let
    the engine recover it, then `drain(include_scheduled=True)` to run it again.
    """
    if (job is None) == (type is None):
        raise TypeError("give a job (or job id) or a type, not both")
    job_ids = [getattr(job, "id", job)] if job is not None else None
    claimed = default_engine().claim(worker_ids=[CRASH_WORKER_ID], job_ids=job_ids,
                                     types=[type] if type else None)
    if not claimed:
        which = f"job {job_ids[0]}" if job_ids else f"type {type!r}"
        raise AssertionError(f"no due queued job to crash ({which})")
    c = claimed[0]
    spec = registry.get(c.type)
    if spec is None:
        raise AssertionError(f"no handler registered for job type {c.type!r}")
    ctx = _CrashingContext(_context(c, CRASH_WORKER_ID), after_writes)
    finished = False
    try:
        spec.run(ctx, c.payload)
        finished = True
    except SimulatedCrash:
        pass
    except Exception:  # noqa: BLE001
        finished = True  # it failed on its own; the crash still comes before the write
    return Crash(job_id=c.id, lease_token=c.lease_token, worker_id=CRASH_WORKER_ID,
                 attempt=c.attempt, handler_finished=finished, writes_before_crash=ctx.writes)


class _CrashingContext:
    """A JobContext whose fenced writes count down to a simulated process death."""

    def __init__(self, ctx: JobContext, after_writes: int | None) -> None:
        self._ctx, self._after, self.writes = ctx, after_writes, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def _write(self) -> None:
        if self._after is not None and self.writes >= self._after:
            raise SimulatedCrash(f"simulated crash after {self.writes} write(s)")
        self.writes += 1

    def progress(self, percent: int | None, message: str = "") -> None:
        self._write()
        self._ctx.progress(percent, message)

    def log(self, message: str, **data: Any) -> None:
        self._write()
        self._ctx.log(message, **data)
