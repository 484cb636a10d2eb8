"""Services: the only code that writes jobs and their events.

Each function is one transition of the state machine in `django_pg_jobqueue.states`: a guarded write and
its event in one transaction. Worker-side writes present the lease token of their claim and
raise `LeaseLost` when it no longer matches; operator actions raise `InvalidTransition`.
"""
from .batches import enqueue_batch
from .claiming import ClaimedJob, claim
from .deleting import delete
from .enqueuing import (
    aenqueue,
    aenqueue_many,
    enqueue,
    enqueue_many,
    enqueue_many_or_get,
    enqueue_or_get,
)
from .expiring import expire_overdue
from .lifecycle import (
    complete,
    complete_many,
    fail,
    heartbeat,
    log_message,
    record_lease_lost,
    record_leases_lost,
    record_progress,
    release_many,
    release_unknown_type,
    renew_locked,
    renew_many,
    settle_dead_process,
    snooze,
)
from .operations import cancel, cancel_batch, edit, retry, run_now
from .queues import (
    pause_queue,
    resume_queue,
    set_fairness_weights,
    set_queue_aging,
    set_queue_fairness,
    set_queue_limit,
)
from .rate_limits import (
    RateDecision,
    RateLimiter,
    rate_limit,
    remove_rate_limit,
    set_rate_limit,
)
from .reaping import reap
from .rerunning import rerun
from .schedules import pause_schedule, resume_schedule, run_schedule
from .waits import park, send_signal, signal_state
from .worker_overrides import host_overrides, remove_worker_override, set_worker_override
from .workers import (
    adopt_prefetched,
    forget_lost_workers,
    heartbeat_many,
    notify_newly_due_queues,
    record_stuck_handler,
    remove_stopped_workers,
    resign_leadership,
    take_leadership,
)
from .workflows import dependency_results, record_step, recorded_steps

__all__ = [
    "ClaimedJob", "claim", "enqueue", "aenqueue", "aenqueue_many", "enqueue_or_get", "enqueue_many",
    "enqueue_many_or_get", "complete", "complete_many", "fail", "heartbeat",
    "log_message", "record_lease_lost", "record_leases_lost", "record_progress", "release_many", "release_unknown_type",
    "renew_locked", "renew_many", "settle_dead_process",
    "snooze", "cancel", "retry", "edit", "run_now", "rerun", "delete", "reap", "expire_overdue", "pause_queue", "resume_queue",
    "set_queue_limit", "set_queue_fairness", "set_queue_aging", "set_fairness_weights", "set_rate_limit", "remove_rate_limit", "rate_limit", "RateLimiter",
    "RateDecision", "adopt_prefetched", "forget_lost_workers", "heartbeat_many",
    "remove_stopped_workers", "record_stuck_handler",
    "take_leadership", "resign_leadership", "notify_newly_due_queues",
    "run_schedule", "pause_schedule", "resume_schedule",
    "dependency_results", "recorded_steps", "record_step", "park", "signal_state", "send_signal",
    "enqueue_batch", "cancel_batch", "set_worker_override", "remove_worker_override",
    "host_overrides",
]
