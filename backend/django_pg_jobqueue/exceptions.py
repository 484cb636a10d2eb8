"""Domain errors. The API's exception handler maps them to HTTP statuses (404, 409, 400)."""
from datetime import datetime


class JobError(Exception):
    """Base class for the queue's domain errors."""


class JobNotFound(JobError):
    pass


class QueueNotFound(JobError, LookupError):
    """No such queue: it holds no jobs, no handler, Tasks backend or schedule names it, and it
    has no setting. Pausing, resuming or limiting it is refused (HTTP 404), so that a typo
    leaves no phantom queue behind."""

    def __init__(self, queue: str):
        self.queue = queue
        super().__init__(
            f"no queue named {queue!r}: it has no jobs, no registered handler, Tasks backend or "
            "periodic schedule names it, and it has no setting. Check the name; a new queue "
            "exists once a handler declares it (@handler(..., queue=...)) or a job is enqueued "
            "into it.")


class HostNotFound(JobError, LookupError):
    """No worker host of that name: no live worker process reports it (job_workers) and it
    has no override. Overriding a queue on it is refused (HTTP 404), as for a queue that does
    not exist, so that a typo leaves no override nobody reads."""

    def __init__(self, hostname: str):
        self.hostname = hostname
        super().__init__(
            f"no worker host named {hostname!r}: no worker process reports it (the workers "
            "page lists those that do) and it has no override. Start its workers first, or "
            "check the name (run_job_workers --hostname sets it).")


class ScheduleNotFound(JobError, LookupError):
    """No periodic schedule of that name (JOB_PERIODIC or @periodic): HTTP 404."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"no periodic schedule named {name!r}")


class BatchNotFound(JobError, LookupError):
    """No batch of that id (services.enqueue_batch's): HTTP 404."""

    def __init__(self, batch_id: object):
        self.batch_id = batch_id
        super().__init__(f"no batch {batch_id!r}")


class ScheduleInvalid(JobError):
    """The schedule cannot enqueue a job (its `problems`): HTTP 409."""

    def __init__(self, name: str, problems: list[str]):
        self.name, self.problems = name, problems
        super().__init__(f"periodic schedule {name!r} is invalid: {'; '.join(problems)}")


class InvalidTransition(JobError):
    """The job is not in a status the requested transition starts from (HTTP 409)."""

    def __init__(self, job_id: int, action: str, status: str | None):
        self.job_id, self.action, self.status = job_id, action, status
        super().__init__(f"cannot {action} job {job_id}: it is {status}")


class UniqueKeyHeld(InvalidTransition):
    """A unique job cannot be retried: another job holds its unique key now (HTTP 409)."""

    def __init__(self, job_id: int, status: str | None, holder_id: int):
        super().__init__(job_id, "retry", status)
        self.holder_id = holder_id
        self.args = (f"cannot retry job {job_id}: job {holder_id} holds its unique key",)


class DependencyNotRetried(InvalidTransition):
    """A job enqueued after others cannot be retried on its own: a job it waits for (and must
    not outlive) failed, was cancelled or is gone; retry that one first, or both at once
    (HTTP 409)."""

    def __init__(self, job_id: int, status: str | None, dependency_id: int,
                 dependency_status: str | None):
        super().__init__(job_id, "retry", status)
        self.dependency_id, self.dependency_status = dependency_id, dependency_status
        why = {"failed": "failed", "cancelled": "was cancelled"}.get(dependency_status or "",
                                                                      "no longer exists")
        self.args = (f"cannot retry job {job_id}: job {dependency_id}, which it waits for, "
                     f"{why}; retry job {dependency_id} first, or both together",)


class LeaseLost(JobError):
    """A worker's write was refused: the job is no longer running under its lease token.

    The reaper requeued the job after the lease expired (and perhaps another worker claimed
    it), or an operator cancelled it. The worker must drop the job: its result is discarded.
    """

    def __init__(self, job_id: int, lease_token: object, action: str):
        self.job_id, self.lease_token, self.action = job_id, lease_token, action
        super().__init__(f"lease lost on job {job_id} ({action} refused for token {lease_token})")




class IdempotencyConflict(JobError):
    """The idempotency key was used before for a different request (HTTP 409)."""

    def __init__(self, key: str | None, job_id: int):
        self.key, self.job_id = key, job_id
        super().__init__(
            f"idempotency key {key!r} was already used for a different request (job {job_id})"
        )


class PermanentError(JobError):
    """Raise from a handler to fail the job at once, without retrying."""


class DependencyResultsTooLarge(PermanentError):
    """`ctx.dependency_results`: the results of the jobs this one was enqueued after are, in
    all, over JOB_MAX_RESULT_BYTES. Deterministic, so the job fails for good (a permanent
    error) unless its handler catches it."""

    def __init__(self, job_id: int, total_bytes: int, limit: int):
        self.job_id, self.total_bytes, self.limit = job_id, total_bytes, limit
        super().__init__(f"the results of the jobs job {job_id} waited for are {total_bytes} "
                         f"bytes of JSON in all, over JOB_MAX_RESULT_BYTES ({limit})")


class AttemptFailed(JobError):
    """A failed attempt that no exception of the handler's describes, as JOB_ERROR_HOOKS are
    told of it: its message is the job's recorded error, `reason` says what failed it
    (`unknown_type`, `transaction_left_open`, `timeout`, `lease_expired`, `error`)."""

    def __init__(self, job_id: int, reason: str, error: str):
        self.job_id, self.reason = job_id, reason
        super().__init__(error)


class JobCancelled(JobError):
    """Raised by `ctx.raise_if_should_stop()` when the job was cancelled or its lease lost."""


class JobFailed(JobError):
    """What `wait()` and `await_result()` raise for a job that did not succeed: it failed for
    good (`status` "failed") or was cancelled ("cancelled"). `error` is the job's last error
    (empty for a job cancelled before it ran)."""

    def __init__(self, job_id: int, status: str, error: str):
        self.job_id, self.status, self.error = job_id, status, error
        outcome = "failed" if status == "failed" else "was cancelled"
        super().__init__(f"job {job_id} {outcome}" + (f": {error}" if error else ""))


class WaitTimeout(JobError, TimeoutError):
    """What `wait()` and `await_result()` raise when the job reached no outcome within the
    timeout. Nothing was changed: the job goes on as before."""

    def __init__(self, job_id: int, timeout: float):
        self.job_id, self.timeout = job_id, timeout
        super().__init__(f"job {job_id} reached no outcome within {timeout:g} seconds")


class InvalidJobArgument(JobError, ValueError):
    """An argument of `enqueue` / `enqueue_many` (or of the Tasks backend, the API, the admin)
    that the queue refuses. `argument` names it ("payload", "run_at", ...); in a batch, `index`
    is the position of the offending job (None for a single enqueue). Nothing was written.

    The API answers 400 naming `argument` as the field."""

    def __init__(self, argument: str, message: str, *, index: int | None = None):
        self.argument, self.index, self.detail = argument, index, message
        prefix = f"jobs[{index}]: " if index is not None else ""
        super().__init__(f"{prefix}{argument}: {message}")

    def at(self, index: int) -> "InvalidJobArgument":
        """The same error, for the job at `index` of a batch."""
        error = type(self).__new__(type(self))
        error.__dict__.update(self.__dict__)
        InvalidJobArgument.__init__(error, self.argument, self.detail, index=index)
        return error


class JobArgumentTypeError(InvalidJobArgument, TypeError):
    """An argument of the wrong type (a str for `run_at`, a float for `timeout` ...)."""


class JobPayloadTooLarge(InvalidJobArgument):
    """The payload encodes to more than JOB_MAX_PAYLOAD_BYTES of JSON (the API answers 413)."""

    def __init__(self, size: int, limit: int, *, index: int | None = None):
        self.size, self.limit = size, limit
        super().__init__("payload", self.describe(size, limit), index=index)

    @staticmethod
    def describe(size: int, limit: int) -> str:
        """What is wrong with a JSON value of `size` bytes (a payload, a signal's data)."""
        return f"encodes to {size} bytes of JSON; the limit is {limit} (JOB_MAX_PAYLOAD_BYTES)"


class UnknownJobType(InvalidJobArgument):
    """No handler is registered for this job type (an InvalidJobArgument naming `type`).
    `creatable`: for the API's caller, the types it may create, listed in the message."""

    def __init__(self, job_type: str, *, index: int | None = None,
                 creatable: list[str] | None = None):
        self.job_type = job_type
        message = f"unknown job type {job_type!r}"
        if creatable is not None:
            message += f"; types the API may create: {', '.join(creatable) or 'none'}."
        super().__init__("type", message, index=index)


class NotCreatable(InvalidJobArgument):
    """The API may not create this job (a type not in JOB_API_CREATABLE_TYPES, a Django task
    not in JOB_API_CREATABLE_TASKS): an InvalidJobArgument naming `type` or `payload`, which
    the API answers 400 with the error on that field. `enqueue()` from Python never raises
    it."""


class DirectJobCreation(JobError):
    """A job row was about to be inserted through the ORM (`Job.objects.create`,
    `Job(...).save()`, `bulk_create`): such a job would have no `created` event and wake no
    worker. Create jobs with `enqueue()`; see `models.allow_direct_job_writes` for tests."""

    def __init__(self, how: str):
        self.how = how
        super().__init__(
            f"{how} would insert a job without its 'created' event or the NOTIFY that wakes "
            "workers: create jobs with django_pg_jobqueue.enqueue() (or enqueue_many()). "
            "Tests of the table itself may wrap the insert in "
            "django_pg_jobqueue.models.allow_direct_job_writes().")


class UnstorableResult(JobError, ValueError):
    """The handler returned a value that cannot be stored as the job's result (not JSON, or
    over JOB_MAX_RESULT_BYTES). Deterministic: the job fails for good; JOB_ERROR_HOOKS get it
    as the exception."""


class Snooze(JobError):  # noqa: N818 - the verb the handler calls: ctx.snooze(seconds)
    """Raised by `ctx.snooze(seconds)`: the worker requeues the job without spending an attempt.
    Control flow, as JobCancelled is: the executor catches it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        super().__init__(f"snoozed for {seconds}s")


class Park(Snooze):  # noqa: N818 - control flow, as Snooze is
    """Raised by `ctx.sleep_until(when)` and `ctx.wait_for_signal(name)`: the worker parks the
    job (back to queued without spending an attempt) until `until`, or until signal `signal`
    is sent or its `timeout_seconds` (counted from the first wait) run out. A Snooze, so that
    middleware, tracing and the Tasks runner pass it on as they pass a snooze."""

    def __init__(self, *, until: datetime | None = None, signal: str | None = None,
                 timeout_seconds: float | None = None):
        self.until, self.signal, self.timeout_seconds = until, signal, timeout_seconds
        JobError.__init__(self, f"waiting for signal {signal!r}" if signal is not None
                          else f"sleeping until {until}")
        self.seconds = 0.0


class SignalTimedOut(PermanentError):
    """What `ctx.wait_for_signal(name, timeout=...)` raises once the timeout (counted from the
    job's first wait for that signal) passed with no signal sent. A handler that catches it
    decides what the job does; uncaught, the job fails for good (a permanent error): waiting
    again would time out again."""

    def __init__(self, job_id: int, name: str):
        self.job_id, self.name = job_id, name
        super().__init__(f"job {job_id}: no signal {name!r} arrived within its wait's timeout")


class SignalAlreadySent(InvalidTransition):
    """`send_signal`: the job already got a signal of that name (each name is sent once: the
    first one's data is what its wait returns). HTTP 409."""

    def __init__(self, job_id: int, name: str, status: str | None):
        super().__init__(job_id, "signal", status)
        self.name = name
        self.args = (f"cannot signal job {job_id}: it already got signal {name!r}",)


class SignalWaitTimedOut(InvalidTransition):
    """`send_signal`: the job's wait for that signal timed out before it came. The handler
    went on without it (SignalTimedOut), and every later run of the handler must see the same:
    the signal is refused, not kept. HTTP 409."""

    def __init__(self, job_id: int, name: str, status: str | None):
        super().__init__(job_id, "signal", status)
        self.name = name
        self.args = (f"cannot signal job {job_id}: its wait for signal {name!r} timed out",)
