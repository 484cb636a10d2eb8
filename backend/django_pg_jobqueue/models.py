"""Job and JobEvent. The database itself enforces every valid shape of a job row.

Each rule is a named CheckConstraint, so that no code path (raw SQL, the admin, a data
migration) can store an impossible job; `tests/contracts/test_constraints.py` breaks each one.

Which code moves a job in and out of each status:
- queued: created by `services.enqueue`; re-entered from running by `services.fail` (retry),
  the reaper (expired lease), `services.release` (shutdown) and `services.snooze`; from
  failed/cancelled by `services.retry`. Left by `services.claim` and `services.cancel`.
- running: entered only by the claim (sql.CLAIM, CLAIM_LIMITED, CLAIM_KEYED). Left by
  complete, fail, cancel, release, snooze (each presenting the lease token) or by the reaper
  once the lease expired; a keyed job leaving it frees its key's slot (and wakes the workers).
- succeeded, failed, cancelled: terminal; only `services.retry` (failed, cancelled) leaves them.
"""
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Cast, Now
from django.db.models.lookups import Exact

from .exceptions import DirectJobCreation
from .states import (
    AFTER_FAILURE_CANCEL,
    AFTER_FAILURE_CHOICES,
    MAX_AGING_SECONDS,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_CONCURRENCY_KEY_LIMIT,
    MAX_HOSTNAME_LENGTH,
    MAX_OVERRIDE_THREADS,
    MAX_RATE_PERIOD_SECONDS,
    MAX_UNIQUE_KEY_STORED_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    RATE_LIMIT_KINDS,
    AuditTarget,
    EventKind,
    OperatorAction,
    Status,
)


class TxNow(models.Func):
    """PostgreSQL's now(): the transaction's start time, the clock every queue statement uses
    (Django's Now() is statement_timestamp(), which differs inside a long transaction)."""

    template = "now()"
    output_field = models.DateTimeField()


# unique_states ? status (the JSON array holds the status): whether a job counts for its
# unique key (job_unique_key_unique).
STATUS_IN_UNIQUE_STATES = models.Func(
    F("unique_states"), F("status"), template="(%(expressions)s)", arg_joiner=" ? ",
    output_field=models.BooleanField())

LOCK_FIELDS_EMPTY = Q(locked_by__isnull=True, lease_token__isnull=True, lease_expires_at__isnull=True)


# -- jobs are created by services.enqueue, not through the ORM --------------------------------
# A row inserted by Job.objects.create, Job(...).save() or bulk_create would have no `created`
# event (the event feed, the dashboard and audit_jobs start from it) and send no NOTIFY (idle
# workers would not hear of it until their next poll). Those inserts raise DirectJobCreation,
# naming enqueue(). Updates through the ORM (`.filter(...).update(...)`, saving a fetched job)
# are not refused, nor `loaddata` (fixtures save rows raw, their events included).
_direct_writes_allowed: ContextVar[bool] = ContextVar("direct_job_writes", default=False)


@contextmanager
def allow_direct_job_writes():
    """Within this block (in this thread or task), the ORM may insert job rows directly.

    For tests of the table itself (its check constraints) and for data repairs that write
    the events themselves. Jobs inserted so have no `created` event and wake no worker.

        with allow_direct_job_writes():
            Job.objects.create(type="noop", idempotency_key="k1")
    """
    token = _direct_writes_allowed.set(True)
    try:
        yield
    finally:
        _direct_writes_allowed.reset(token)


def _refuse_direct_creation(how: str) -> None:
    if not _direct_writes_allowed.get():
        raise DirectJobCreation(how)


class JobQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        _refuse_direct_creation("Job.objects.bulk_create()")
        return super().bulk_create(objs, *args, **kwargs)

    def queued(self):
        return self.filter(status=Status.QUEUED)

    def runnable(self):
        return self.filter(status=Status.QUEUED, available_at__lte=Now())

    def running(self):
        return self.filter(status=Status.RUNNING)

    def succeeded(self):
        return self.filter(status=Status.SUCCEEDED)



class Job(models.Model):
    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=100)
    queue = models.CharField(max_length=100, default="default", db_default="default")
    payload = models.JSONField(default=dict, db_default=models.Value({}, models.JSONField()))
    status = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in Status], default=Status.QUEUED,
        db_default=Status.QUEUED.value,
    )
    priority = models.SmallIntegerField(default=0, db_default=0,
                                        help_text=f"{PRIORITY_MIN}..{PRIORITY_MAX}, higher runs first")
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    max_attempts = models.PositiveIntegerField(default=3, db_default=3)
    available_at = models.DateTimeField(db_default=Now())
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    locked_by = models.CharField(max_length=200, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    progress_percent = models.SmallIntegerField(null=True, blank=True)
    progress_message = models.CharField(max_length=500, blank=True, default="", db_default="")
    result = models.JSONField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    last_traceback = models.TextField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    # sha256 of the creating request, so that a reused key with a different request is a 409.
    request_fingerprint = models.CharField(max_length=64, null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    # This job's own retry policy (retries.RetryPolicy's JSON shape), set at enqueue; it wins
    # over its type's. NULL: the type's policy, else the JOB_RETRY_* settings.
    retry_policy = models.JSONField(null=True, blank=True)
    # When a worker that does not know this job's type first gave it back (sql.RELEASE_UNKNOWN_TYPE):
    # it waits for a worker that does. Cleared when a worker runs it and it fails or succeeds.
    unknown_type_at = models.DateTimeField(null=True, blank=True)
    # After this time (the database clock) the idempotency key no longer replays: the next
    # enqueue with it takes it over (JOB_IDEMPOTENCY_KEY_TTL_SECONDS; NULL: never).
    idempotency_expires_at = models.DateTimeField(null=True, blank=True)
    # Unique jobs (services/enqueuing.py, docs/how-to/unique-jobs.md): "<type>:<key>", held
    # by at most one job whose status is in its own unique_states (job_unique_key_unique).
    unique_key = models.CharField(max_length=MAX_UNIQUE_KEY_STORED_LENGTH, null=True, blank=True)
    unique_states = models.JSONField(null=True, blank=True)  # a JSON array of statuses
    # Some job was enqueued after this one (job_dependencies): its completion, failure or
    # cancel then settles those dependants (services/dependencies.py).
    has_dependants = models.BooleanField(default=False, db_default=False)
    # At most concurrency_key_limit jobs with the same concurrency key run at once, across
    # every worker (services/claiming.py); both NULL for a job without a key.
    concurrency_key = models.CharField(max_length=MAX_CONCURRENCY_KEY_LENGTH, null=True,
                                       blank=True)
    concurrency_key_limit = models.SmallIntegerField(null=True, blank=True)
    # Fair shares (docs/how-to/fairness.md): in a queue whose setting says `fair`, claims
    # take jobs round-robin across these keys (sql.CLAIM_FAIR). NULL: no key.
    fairness_key = models.CharField(max_length=MAX_CONCURRENCY_KEY_LENGTH, null=True,
                                    blank=True)
    # Enqueue policies (docs/how-to/enqueue-policies.md). A job still queued at expires_at is
    # never claimed (sql.CLAIM's filter) and the reaper's sweep ends it cancelled with an
    # `expired` event (sql.EXPIRE_QUEUED_PAST_DEADLINE). NULL: it never expires.
    expires_at = models.DateTimeField(null=True, blank=True)
    # A debounced job's key ("<type>:<scope>debounce:..."), held while it waits to start
    # (job_debounce_key_unique): an enqueue with the same key replaces its payload and pushes
    # its start instead of adding a job. The claim clears it (a started job is no longer
    # pending), and so does an operator's retry.
    debounce_key = models.CharField(max_length=MAX_UNIQUE_KEY_STORED_LENGTH, null=True,
                                    blank=True)
    # The batch this job is a member of (services/batches.py), NULL for most jobs: set in the
    # enqueue's transaction, never changed. No foreign key in the database (a constraint
    # trigger on the hottest table for a column that never changes after the enqueue).
    batch = models.ForeignKey("JobBatch", on_delete=models.DO_NOTHING, db_constraint=False,
                              null=True, blank=True, related_name="jobs", db_index=False)

    objects = JobQuerySet.as_manager()

    class Meta:
        db_table = "jobs"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in Status]), name="job_status_known"
            ),
            models.CheckConstraint(
                condition=Q(status=Status.QUEUED) & LOCK_FIELDS_EMPTY
                & Q(finished_at__isnull=True, cancel_requested_at__isnull=True)
                | ~Q(status=Status.QUEUED),
                name="job_queued_has_no_lock_and_no_finish",
            ),
            models.CheckConstraint(
                condition=Q(
                    status=Status.RUNNING,
                    locked_by__isnull=False,
                    lease_token__isnull=False,
                    lease_expires_at__isnull=False,
                    started_at__isnull=False,
                    finished_at__isnull=True,
                )
                | ~Q(status=Status.RUNNING),
                name="job_running_has_lease",
            ),
            models.CheckConstraint(
                condition=~Q(status__in=[Status.SUCCEEDED, Status.FAILED, Status.CANCELLED])
                | LOCK_FIELDS_EMPTY & Q(finished_at__isnull=False),
                name="job_finished_has_finish_time_and_no_lock",
            ),
            models.CheckConstraint(
                condition=Q(attempts__gte=0, attempts__lte=F("max_attempts")),
                name="job_attempts_within_max",
            ),
            models.CheckConstraint(
                # A queued job always has an attempt left: retries are only scheduled while
                # attempts < max_attempts, and a manual retry raises max_attempts if needed.
                condition=~Q(status=Status.QUEUED) | Q(attempts__lt=F("max_attempts")),
                name="job_queued_has_attempt_left",
            ),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="job_max_attempts_positive"),
            models.CheckConstraint(
                condition=Q(priority__gte=PRIORITY_MIN, priority__lte=PRIORITY_MAX),
                name="job_priority_in_range",
            ),
            models.CheckConstraint(
                condition=Q(timeout_seconds__isnull=True) | Q(timeout_seconds__gte=1),
                name="job_timeout_positive",
            ),
            models.CheckConstraint(
                condition=Q(progress_percent__isnull=True)
                | Q(progress_percent__gte=0, progress_percent__lte=100),
                name="job_progress_is_a_percentage",
            ),
            models.CheckConstraint(condition=~Q(type=""), name="job_type_not_empty"),
            models.CheckConstraint(
                condition=Exact(
                    models.Func(F("payload"), function="jsonb_typeof", output_field=models.CharField()),
                    "object",
                ),
                name="job_payload_is_object",
            ),
            models.CheckConstraint(
                condition=Q(concurrency_key__isnull=True, concurrency_key_limit__isnull=True)
                | Q(concurrency_key__isnull=False, concurrency_key_limit__isnull=False,
                    concurrency_key_limit__gte=1, concurrency_key_limit__lte=MAX_CONCURRENCY_KEY_LIMIT),
                name="job_concurrency_key_has_limit",
            ),
            models.UniqueConstraint(
                fields=["idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="job_idempotency_key_unique",
            ),
            # At most one job per unique key among the jobs whose status is one of their own
            # unique_states: a job leaves this index by itself when its status leaves them
            # (no statement that moves a job needs to know about uniqueness), and the
            # enqueue's INSERT ... ON CONFLICT is arbitrated by it (sql.ENQUEUE_ONE).
            models.UniqueConstraint(
                fields=["unique_key"],
                condition=Q(unique_key__isnull=False) & Q(STATUS_IN_UNIQUE_STATES),
                name="job_unique_key_unique",
            ),
            # At most one pending (queued) job per debounce key: the arbiter of the debounced
            # enqueue's INSERT ... ON CONFLICT DO UPDATE (sql.ENQUEUE_ONE_DEBOUNCED), so 32
            # producers of one key update one row, whatever their interleaving.
            models.UniqueConstraint(
                fields=["debounce_key"],
                condition=Q(debounce_key__isnull=False, status=Status.QUEUED),
                name="job_debounce_key_unique",
            ),
        ]
        indexes = [
            # The claim: queued rows in claim order (see sql.CLAIM). Partial, so it only holds
            # the runnable backlog, however many finished rows the table keeps.
            models.Index(
                F("priority").desc(), "available_at", "created_at", "id",
                name="jobs_claim_order_idx", condition=Q(status="queued"),
            ),
            # The reaper: the running set (at most one row per worker thread). Indexed by id,
            # not by lease_expires_at, so that lease renewals change no indexed column and
            # can be HOT updates (see migration 0002's notes).
            models.Index("id", name="jobs_running_idx", condition=Q(status="running")),
            # Pruning and the recent-throughput figures: finished rows only. Partial, so the
            # enqueue and the claim (finished_at is NULL then) write one index fewer.
            models.Index("status", "finished_at", name="jobs_status_finished_idx",
                         condition=Q(finished_at__isnull=False)),
            # Listing and filtering.
            models.Index("type", "status", name="jobs_type_status_idx"),
            models.Index("queue", "status", name="jobs_queue_status_idx"),  # queues, metrics
            models.Index("created_at", name="jobs_created_idx"),
            # The dependency sweep (services/dependencies.py): waiting jobs only.
            models.Index("id", name="jobs_waiting_idx", condition=Q(status="waiting")),
            # Concurrency keys (services/claiming.py): all three hold keyed rows only, so jobs
            # without a key write none of them. The keyed claim finds keys with a job waiting
            # in claim order, then each key's next jobs; it counts each key's running jobs on
            # jobs_running_idx (the running set: at most one row per worker thread).
            models.Index(
                F("priority").desc(), "available_at", "created_at", "id",
                name="jobs_keyed_claim_order_idx",
                condition=Q(status="queued", concurrency_key__isnull=False),
            ),
            models.Index(
                "concurrency_key", F("priority").desc(), "available_at", "created_at", "id",
                name="jobs_key_claim_order_idx",
                condition=Q(status="queued", concurrency_key__isnull=False),
            ),
            # Fair shares (sql.CLAIM_FAIR): each key's queued jobs in a fair queue, in due
            # order within a priority. Holds rows with a fairness key only, so jobs without
            # one write nothing to it. The priority as an int: the fair claim looks it up as
            # `priority::int`, which jobs_claim_order_idx cannot serve, so no statistics can
            # send a key's lookup down that index instead (a walk of the whole backlog).
            models.Index(
                "queue", "fairness_key", Cast("priority", models.IntegerField()), "available_at",
                "created_at", "id", name="jobs_fair_claim_order_idx",
                condition=Q(status="queued", fairness_key__isnull=False),
            ),
            # The jobs list filtered by key (?concurrency_key=), newest first.
            models.Index("concurrency_key", "id", name="jobs_concurrency_key_idx",
                         condition=Q(concurrency_key__isnull=False)),
            # The expiry sweep (sql.EXPIRE_QUEUED_PAST_DEADLINE): queued jobs with a deadline
            # only, so jobs without one write nothing to it.
            models.Index("expires_at", name="jobs_queued_expiry_idx",
                         condition=Q(status="queued", expires_at__isnull=False)),
            # The stager (sql.NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS): queued jobs that were not
            # runnable when written (delayed, retried, snoozed), by when they fall due, so
            # that its pass each second reads the ones that fell due since the last, never the
            # claim index's every entry (under a snapshot held open elsewhere: every job claimed
            # since). A job enqueued to run at once writes nothing to it.
            models.Index("available_at", name="jobs_due_later_idx",
                         condition=Q(status="queued", available_at__gt=F("created_at"))),
            # Batches (services/batches.py): both hold members of batches only, so a job outside
            # a batch writes neither. The first lists and counts a batch's members; the
            # second holds its unfinished ones, so that "is anything of the batch left?", asked
            # after each member's outcome, is one probe however large the batch is.
            models.Index("batch", "id", name="jobs_batch_idx", condition=Q(batch__isnull=False)),
            models.Index("batch", name="jobs_batch_unfinished_idx",
                         condition=Q(batch__isnull=False)
                         & ~Q(status__in=["succeeded", "failed", "cancelled"])),
            # Not here, as Django's GinIndex would make every host add django.contrib.postgres
            # to INSTALLED_APPS: the job search's trigram index jobs_last_error_trgm_idx
            # (migration 0012, sql.SEARCH_TEXT_MATCHES). The payload's is on JobSearchText.
        ]

    def __str__(self) -> str:
        return f"{self.type}#{self.id} ({self.status})"

    def save(self, *args, **kwargs):
        # A new instance, or force_insert: an INSERT (Job.objects.create comes here too).
        if self._state.adding or kwargs.get("force_insert"):
            _refuse_direct_creation("Job.objects.create() / Job(...).save()")
        return super().save(*args, **kwargs)


class JobEvent(models.Model):
    """One thing that happened to a job. Ids only grow: clients poll with `after=<id>`."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: job_events_job_id_idx (job_id, id) serves every lookup by job,
    # and one index fewer is written for each of the several events of every job.
    # No foreign key in the database: the history's guard (statement-level triggers, migration
    # 0015, sql.HISTORY_GUARD_FUNCTIONS) keeps the same promise, an event always names a job
    # that exists, at one query per statement instead of a check per event row. Django's
    # CASCADE still deletes a job's events before the job (the guard refuses the other order).
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events",
                            db_index=False, db_constraint=False)
    kind = models.CharField(max_length=32, choices=[(k.value, k.value) for k in EventKind])
    attempt = models.PositiveIntegerField(default=0, db_default=0)
    worker_id = models.CharField(max_length=200, null=True, blank=True)
    message = models.TextField(blank=True, default="", db_default="")
    data = models.JSONField(default=dict, db_default=models.Value({}, models.JSONField()))
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_events"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in EventKind]), name="job_event_kind_known"
            ),
        ]
        indexes = [models.Index("job", "id", name="job_events_job_id_idx")]

    def __str__(self) -> str:
        return f"{self.kind} job={self.job_id} #{self.id}"


class HistoryEvent(models.Model):
    """One event of a job's history as every reader reads it: a row of the view job_history
    (migration 0031), never of the table job_events itself. Read-only, and Django creates no
    table for it (managed=False); every writer writes JobEvent. The view is the history's
    one read path (the timeline, the feed's lookups by id, the metrics' windows, audit_jobs,
    a task's result), so that where the history is kept can change in one place: today the
    view is job_events' rows, column for column (docs/explanation/design.md, the history)."""

    id = models.BigIntegerField(primary_key=True)
    job = models.ForeignKey(Job, on_delete=models.DO_NOTHING, related_name="history",
                            db_index=False, db_constraint=False)
    kind = models.CharField(max_length=32, choices=[(k.value, k.value) for k in EventKind])
    attempt = models.PositiveIntegerField()
    worker_id = models.CharField(max_length=200, null=True, blank=True)
    message = models.TextField(blank=True)
    data = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "job_history"
        ordering = ["id"]
        verbose_name = "history event"
        # No permissions of its own: who may see the history is who may see JobEvent's rows
        # (the admin's inline asks for view_jobevent).
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.kind} job={self.job_id} #{self.id}"


class JobDependency(models.Model):
    """`job` runs only after `depends_on` succeeded (enqueue(after=[...])). A job can depend
    only on jobs that exist when it is enqueued, so no cycle can form. No foreign keys in the
    database: a dependency may be pruned before its dependants (its outcome settled them
    already); the pruner deletes a job's own rows here with it."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(Job, on_delete=models.DO_NOTHING, db_constraint=False,
                            related_name="dependency_links", db_index=False)
    depends_on = models.ForeignKey(Job, on_delete=models.DO_NOTHING, db_constraint=False,
                                   related_name="dependant_links", db_index=False)
    on_failure = models.CharField(max_length=8, choices=[(c, c) for c in AFTER_FAILURE_CHOICES],
                                  default=AFTER_FAILURE_CANCEL, db_default=AFTER_FAILURE_CANCEL)

    class Meta:
        db_table = "job_dependencies"
        ordering = ["id"]
        verbose_name_plural = "job dependencies"
        constraints = [
            models.UniqueConstraint(fields=["job", "depends_on"], name="job_dependency_unique"),
            models.CheckConstraint(condition=~Q(job=F("depends_on")),
                                   name="job_dependency_not_itself"),
            models.CheckConstraint(condition=Q(on_failure__in=AFTER_FAILURE_CHOICES),
                                   name="job_dependency_on_failure_known"),
        ]
        indexes = [models.Index("depends_on", name="job_dependencies_on_idx")]


class JobSearchText(models.Model):
    """A job's payload as the job list's text search reads it (`payload::text`,
    sql.SEARCH_TEXT_MATCHES), written by the enqueue's own statement (sql.ENQUEUE_ONE), and
    again only when a debounced enqueue replaces a pending job's payload
    (sql.ENQUEUE_ONE_DEBOUNCED): no other write changes a payload. Apart from `jobs` so that the
    claim and the completion, which rewrite the job row (each a non-HOT update: status is
    indexed), do not add the payload's trigrams to a GIN index again; its trigram index
    job_search_text_trgm_idx (migration 0016) is written once per job. A job whose payload is
    `{}` has no row: no search of 3 characters or more can match it. The text is always the
    payload's JSON: the payload filter's index job_search_text_payload_idx casts it to jsonb
    (migration 0026), so a write of text that is not JSON fails.

    No foreign key in the database, as for job_dependencies: its check would cost each enqueued
    row a probe of `jobs` and a lock of the new job's row (bench/search_indexes.py: 13 % more
    server CPU for a bulk enqueue of 300-byte payloads, and more WAL for the later claim and
    completion), and its ON DELETE CASCADE would delete row by row from a trigger. Every statement that deletes jobs deletes their rows
    here in the same statement instead (sql.DELETE_FINISHED_JOB, sql.PRUNE_BATCH); Django's
    CASCADE below covers a delete through the ORM. A row left behind by any other delete is
    harmless to the search (it matches by job id, and ids are not reused) and `audit_jobs`
    reports it."""

    job = models.OneToOneField(Job, primary_key=True, on_delete=models.CASCADE,
                               db_constraint=False, related_name="search_text")
    payload_text = models.TextField()

    class Meta:
        db_table = "job_search_text"
        verbose_name = "job search text"
        verbose_name_plural = "job search texts"
        # Not here, as on Job: its trigram index job_search_text_trgm_idx (migration 0016),
        # and the payload filter's GIN index job_search_text_payload_idx on
        # `payload_text::jsonb` (migration 0026, sql.PAYLOAD_CONTAINS).

    def __str__(self) -> str:
        return f"search text of job {self.job_id}"


class JobBatch(models.Model):
    """A batch of jobs enqueued together (services.enqueue_batch), and what to enqueue once
    every member finished: its callbacks.

    While the batch runs, its progress is read from its members (selectors.batch_progress).
    `finished_at` is set once, by the one statement that finds no member unfinished
    (sql.FINISH_BATCHES, guarded by `finished_at IS NULL`), in the same transaction
    that enqueues the callbacks: whichever worker wins that update enqueues them, and no
    other can. The counts are frozen then; a member retried later does not reopen the batch."""

    id = models.BigAutoField(primary_key=True)
    total = models.IntegerField()  # the members the enqueue created
    # {"on_complete" | "on_success" | "on_failure": {type, queue, priority, max_attempts,
    # timeout_seconds, retry_policy, payload}}: each callback's job, resolved at the enqueue.
    callbacks = models.JSONField(default=dict, db_default=models.Value({}, models.JSONField()))
    pass_results = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(db_default=Now())
    cancelled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The members' outcomes when the batch finished (NULL before).
    succeeded = models.IntegerField(null=True, blank=True)
    failed = models.IntegerField(null=True, blank=True)
    cancelled = models.IntegerField(null=True, blank=True)
    # {"on_complete": job id, ...}: the callbacks enqueued when it finished.
    callback_jobs = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "job_batches"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True)
                | Q(succeeded__isnull=False, failed__isnull=False, cancelled__isnull=False,
                    callback_jobs__isnull=False),
                name="job_batch_finished_has_counts",
            ),
        ]
        indexes = [
            # The sweep (services/batches.py): unfinished batches only.
            models.Index("id", name="job_batches_unfinished_idx",
                         condition=Q(finished_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"batch {self.id}"


class JobStep(models.Model):
    """A durable step of a job (`ctx.step(name, fn)`): `fn` ran and returned `result`, so a
    later attempt of the same job gets the result back without calling `fn` again.

    A table of its own rather than an event: the unique constraint below makes a step's record
    exactly once even when two attempts race (an expired lease's handler still running), a
    step's result may be as large as a job's (JOB_MAX_RESULT_BYTES), which the event feed and
    the job's timeline should not carry, and the steps of a job are read in one index scan on
    every attempt. As job_search_text, no foreign key in the database: the statements that
    delete jobs delete their steps (sql.DELETE_FINISHED_JOB, sql.PRUNE_BATCH); Django's CASCADE
    covers a delete through the ORM. A job retried by an operator keeps its steps; a re-run
    (a new job) has none."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(Job, on_delete=models.CASCADE, db_constraint=False,
                            related_name="steps", db_index=False)
    name = models.CharField(max_length=200)
    attempt = models.IntegerField()  # the attempt that ran it
    result = models.JSONField(null=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_steps"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="job_step_name_unique"),
        ]

    def __str__(self) -> str:
        return f"step {self.name} of job {self.job_id}"


class JobSignal(models.Model):
    """A signal sent to a job (`send_signal(job_id, name, data)`), or awaited by it
    (`ctx.wait_for_signal(name)`): one row per job and name, whichever comes first. A signal
    sent before the job waits for it is kept here, and the wait returns its data at once; a
    name is sent once (a second send is refused). `awaited_at`: the job parked for it (the
    send then makes the job due); `timeout_at`: when its first wait's timeout ends; `sent_at`:
    NULL until sent. No foreign key, as job_steps: the statements that delete jobs delete
    their signals (sql.DELETE_FINISHED_JOB, sql.PRUNE_BATCH)."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(Job, on_delete=models.CASCADE, db_constraint=False,
                            related_name="signals", db_index=False)
    name = models.CharField(max_length=200)
    data = models.JSONField(null=True)
    sent_at = models.DateTimeField(null=True)
    awaited_at = models.DateTimeField(null=True)
    timeout_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_signals"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="job_signal_name_unique"),
        ]

    def __str__(self) -> str:
        return f"signal {self.name} of job {self.job_id}"


class WorkerProcess(models.Model):
    """A live `run_job_workers` process, seen through its heartbeat (for metrics and the UI)."""

    id = models.CharField(max_length=200, primary_key=True)  # <host>-<pid>
    hostname = models.CharField(max_length=200)
    pid = models.IntegerField()
    threads = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    started_at = models.DateTimeField(db_default=Now())
    heartbeat_at = models.DateTimeField(db_default=Now())
    # What its heartbeat reports (worker/renewer.py): resident memory, jobs run since it
    # started, handlers running past their timeout plus grace now (worker/stuck.py), its own
    # heartbeat interval (silent for two of them: shown as lost) and its supervisor's pid.
    rss_bytes = models.BigIntegerField(null=True, blank=True)
    jobs_done = models.BigIntegerField(default=0, db_default=0)
    stuck_handlers = models.PositiveIntegerField(default=0, db_default=0)
    heartbeat_interval_seconds = models.FloatField(default=2.0, db_default=2.0)
    supervisor_pid = models.IntegerField(null=True, blank=True)
    # What the reaper did with the jobs its threads held once their leases expired (it died or
    # froze): requeued, or failed for good (out of attempts). Kept in its LostWorker row.
    jobs_requeued = models.IntegerField(default=0, db_default=0)
    jobs_failed = models.IntegerField(default=0, db_default=0)

    class Meta:
        db_table = "job_workers"
        ordering = ["id"]
        verbose_name_plural = "worker processes"


class LostWorker(models.Model):
    """A worker process that went silent (died, or froze) and was forgotten once the reaper
    had taken back the jobs it held (sql.FORGET_LOST_WORKERS moves its WorkerProcess row
    here): a short history for the workers page, when it was last seen, when it was forgotten
    and what became of its jobs. Kept for LOST_WORKERS_KEPT_SECONDS, pruned by the same
    statement."""

    id = models.BigAutoField(primary_key=True)
    worker_id = models.CharField(max_length=200)  # <host>-<pid>, as WorkerProcess.id
    hostname = models.CharField(max_length=200)
    pid = models.IntegerField()
    supervisor_pid = models.IntegerField(null=True, blank=True)
    threads = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField()
    forgotten_at = models.DateTimeField(db_default=Now())
    jobs_done = models.BigIntegerField(default=0)
    jobs_requeued = models.IntegerField(default=0)
    jobs_failed = models.IntegerField(default=0)

    class Meta:
        db_table = "job_lost_workers"
        ordering = ["-forgotten_at", "-id"]
        verbose_name = "lost worker process"
        verbose_name_plural = "lost worker processes"
        indexes = [models.Index(fields=["-forgotten_at"], name="job_lost_workers_at_idx")]

    def __str__(self) -> str:
        return f"{self.worker_id} (lost)"


class QueueSetting(models.Model):
    """Per-queue flow control: pause, and a global cap on running jobs across every worker."""

    queue = models.CharField(max_length=100, primary_key=True)
    paused = models.BooleanField(default=False, db_default=False)
    concurrency_limit = models.PositiveIntegerField(null=True, blank=True)
    # Fair shares: claims take this queue's jobs round-robin across their fairness keys.
    fair = models.BooleanField(default=False, db_default=False)
    # Priority aging: a queued job's effective priority rises by one every aging_seconds it
    # waited, up to aging_max_priority (NULL: PRIORITY_MAX). NULL: no aging.
    aging_seconds = models.FloatField(null=True, blank=True)
    aging_max_priority = models.SmallIntegerField(null=True, blank=True)
    # Fair shares' weights: {fairness key or prefix ending in `*`: turns per round (1 to
    # MAX_FAIRNESS_WEIGHT)}; a key neither named nor matched by a prefix has 1. Written by services.set_fairness_weights.
    fairness_weights = models.JSONField(default=dict, db_default={}, blank=True)
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_queue_settings"
        ordering = ["queue"]
        constraints = [
            models.CheckConstraint(
                condition=Q(concurrency_limit__isnull=True) | Q(concurrency_limit__gte=1),
                name="queue_concurrency_limit_positive",
            ),
            models.CheckConstraint(
                condition=Q(aging_seconds__isnull=True)
                | Q(aging_seconds__gt=0, aging_seconds__lte=MAX_AGING_SECONDS),
                name="queue_aging_seconds_positive",
            ),
            models.CheckConstraint(
                condition=Q(aging_max_priority__isnull=True)
                | Q(aging_seconds__isnull=False, aging_max_priority__gte=PRIORITY_MIN,
                    aging_max_priority__lte=PRIORITY_MAX),
                name="queue_aging_max_priority_in_range",
            ),
            models.CheckConstraint(
                condition=Exact(models.Func(F("fairness_weights"), function="jsonb_typeof",
                                            output_field=models.CharField()), "object"),
                name="queue_fairness_weights_object",
            ),
        ]


class WorkerOverride(models.Model):
    """One host's override of how it runs one queue (services/worker_overrides.py, the only
    writer): `threads`, at most this many of the host's executor threads run the queue's
    jobs at once (NULL: as its command line says); `stopped`, the host claims none of them
    (running ones finish). Each worker process of the host (`hostname`, as job_workers names
    it) reads its host's rows on its renewal pass (worker/overrides.py). A row says something:
    removing the override is deleting the row."""

    id = models.BigAutoField(primary_key=True)
    hostname = models.CharField(max_length=MAX_HOSTNAME_LENGTH)
    queue = models.CharField(max_length=100)
    threads = models.IntegerField(null=True, blank=True)
    stopped = models.BooleanField(default=False, db_default=False)
    actor = models.CharField(max_length=150, blank=True, default="", db_default="")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_worker_overrides"
        ordering = ["hostname", "queue"]
        constraints = [
            models.UniqueConstraint(fields=("hostname", "queue"),
                                    name="worker_override_one_per_host_queue"),
            models.CheckConstraint(condition=Q(threads__isnull=True)
                                   | Q(threads__gte=0, threads__lte=MAX_OVERRIDE_THREADS),
                                   name="worker_override_threads_in_range"),
            models.CheckConstraint(condition=Q(threads__isnull=False) | Q(stopped=True),
                                   name="worker_override_says_something"),
            models.CheckConstraint(condition=~Q(hostname="") & ~Q(queue=""),
                                   name="worker_override_names_host_and_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.queue} on {self.hostname}"


class RateLimit(models.Model):
    """A rate limit (services/rate_limits.py): at most `max_starts` job starts (their weights
    summed) in any `period_seconds`, sliding, for a queue, a job type, or the jobs whose
    concurrency key matches `name` (a key, or a prefix ending in `*`). Read by the claim
    (sql.CLAIM_LIMITED, CLAIM_KEYED), which records each start in RateStart."""

    kind = models.CharField(max_length=5, choices=[(k, k) for k in RATE_LIMIT_KINDS])
    name = models.CharField(max_length=MAX_CONCURRENCY_KEY_LENGTH)
    max_starts = models.PositiveIntegerField()
    period_seconds = models.FloatField()
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_rate_limits"
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=("kind", "name"), name="rate_limit_one_per_scope"),
            models.CheckConstraint(condition=Q(kind__in=RATE_LIMIT_KINDS),
                                   name="rate_limit_kind_known"),
            models.CheckConstraint(condition=Q(max_starts__gte=1),
                                   name="rate_limit_max_starts_positive"),
            models.CheckConstraint(condition=Q(period_seconds__gt=0)
                                   & Q(period_seconds__lte=MAX_RATE_PERIOD_SECONDS),
                                   name="rate_limit_period_within_bounds"),
        ]


class RateStart(models.Model):
    """One start counted against a rate limit's window: the claim inserts one per claimed job
    and limit it falls under, `rate_limit(...).try_acquire()` one per acquisition; the
    pruner deletes those older than the longest period. `scope` is `queue:<name>`,
    `type:<name>` or `key:<key>`."""

    id = models.BigAutoField(primary_key=True)
    scope = models.CharField(max_length=MAX_CONCURRENCY_KEY_LENGTH + 10)
    started_at = models.DateTimeField()
    weight = models.IntegerField()

    class Meta:
        db_table = "job_rate_starts"
        ordering = ["id"]
        indexes = [
            # A limit's window: the claim's sums.
            models.Index(fields=["scope", "started_at"], name="job_rate_starts_window_idx"),
            # The recent starts of every key (the keyed claim's full keys), and the pruning.
            models.Index(fields=["started_at"], name="job_rate_starts_started_at_idx"),
        ]


class ScheduleSetting(models.Model):
    """A periodic schedule's operator state (services/schedules.py): paused or not. A schedule
    itself is declared in code or settings (periodic.py); a row exists once it was paused."""

    name = models.CharField(max_length=100, primary_key=True)
    paused = models.BooleanField(default=False, db_default=False)
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_schedule_settings"
        ordering = ["name"]
        verbose_name = "periodic schedule"


class LeaderLease(models.Model):
    """Who runs the maintenance loops (worker/leader.py): one row per role, held by the worker
    process whose heartbeat last renewed it before `expires_at` (the database clock)."""

    role = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=200)  # a WorkerProcess id: <host>-<pid>
    elected_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "job_leader"
        ordering = ["role"]


class AuditLogEntry(models.Model):
    """One operator action: who (`actor`: the user's name; blank from code that named no one)
    did what (`action`, an OperatorAction) to what (`target_kind` and `target`: a job's id, a
    queue's or a schedule's name), when, and with what (`data`: the arguments that matter, the
    value before and after). Written by the service that performs the action, in the same
    transaction (services/audit_log.py): an action rolled back leaves no entry, and no action
    commits without one. Append-only: the admin and the API read it, nothing updates it.

    Not the invariant audit of audit.py (`audit_jobs`), which checks jobs against the state
    machine. No foreign key to jobs: an entry outlives the job it names (a deleted job's
    entry is how anyone learns who deleted it)."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(db_default=Now())
    actor = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=32, choices=[(a, a) for a in OperatorAction])
    target_kind = models.CharField(max_length=16, choices=[(t, t) for t in AuditTarget])
    target = models.CharField(max_length=200)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "job_audit_log"
        ordering = ["-id"]
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log"
        indexes = [
            # The API's filters, newest first: by actor, by action, by target.
            models.Index(fields=["actor", "-id"], name="job_audit_actor_idx"),
            models.Index(fields=["action", "-id"], name="job_audit_action_idx"),
            models.Index(fields=["target_kind", "target", "-id"], name="job_audit_target_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=[a.value for a in OperatorAction]),
                                   name="job_audit_action_known"),
            models.CheckConstraint(condition=Q(target_kind__in=[t.value for t in AuditTarget]),
                                   name="job_audit_target_kind_known"),
        ]

    def __str__(self) -> str:
        return f"{self.actor or '(code)'} {self.action} {self.target_kind} {self.target}"
