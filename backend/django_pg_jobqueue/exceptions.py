"""Domain errors. The API's exception handler maps them to HTTP statuses (404, 409, 400)."""


class JobError(Exception):
    """Base class for the queue's domain errors."""


class JobNotFound(JobError):
    pass


class InvalidTransition(JobError):
    """The job is not in a status the requested transition starts from (HTTP 409)."""

    def __init__(self, job_id, action: str, status: str | None):
        self.job_id, self.action, self.status = job_id, action, status
        super().__init__(f"cannot {action} job {job_id}: it is {status}")


class LeaseLost(JobError):
    """A worker's write was refused: the job is no longer running under its lease token.

    The reaper requeued the job after the lease expired (and perhaps another worker claimed
    it), or an operator cancelled it. The worker must drop the job: its result is discarded.
    """

    def __init__(self, job_id, lease_token, action: str):
        self.job_id, self.lease_token, self.action = job_id, lease_token, action
        super().__init__(f"lease lost on job {job_id} ({action} refused for token {lease_token})")


class UnknownJobType(JobError):
    def __init__(self, job_type: str):
        self.job_type = job_type
        super().__init__(f"unknown job type {job_type!r}")


class IdempotencyConflict(JobError):
    """The idempotency key was used before for a different request (HTTP 409)."""

    def __init__(self, key: str, job_id):
        self.key, self.job_id = key, job_id
        super().__init__(
            f"idempotency key {key!r} was already used for a different request (job {job_id})"
        )


class PermanentError(Exception):
    """Raise from a handler to fail the job at once, without retrying."""


class JobCancelled(Exception):
    """Raised by `ctx.raise_if_should_stop()` when the job was cancelled or its lease lost."""
