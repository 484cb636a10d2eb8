"""Services: the only code that writes jobs and their events.

Each function is one transition of the state machine in `django_pg_jobqueue.states`: a guarded write and
its event in one transaction. Worker-side writes present the lease token of their claim and
raise `LeaseLost` when it no longer matches; operator actions raise `InvalidTransition`.
"""
from .claiming import ClaimedJob, claim
from .deleting import delete
from .enqueuing import enqueue, enqueue_job, enqueue_many, enqueue_many_jobs
from .lifecycle import (
    complete,
    complete_many,
    fail,
    log_message,
    record_lease_lost,
    record_progress,
    release_many,
    renew_many,
    snooze,
)
from .operations import cancel, retry
from .queues import pause_queue, resume_queue, set_queue_limit
from .reaping import reap
from .rerunning import rerun
from .schedules import pause_schedule, resume_schedule, run_schedule

__all__ = [
    "ClaimedJob", "claim", "enqueue", "enqueue_job", "enqueue_many", "enqueue_many_jobs", "complete", "complete_many", "fail",
    "log_message", "record_lease_lost", "record_progress", "release_many", "renew_many",
    "snooze", "cancel", "retry", "rerun", "delete", "reap", "pause_queue", "resume_queue", "set_queue_limit",
    "run_schedule", "pause_schedule", "resume_schedule",
]
