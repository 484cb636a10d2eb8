"""The engine: everything a worker asks of storage, in one contract.

Every module under worker/ (the lanes, the executor's runner, the completer, the starter,
the renewer, the reaper, the pruner, the stager, the stuck watch, the periodic enqueuer, the
leader's election, the supervisor's heartbeat and settling, the pool's shutdown), the
`JobContext` a handler writes through, and `django_pg_jobqueue.testing.drain` reach the jobs
only through an `Engine`; none imports `services`, `selectors` or `sql` (tests/contracts/test_layout.py).
The verbs are the one vocabulary's: claim, complete (many), fail, snooze, park, renew (many),
release (many), reap, heartbeat, plus the events a worker records without a transition (a lost lease,
a log line, a stuck handler) and the maintenance the leader runs (settle waiting dependents,
prune, enqueue schedules' ticks).

`PostgresEngine` is the only implementation: each method is the service of the same name
(services/, the only writers), whose statements live in sql/. It adds no state and no
work: one call frame per batched statement (a claim, a batch of completions, a renewal pass).
The services stay the place where rows are guarded by their lease tokens; an engine that
wraps this one (a test's, to refuse or delay a write) changes what a worker sees without
patching modules.

`drain` is an inline use of the same engine: the same executor pipeline (`JobRunner`), the
same engine, in the calling thread (Oban's Inline engine for tests, River's driver)."""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from . import db, periodic, services
from .services import batches, claiming, dependencies, pruning, schedules, waits
from .services.claiming import ClaimedJob
from .services.lifecycle import Completion, unknown_type_error
from .witness import StartWitness

if TYPE_CHECKING:
    from collections.abc import Callable

    from .periodic import PeriodicEntry
    from .retries import RetryPolicy
    from .services.lifecycle import DeadProcessJobs, Renewal
    from .services.waits import SignalState

# What a worker holds of a claim and hands to the completer: the engine's types, so that a
# worker names them without reaching past the engine.
__all__ = ["ClaimedJob", "Completion", "Engine", "PostgresEngine", "default_engine"]


class Engine(Protocol):
    """What a worker asks of storage. Every write presents the lease token of its claim;
    one whose lease was lost raises `LeaseLost` (single) or leaves the job out of its answer
    (many)."""

    def claim(self, *, worker_ids: list[str], queues: list[str] | None = None,
              lease_seconds: float | None = None, types: list[str] | None = None,
              job_ids: list[int] | None = None, exclude_types: list[str] | None = None,
              exclude_queues: list[str] | None = None,
              after: tuple | None = None) -> list[ClaimedJob]:
        """Up to len(worker_ids) runnable jobs, the i-th leased to worker_ids[i]; with `after`
        (a job's priority and claim-order key), from there on (services.claim)."""
        ...

    def complete_many(self, completions: list[Completion]
                      ) -> tuple[list[tuple[int, str, float]], list[Completion]]:
        """Record successes: (done rows, completions refused for a lost lease)."""
        ...

    def fail(self, job_id: int, lease_token, *, worker_id: str, error: str,
             traceback: str | None = None, permanent: bool = False,
             reason: str = "error", policy: RetryPolicy | None = None,
             exception: BaseException | None = None,
             attempt: int = 0) -> tuple[str, float | None]:
        """Fail the attempt: (new status, retry delay seconds), by the retry policy."""
        ...

    def release_unknown_type(self, job_id: int, lease_token, *, worker_id: str,
                             job_type: str) -> str | None:
        """Give back, uncharged, a job whose type this worker has no handler for (or fail it
        once no worker has known the type for long enough): its new status."""
        ...

    def snooze(self, job_id: int, lease_token, *, worker_id: str, seconds: float) -> None:
        """Back to queued in `seconds`, without spending an attempt."""
        ...

    def renew_many(self, leases: list[tuple[int, uuid.UUID]], *,
                   lease_seconds: float | None = None) -> dict[int, Renewal]:
        """Extend the leases still held; a job missing from the answer lost its lease."""
        ...

    def renew_locked(self, leases: list[tuple[int, uuid.UUID]], *, wait_seconds: float,
                     lease_seconds: float | None = None) -> dict[int, Renewal]:
        """Renew the leases renew_many found busy (locked by another transaction), waiting
        up to `wait_seconds` for them: those renewed (none when the wait ran out)."""
        ...

    def release_many(self, items: list[tuple[int, uuid.UUID, str]], *,
                     message: str = "worker shutting down") -> list[int]:
        """Give running jobs back to the queue without charging the attempt."""
        ...

    def settle_dead_process(self, process_id: str, *, running: list[int], cause: str,
                            charge: bool = True, policy_for=None) -> DeadProcessJobs:
        """A supervisor's child died: charge the jobs it was running (by their policy), release
        the rest it held uncharged (services.settle_dead_process)."""
        ...

    def reap(self) -> dict[str, int]:
        """Requeue or fail running jobs whose lease expired: counts by new status."""
        ...

    def expire_overdue(self) -> int:
        """End the queued jobs not started by their expires_at (cancelled, event `expired`):
        how many."""
        ...

    def heartbeat(self, process_id: str, *, hostname: str, pid: int, threads: int,
                  queues: list[str], rss_bytes: int | None = None, jobs_done: int = 0,
                  stuck_handlers: int = 0, heartbeat_interval_seconds: float = 2.0,
                  supervisor_pid: int | None = None) -> None:
        """Say that this worker process is alive, and how it is (the workers page)."""
        ...

    def heartbeat_many(self, beats: list[dict], *, supervisor_pid: int) -> None:
        """Say, in one statement, that a supervisor's live children are alive, each with its
        own figures (worker/hostbeat.py)."""
        ...

    def remove_stopped_workers(self, process_ids: list[str]) -> int:
        """Remove the rows of worker processes that stopped gracefully."""
        ...

    def adopt_prefetched(self, items: list[tuple[int, uuid.UUID, str]]) -> set[int]:
        """Name, for each (job id, lease token, worker id), the executor about to run that
        prefetched job as its owner, before its handler starts; the ids adopted (one missing
        lost its lease meanwhile: it must not run)."""
        ...

    def start_witness(self, prefetch_id: str, worker_ids: list[str]) -> StartWitness:
        """Start the witness of this process's prefetched starts (witness.py): slot i names
        the job worker_ids[i] runs; it records them as started if the process dies."""
        ...

    def forget_lost_workers(self, *, silent_seconds: float) -> int:
        """Remove the rows of worker processes silent that long whose jobs were reaped."""
        ...

    def take_leadership(self, role: str, holder: str, lease_seconds: float) -> bool:
        """Take or renew `role`'s lease if free, expired or `holder`'s: whether it holds it."""
        ...

    def resign_leadership(self, role: str, holder: str) -> None:
        """Give `role`'s lease up if `holder` holds it."""
        ...

    def notify_newly_due_queues(self, since: datetime | None) -> tuple[datetime, int]:
        """Wake the queues whose jobs became due after `since`: (the database clock, queues)."""
        ...

    def record_lease_lost(self, job_id: int, lease_token, worker_id: str, action: str,
                          message: str, *, attempt: int | None = None) -> None:
        """Record that a write of `action` was refused because the lease was lost."""
        ...

    def record_leases_lost(self, lost: list[tuple[int, uuid.UUID, str, int]], action: str,
                           message: str) -> None:
        """The same for each (job id, lease token, worker id, attempt), in one write."""
        ...

    def log_message(self, job_id: int, lease_token, *, worker_id: str, message: str,
                    data: dict | None = None) -> None:
        """A log line on a running job's events."""
        ...

    def record_progress(self, job_id: int, lease_token, *, worker_id: str, percent: int | None,
                        message: str = "") -> None:
        """A running job's progress (ctx.progress), fenced by its lease."""
        ...

    def unknown_type_error(self, job_type: str) -> str:
        """The error release_unknown_type fails a job with once no worker knew its type."""
        ...

    def record_stuck_handler(self, job_id: int, *, attempt: int, worker_id: str, message: str,
                             seconds_past_timeout: float, lease_token=None) -> None:
        """Note on a job's timeline that an attempt's handler runs past its timeout plus
        grace (worker/stuck.py)."""
        ...

    def limits_apply(self, queues: list[str] | tuple[str, ...] | None) -> bool:
        """Whether a claim over `queues` (None: every queue) runs under a concurrency limit."""
        ...

    def rate_window(self, queues: list[str] | tuple[str, ...] | None) -> float:
        """The longest period of the rate limits a claim over `queues` counts against (0:
        none), for the lane's wake policy."""
        ...

    def pin_claim_planner_settings(self) -> bool:
        """Pin the claim's planner settings to this thread's session (a busy lane's: one
        statement per claim from then on); whether they are pinned."""
        ...

    def unpin_claim_planner_settings(self) -> None:
        """Put the session's planner settings back, before the connection is given back."""
        ...

    def settle_waiting(self) -> dict[int, str]:
        """Settle jobs waiting on dependencies that no completion settled: their new statuses."""
        ...

    def settle_batches(self) -> list[int]:
        """Finish the batches whose members all finished that no outcome finished (enqueueing
        their callbacks): their ids."""
        ...

    def prune_by_retention(self, *, batch_size: int,
                           should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
        """Delete finished jobs past their retention, in batches: counts by kind."""
        ...

    def paused_schedules(self) -> set[str]:
        """The names of the schedules an operator paused."""
        ...

    def enqueue_tick(self, entry: PeriodicEntry, tick: datetime) -> bool:
        """Enqueue a schedule's tick, once however many processes try: whether this one did."""
        ...

    def dependency_results(self, job_id: int) -> list:
        """The results of the jobs `job_id` was enqueued after, in order (ctx.dependency_results)."""
        ...

    def recorded_steps(self, job_id: int) -> dict:
        """{name: result} of the job's recorded durable steps (ctx.step)."""
        ...

    def record_step(self, job_id: int, lease_token, *, worker_id: str, name: str, attempt: int,
                    result_json: str) -> object:
        """Record a durable step's result once per job; returns the recorded result."""
        ...

    def park(self, job_id: int, lease_token, *, worker_id: str, until: datetime | None = None,
             signal: str | None = None, timeout_seconds: float | None = None) -> str:
        """Back to queued, uncharged, until `until` or signal `signal` (a durable wait): the
        new status (queued; cancelled when a cancel was requested)."""
        ...

    def signal_state(self, job_id: int, name: str) -> SignalState:
        """Whether the job's signal `name` was sent (and its data), or its wait timed out."""
        ...

    def database_now(self) -> datetime:
        """The database's clock (a durable sleep's end is judged on it)."""
        ...

    def worker_overrides(self, hostname: str) -> dict[str, tuple[int | None, bool]]:
        """{queue: (threads or None, stopped)}: host `hostname`'s overrides of its queues
        (services/worker_overrides.py), read on each renewal pass (worker/overrides.py)."""
        ...


class PostgresEngine:
    """The engine over this app's PostgreSQL tables: each method is the service of the same
    name (looked up on `django_pg_jobqueue.services` at call time)."""

    def claim(self, **kwargs) -> list[ClaimedJob]:
        return services.claim(**kwargs)

    def complete_many(self, completions):
        return services.complete_many(completions)

    def fail(self, job_id, lease_token, **kwargs):
        return services.fail(job_id, lease_token, **kwargs)

    def release_unknown_type(self, job_id, lease_token, **kwargs):
        return services.release_unknown_type(job_id, lease_token, **kwargs)

    def snooze(self, job_id, lease_token, **kwargs) -> None:
        services.snooze(job_id, lease_token, **kwargs)

    def renew_many(self, leases, **kwargs):
        return services.renew_many(leases, **kwargs)

    def renew_locked(self, leases, **kwargs):
        return services.renew_locked(leases, **kwargs)

    def release_many(self, items, **kwargs):
        return services.release_many(items, **kwargs)

    def settle_dead_process(self, process_id, **kwargs):
        return services.settle_dead_process(process_id, **kwargs)

    def reap(self) -> dict[str, int]:
        return services.reap()

    def expire_overdue(self) -> int:
        return services.expire_overdue()

    def heartbeat(self, process_id, **kwargs) -> None:
        services.heartbeat(process_id, **kwargs)

    def heartbeat_many(self, beats, *, supervisor_pid) -> None:
        services.heartbeat_many(beats, supervisor_pid=supervisor_pid)

    def remove_stopped_workers(self, process_ids) -> int:
        return services.remove_stopped_workers(process_ids)

    def adopt_prefetched(self, items) -> set[int]:
        return services.adopt_prefetched(items)

    def start_witness(self, prefetch_id, worker_ids) -> StartWitness:
        return StartWitness.launch(prefetch_id=prefetch_id, worker_ids=worker_ids,
                                   connect=db.connection_params("jobqueue start witness"))

    def forget_lost_workers(self, **kwargs) -> int:
        return services.forget_lost_workers(**kwargs)

    def take_leadership(self, role, holder, lease_seconds) -> bool:
        return services.take_leadership(role, holder, lease_seconds)

    def resign_leadership(self, role, holder) -> None:
        services.resign_leadership(role, holder)

    def notify_newly_due_queues(self, since):
        return services.notify_newly_due_queues(since)

    def record_lease_lost(self, *args, **kwargs) -> None:
        services.record_lease_lost(*args, **kwargs)

    def record_leases_lost(self, lost, action, message) -> None:
        services.record_leases_lost(lost, action, message)

    def log_message(self, job_id, lease_token, **kwargs) -> None:
        services.log_message(job_id, lease_token, **kwargs)

    def record_progress(self, job_id, lease_token, **kwargs) -> None:
        services.record_progress(job_id, lease_token, **kwargs)

    def unknown_type_error(self, job_type) -> str:
        return unknown_type_error(job_type)

    def record_stuck_handler(self, job_id, **kwargs) -> None:
        services.record_stuck_handler(job_id, **kwargs)

    def limits_apply(self, queues) -> bool:
        return claiming.limits_apply(queues)

    def rate_window(self, queues) -> float:
        return claiming.rate_window(queues)

    def pin_claim_planner_settings(self) -> bool:
        return claiming.pin_claim_planner_settings()

    def unpin_claim_planner_settings(self) -> None:
        claiming.unpin_claim_planner_settings()

    def settle_waiting(self) -> dict[int, str]:
        return dependencies.settle_waiting()

    def settle_batches(self) -> list[int]:
        return batches.settle_unfinished()

    def prune_by_retention(self, **kwargs) -> dict[str, int]:
        return pruning.prune_by_retention(**kwargs)

    def paused_schedules(self) -> set[str]:
        return periodic.paused_names()

    def enqueue_tick(self, entry, tick) -> bool:
        return schedules.enqueue_tick(entry, tick)

    def dependency_results(self, job_id) -> list:
        return services.dependency_results(job_id)

    def recorded_steps(self, job_id) -> dict:
        return services.recorded_steps(job_id)

    def record_step(self, job_id, lease_token, **kwargs) -> object:
        return services.record_step(job_id, lease_token, **kwargs)

    def park(self, job_id, lease_token, **kwargs) -> str:
        return services.park(job_id, lease_token, **kwargs)

    def signal_state(self, job_id, name):
        return services.signal_state(job_id, name)

    def database_now(self) -> datetime:
        return waits.database_now()

    def worker_overrides(self, hostname) -> dict[str, tuple[int | None, bool]]:
        return services.host_overrides(hostname)


_default = PostgresEngine()


def default_engine() -> Engine:
    """The engine workers and drain use unless given another."""
    return _default
