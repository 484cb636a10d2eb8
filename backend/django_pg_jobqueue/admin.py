"""The admin: look at jobs, and cancel, retry or delete them through the same services as
the API.

Nothing here writes a job row directly: jobs cannot be added or edited in the admin (the change
form is read-only), so no admin page can bypass the state machine. Finished jobs (succeeded,
failed, cancelled) may be deleted, with their events, by users with delete_job: the delete
action and a finished job's delete page both go through `services.deleting.delete`, whose
statement refuses any other job; the delete page of an unfinished job is a 403. Events are
read-only. Queue settings (pause, concurrency limit) are the one editable model.
"""
import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import get_deleted_objects
from django.contrib.auth import get_permission_codename
from django.db.models import Q
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.timezone import localtime

from . import selectors
from .arguments import check_aging
from .exceptions import (
    InvalidJobArgument,
    InvalidTransition,
    JobNotFound,
    QueueNotFound,
    ScheduleInvalid,
    ScheduleNotFound,
)
from .models import (
    AuditLogEntry,
    HistoryEvent,
    Job,
    JobEvent,
    JobSignal,
    LostWorker,
    QueueSetting,
    RateLimit,
    ScheduleSetting,
    WorkerOverride,
    WorkerProcess,
)
from .registry import registry
from .services import job_actions, queues, rate_limits, send_signal, worker_overrides
from .services import schedules as schedule_services
from .services.shards import on_queue_shard
from .states import TERMINAL, rate_limit_problem

try:
    from django.contrib.admin.options import ActionLocation  # Django 6.1+
except ImportError:  # pragma: no cover - Django < 6.1
    ActionLocation = None

INLINE_EVENTS = selectors.DETAIL_EVENTS


class TypeFilter(admin.SimpleListFilter):
    """Registered types (cheap: no DISTINCT over the jobs table)."""

    title, parameter_name = "type", "type"

    def lookups(self, request, model_admin):
        return [(spec.name, spec.name) for spec in registry.all()]

    def queryset(self, request, queryset):
        return queryset.filter(type=self.value()) if self.value() else queryset


class QueueFilter(admin.SimpleListFilter):
    title, parameter_name = "queue", "queue"

    def lookups(self, request, model_admin):
        return [(q, q) for q in selectors.known_queues()]

    def queryset(self, request, queryset):
        return queryset.filter(queue=self.value()) if self.value() else queryset


class PriorityFilter(admin.SimpleListFilter):
    title, parameter_name = "priority", "priority"
    _buckets = {"high": Q(priority__gt=0), "normal": Q(priority=0), "low": Q(priority__lt=0)}

    def lookups(self, request, model_admin):
        return [("high", "above 0"), ("normal", "0"), ("low", "below 0")]

    def queryset(self, request, queryset):
        bucket = self._buckets.get(self.value())
        return queryset.filter(bucket) if bucket is not None else queryset


class ReadOnlyInline(admin.TabularInline):
    """A job's rows that nobody edits on its page (the queue's own writers make them)."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _attempt_started(event) -> str:
    """The start of the attempt an event ended (history v2: the claim writes no event, the
    outcome carries data.started_at), '-' for any other event; the attempt running now
    shows on the job's own started_at and locked_by."""
    started = (event.data or {}).get("started_at") if isinstance(event.data, dict) else None
    if not started:
        return "-"
    try:  # written by the database: parse_datetime reads its 1 to 6 fraction digits
        at = parse_datetime(started)
    except (TypeError, ValueError):
        at = None
    return _short_time(at) if at is not None else str(started)


class JobEventInline(ReadOnlyInline):
    """The job's latest events, read from the history's view (models.HistoryEvent;
    JobAdmin.get_formset_kwargs narrows the queryset), shown to whoever may view job events."""

    model = HistoryEvent
    fields = readonly_fields = ["id", "created_at", "kind", "attempt", "attempt_started",
                                "worker_id", "message", "data"]
    verbose_name_plural = f"events (latest {INLINE_EVENTS}, oldest first)"

    @admin.display(description="attempt started")
    def attempt_started(self, event):
        return _attempt_started(event)

    def has_view_permission(self, request, obj=None):
        # HistoryEvent has no permissions of its own: JobEvent's say who reads the history.
        opts = JobEvent._meta
        return any(request.user.has_perm(f"{opts.app_label}.{get_permission_codename(a, opts)}")
                   for a in ("view", "change"))


class JobSignalInline(ReadOnlyInline):
    """The job's signals: sent (send_signal, the API) or awaited by its durable wait."""

    model = JobSignal
    fields = readonly_fields = ["name", "sent_at", "data", "awaited_at", "timeout_at"]
    verbose_name_plural = "signals (sent, or awaited by the job's durable wait)"

    def has_view_permission(self, request, obj=None):
        # Part of the job, as its payload is: seen by whoever sees the job.
        return request.user.has_perm("django_pg_jobqueue.view_job")


def _short_time(moment) -> str:
    """'01 Dec 10:47:44' in the current time zone (the full timestamp is on the job's page)."""
    if moment is None:
        return "-"
    return format_html('<span style="white-space: nowrap">{}</span>',
                       localtime(moment).strftime("%d %b %H:%M:%S"))


class ReadOnlyAdmin:
    """An admin whose rows are a record nobody edits here: they can be listed and opened,
    never added, changed or deleted (the queue's own writers make them)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class JobActionForm(helpers.ActionForm):
    """The change list's action bar, with what the send-signal action sends."""

    signal_name = forms.CharField(
        required=False, max_length=200, label="Signal name",
        help_text="For “Send a signal”: the name the handler waits for (ctx.wait_for_signal).")
    signal_data = forms.CharField(
        required=False, label="Signal data (JSON)",
        help_text="For “Send a signal”: any JSON value; empty sends null.")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    # Compact cells (short times, the lease in one column): every column fits beside the
    # admin's sidebar and filters at 1440 px (the browser test checks it).
    list_display = ["id", "type", "queue", "status", "priority", "attempts_display",
                    "available_display", "lease_display", "progress_display", "created_display"]
    list_filter = ["status", TypeFilter, QueueFilter, PriorityFilter]
    search_fields = ["type", "=idempotency_key", "=concurrency_key"]
    search_help_text = "A job id, a type, or an exact idempotency key or concurrency key."
    ordering = ["-id"]
    list_per_page = 50
    show_full_result_count = False  # no second COUNT(*) over a big table
    # One admin action per job_actions.ACTIONS entry, "<name>_jobs" (below the class);
    # delete_jobs adds Django's confirmation page.
    actions = [f"{name}_jobs" for name in job_actions.ACTIONS] + ["send_signal_jobs"]
    action_form = JobActionForm
    inlines = [JobEventInline, JobSignalInline]
    fieldsets = [
        (None, {"fields": ["id", "type", "queue", "status", "priority", "payload", "result",
                           "all_events"]}),
        ("Attempts", {"fields": ["attempts", "max_attempts", "timeout_seconds", "last_error",
                                 "last_traceback"]}),
        ("Lease", {"fields": ["locked_by", "lease_token", "lease_expires_at",
                              "cancel_requested_at"]}),
        ("Progress", {"fields": ["progress_percent", "progress_message"]}),
        ("Times", {"fields": ["available_at", "created_at", "updated_at", "started_at",
                              "finished_at"]}),
        ("Idempotency and uniqueness", {"fields": ["idempotency_key", "request_fingerprint",
                                                   "idempotency_expires_at", "unique_key",
                                                   "unique_states"]}),
        ("Concurrency key", {"fields": ["concurrency_key", "concurrency_key_limit"]}),
    ]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Job._meta.fields] + ["all_events"]

    # -- nothing can add or edit a job row here; finished ones are deleted by the service -----
    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        # The delete page of a queued or running job is refused: cancel it first.
        if obj is not None and obj.status not in TERMINAL:
            return False
        return request.user.has_perm("django_pg_jobqueue.delete_job")

    # delete_jobs instead of delete_selected: finished jobs only. Django 6.1 adds (and asks
    # overrides to keep) an `action_location` argument; 5.2 and 6.0 have none.
    if ActionLocation is not None:
        def get_actions(self, request, action_location=None):
            actions = super().get_actions(request, action_location or ActionLocation.CHANGE_LIST)
            actions.pop("delete_selected", None)
            return actions
    else:  # pragma: no cover - Django < 6.1
        def get_actions(self, request):
            actions = super().get_actions(request)
            actions.pop("delete_selected", None)
            return actions

    def get_deleted_objects(self, objs, request):
        # A job's events go with it (the service deletes them): deleting a job needs
        # delete_job alone, not a delete permission on the read-only events.
        deleted, counts, _perms_needed, protected = get_deleted_objects(objs, request, self.admin_site)
        return deleted, counts, set(), protected

    def delete_model(self, request, obj):
        delete = job_actions.ACTIONS["delete"]
        self._apply(request, [obj.pk], delete.service, delete.done, quiet_success=True)

    def delete_queryset(self, request, queryset):
        delete = job_actions.ACTIONS["delete"]
        self._apply(request, queryset.values_list("id", flat=True), delete.service, delete.done,
                    quiet_success=True)

    def has_change_permission(self, request, obj=None):
        # The change list needs it for the actions; a single job's page is view-only.
        return obj is None and request.user.has_perm("django_pg_jobqueue.change_job")

    def save_model(self, request, obj, form, change):  # never reached; belt and braces
        raise PermissionError("jobs are read-only in the admin: use the cancel and retry actions")

    # -- display -----------------------------------------------------------------------------
    @admin.display(description="attempts")
    def attempts_display(self, job):
        return f"{job.attempts}/{job.max_attempts}"

    @admin.display(description="runnable at", ordering="available_at")
    def available_display(self, job):
        return _short_time(job.available_at)

    @admin.display(description="lease")
    def lease_display(self, job):
        if not job.locked_by:
            return "-"
        return format_html('<span style="white-space: nowrap">{}</span><br>until {}', job.locked_by,
                           _short_time(job.lease_expires_at))

    @admin.display(description="created", ordering="created_at")
    def created_display(self, job):
        return _short_time(job.created_at)

    @admin.display(description="progress")
    def progress_display(self, job):
        if job.progress_percent is None:
            return "-"
        return f"{job.progress_percent}% {job.progress_message}".strip()

    @admin.display(description="events")
    def all_events(self, job):
        url = reverse("admin:django_pg_jobqueue_jobevent_changelist") + f"?job__id__exact={job.pk}"
        return format_html('<a href="{}">every event of this job</a>', url)

    def get_search_results(self, request, queryset, search_term):
        queryset, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        job_id = selectors.parse_job_id(search_term)
        if job_id is not None:
            queryset |= self.model.objects.filter(pk=job_id)
        return queryset, may_have_duplicates

    def get_formset_kwargs(self, request, obj, inline, prefix):
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        if isinstance(inline, JobEventInline) and obj is not None:
            ids = list(HistoryEvent.objects.filter(job=obj).order_by("-id")
                       .values_list("id", flat=True)[:INLINE_EVENTS])
            kwargs["queryset"] = HistoryEvent.objects.filter(id__in=ids).order_by("id")
        return kwargs

    # -- actions: the same services as the API ----------------------------------------------
    def _apply(self, request, ids, service, verb: str, *, quiet_success: bool = False):
        done, refused = 0, []
        for job_id in ids:
            try:
                service(job_id, actor=request.user.get_username())
                done += 1
            except (InvalidTransition, JobNotFound, InvalidJobArgument) as exc:
                refused.append(str(exc))
        if done and not quiet_success:  # Django's delete views say it themselves
            self.message_user(request, f"{verb} {done} job(s).", messages.SUCCESS)
        if refused:
            shown = "; ".join(refused[:5]) + (" ..." if len(refused) > 5 else "")
            self.message_user(request, f"{len(refused)} refused: {shown}", messages.WARNING)

    # The API's POST jobs/{id}/signal/, for each selected job: the same service, under the
    # same permission (run_now's, as the API's signal action).
    @admin.action(description="Send a signal (name and JSON data above) to the selected jobs",
                  permissions=[job_actions.ACTIONS["run_now"].admin_permission])
    def send_signal_jobs(self, request, queryset):
        name = request.POST.get("signal_name", "")
        raw = request.POST.get("signal_data", "").strip()
        try:
            data = json.loads(raw) if raw else None
        except ValueError as exc:
            self.message_user(request, f"Signal not sent: its data is not JSON ({exc}).",
                              messages.ERROR)
            return

        def send(job_id, *, actor: str) -> None:
            send_signal(job_id, name, data, actor=actor)

        self._apply(request, queryset.values_list("id", flat=True), send,
                    f"Sent signal {name!r} to")

    def delete_jobs(self, request, queryset):
        """Django's confirmation page, then `delete_queryset` (the service), for the finished
        jobs of the selection; the queued and running ones are left, and said so."""
        finished = queryset.filter(status__in=TERMINAL)
        unfinished = queryset.exclude(status__in=TERMINAL).count()
        if unfinished and (request.POST.get("post") or not finished.exists()):
            self.message_user(request, f"{unfinished} job(s) not deleted: queued or running "
                                       "jobs must be cancelled first.", messages.WARNING)
        if finished.exists():
            return delete_selected(self, request, finished)
        return None


def _admin_action(action: job_actions.JobAction):
    """The admin action `<name>_jobs`: the action's service on each selected job."""
    def apply(self, request, queryset):
        self._apply(request, queryset.values_list("id", flat=True), action.service, action.done)

    return apply


for _action in job_actions.ACTIONS.values():
    _method = getattr(JobAdmin, f"{_action.name}_jobs", None) or _admin_action(_action)
    _method.__name__ = f"{_action.name}_jobs"
    setattr(JobAdmin, _method.__name__, admin.action(
        _method, description=_action.label, permissions=[_action.admin_permission]))


@admin.register(JobEvent)
class JobEventAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The rows of job_events, newest first. The outcome a completion keeps on its job's row
    (a `succeeded`, or a `cancelled` that reached the running job: migration 0032) is not
    among them: a job's page shows its whole history (JobEventInline reads the view), as the
    API does. A list of both in id order would sort every kept outcome on each page
    (docs/explanation/performance.md)."""

    list_display = ["id", "job_link", "kind", "attempt", "attempt_started", "worker_id",
                    "message", "created_at"]
    list_filter = ["kind"]
    search_fields = ["=job__id"]
    list_select_related = ["job"]
    ordering = ["-id"]
    show_full_result_count = False

    def get_search_results(self, request, queryset, search_term):
        job_id = selectors.parse_job_id(search_term)
        if search_term.strip() and job_id is None:
            return queryset.none(), False
        return (queryset.filter(job_id=job_id) if job_id else queryset), False

    @admin.display(description="attempt started")
    def attempt_started(self, event):
        return _attempt_started(event)

    @admin.display(description="job")
    def job_link(self, event):
        url = reverse("admin:django_pg_jobqueue_job_change", args=[event.job_id])
        return format_html('<a href="{}">{}</a>', url, event.job)


@admin.register(AuditLogEntry)
class AuditLogEntryAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The operator actions (services/audit_log.py), newest first: who did what to which job,
    queue or schedule. Read-only: entries are written by the services, in the action's own
    transaction. Seen with view_auditlogentry (superusers have it)."""

    list_display = ["id", "at", "actor", "action", "target_kind", "target", "data"]
    list_filter = ["action", "target_kind"]
    search_fields = ["=actor", "=target"]
    ordering = ["-id"]
    show_full_result_count = False

class QueueSettingForm(forms.ModelForm):
    class Meta:
        model = QueueSetting
        fields = ["queue", "paused", "concurrency_limit", "fair", "aging_seconds",
                  "aging_max_priority"]

    def clean(self):
        # The service's own rules for aging, shown on the form.
        data = super().clean()
        try:
            check_aging(data.get("aging_seconds"), data.get("aging_max_priority"))
        except InvalidJobArgument as error:
            raise forms.ValidationError({error.argument: error.detail}) from error
        return data

    def clean_queue(self):
        # A setting only for a queue that exists: a typo must not make a phantom queue.
        name = self.cleaned_data["queue"]
        if self.instance._state.adding and not queues.queue_exists(name):
            raise forms.ValidationError(str(QueueNotFound(name)))
        return name


def _each_named(model_admin, request, names, service, message: str) -> None:
    """An admin action on the selected queues or schedules: `service(name)` on each, then
    `message`."""
    for name in names:
        service(name, actor=request.user.get_username())
    model_admin.message_user(request, message)


@admin.register(QueueSetting)
class QueueSettingAdmin(admin.ModelAdmin):
    form = QueueSettingForm
    list_display = ["queue", "paused", "concurrency_limit", "fair", "aging_seconds",
                    "aging_max_priority", "fairness_weights", "updated_at"]
    list_editable = ["paused", "concurrency_limit", "fair"]
    fields = ["queue", "paused", "concurrency_limit", "fair", "aging_seconds",
              "aging_max_priority", "fairness_weights", "updated_at"]
    actions = ["pause", "resume"]

    def get_readonly_fields(self, request, obj=None):
        # The queue name is the key: set once. The weights are shown only: they change through
        # set_fairness_weights (the API, Python), which merges one key at a time.
        return (["queue", "fairness_weights", "updated_at"] if obj
                else ["fairness_weights", "updated_at"])

    def save_model(self, request, obj, form, change):
        # Through the same services as the API and the CLI.
        actor = request.user.get_username()
        (queues.pause_queue if obj.paused else queues.resume_queue)(obj.queue, actor=actor)
        queues.set_queue_limit(obj.queue, obj.concurrency_limit, actor=actor)
        queues.set_queue_aging(obj.queue, obj.aging_seconds,
                               aging_max_priority=obj.aging_max_priority, actor=actor)
        fresh = queues.set_queue_fairness(obj.queue, obj.fair, actor=actor)
        obj.updated_at = fresh.updated_at

    @admin.action(description="Pause the selected queues", permissions=["change"])
    def pause(self, request, queryset):
        _each_named(self, request, queryset.values_list("queue", flat=True), queues.pause_queue,
                    "Paused: workers stop claiming from them within a poll interval.")

    @admin.action(description="Resume the selected queues", permissions=["change"])
    def resume(self, request, queryset):
        _each_named(self, request, queryset.values_list("queue", flat=True), queues.resume_queue,
                    "Resumed.")


class RateLimitForm(forms.ModelForm):
    class Meta:
        model = RateLimit
        fields = ["kind", "name", "max_starts", "period_seconds"]

    def clean(self):
        # The service's own rules, shown on the form (a queue must exist, as for its setting).
        data = super().clean()
        problem = rate_limit_problem(data.get("kind"), data.get("name"), data.get("max_starts"),
                                     data.get("period_seconds"))
        if problem is not None:
            raise forms.ValidationError(f"{problem[0]} must be {problem[1]}")
        if data["kind"] == "queue" and not on_queue_shard(queues.queue_exists)(data["name"]):
            raise forms.ValidationError(str(QueueNotFound(data["name"])))
        return data


@admin.register(RateLimit)
class RateLimitAdmin(admin.ModelAdmin):
    """Rate limits set at run time (those JOB_RATE_LIMITS declares are not rows: a row here
    for the same scope replaces one); saved and deleted through the same services as the API."""

    form = RateLimitForm
    list_display = ["kind", "name", "max_starts", "period_seconds", "updated_at"]
    list_editable = ["max_starts", "period_seconds"]
    fields = ["kind", "name", "max_starts", "period_seconds", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        # The scope is the key: set once.
        return ["kind", "name", "updated_at"] if obj else ["updated_at"]

    def save_model(self, request, obj, form, change):
        fresh = rate_limits.set_rate_limit(**{obj.kind: obj.name}, max_starts=obj.max_starts,
                                           period_seconds=obj.period_seconds,
                                           actor=request.user.get_username())
        obj.pk, obj.updated_at = fresh.pk, fresh.updated_at

    def delete_model(self, request, obj):
        rate_limits.remove_rate_limit(**{obj.kind: obj.name}, actor=request.user.get_username())

    def delete_queryset(self, request, queryset):
        for kind, name in queryset.values_list("kind", "name"):
            rate_limits.remove_rate_limit(**{kind: name}, actor=request.user.get_username())


@admin.register(ScheduleSetting)
class ScheduleSettingAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The periodic schedules (JOB_PERIODIC, @periodic), each with its pause: run one now,
    pause or resume it, through the same services as the API. Seen with view_job; the actions
    need change_job, as cancel and retry do. Schedules are declared in code and settings, so
    rows are neither added, edited nor deleted here."""

    list_display = ["name", "paused", "updated_at"]
    actions = ["run_now", "pause", "resume"]
    ordering = ["name"]

    def changelist_view(self, request, extra_context=None):
        request.jobqueue_schedules = schedule_services.record_schedules()
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request):
        declared = getattr(request, "jobqueue_schedules", None)
        queryset = super().get_queryset(request)
        return queryset if declared is None else queryset.filter(name__in=declared)

    def get_readonly_fields(self, request, obj=None):
        return ["name", "paused", "updated_at"]

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("django_pg_jobqueue.view_job")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_operate_permission(self, request):
        return request.user.has_perm("django_pg_jobqueue.change_job")

    @admin.action(description="Run the selected schedules now (a new job each)",
                  permissions=["operate"])
    def run_now(self, request, queryset):
        done, refused = [], []
        for name in queryset.values_list("name", flat=True):
            try:
                job = schedule_services.run_schedule(name, actor=request.user.get_username())
                done.append(f"{name}: job {job.pk}")
            except (ScheduleInvalid, ScheduleNotFound, InvalidJobArgument) as exc:
                refused.append(str(exc))
        if done:
            self.message_user(request, "Enqueued " + "; ".join(done) + ".", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not run: " + "; ".join(refused), messages.WARNING)

    @admin.action(description="Pause the selected schedules", permissions=["operate"])
    def pause(self, request, queryset):
        _each_named(self, request, queryset.values_list("name", flat=True),
                    schedule_services.pause_schedule,
                    "Paused: the workers enqueue none of their ticks.")

    @admin.action(description="Resume the selected schedules", permissions=["operate"])
    def resume(self, request, queryset):
        _each_named(self, request, queryset.values_list("name", flat=True),
                    schedule_services.resume_schedule, "Resumed: their next ticks are enqueued.")


class WorkerOverrideForm(forms.ModelForm):
    class Meta:
        model = WorkerOverride
        fields = ["hostname", "queue", "threads", "stopped"]

    def clean(self):
        # The service's own rules, shown on the form.
        data = super().clean()
        try:
            worker_overrides.check_worker_override(
                data.get("queue"), data.get("hostname"), threads=data.get("threads"),
                stopped=bool(data.get("stopped")))
        except InvalidJobArgument as exc:
            raise forms.ValidationError(f"{exc.argument}: {exc.detail}") from exc
        except LookupError as exc:  # QueueNotFound, HostNotFound
            raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(WorkerOverride)
class WorkerOverrideAdmin(admin.ModelAdmin):
    """A host's overrides of its queues (docs/how-to/queues.md): saved and deleted through the
    same services as the API, so the audit log records them."""

    form = WorkerOverrideForm
    list_display = ["hostname", "queue", "threads", "stopped", "actor", "updated_at"]
    list_filter = ["stopped"]
    fields = ["hostname", "queue", "threads", "stopped", "actor", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        # The host and the queue are the key: set once.
        return ["hostname", "queue", "actor", "updated_at"] if obj else ["actor", "updated_at"]

    def save_model(self, request, obj, form, change):
        fresh = worker_overrides.set_worker_override(
            obj.queue, obj.hostname, threads=obj.threads, stopped=obj.stopped,
            actor=request.user.get_username())
        obj.pk, obj.actor, obj.updated_at = fresh.pk, fresh.actor, fresh.updated_at

    def delete_model(self, request, obj):
        worker_overrides.remove_worker_override(obj.queue, obj.hostname,
                                                actor=request.user.get_username())

    def delete_queryset(self, request, queryset):
        for queue, hostname in queryset.values_list("queue", "hostname"):
            worker_overrides.remove_worker_override(queue, hostname,
                                                    actor=request.user.get_username())


@admin.register(LostWorker)
class LostWorkerAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """Worker processes lost in the last day, forgotten once their jobs were taken back."""

    list_display = ["worker_id", "last_heartbeat_at", "forgotten_at", "jobs_requeued",
                    "jobs_failed", "jobs_done", "threads", "supervisor_pid"]
    ordering = ["-forgotten_at", "-id"]


@admin.register(WorkerProcess)
class WorkerProcessAdmin(admin.ModelAdmin):
    list_display = ["id", "state", "hostname", "pid", "supervisor_pid", "threads", "queues",
                    "memory", "jobs_done", "stuck_handlers", "held", "started_at",
                    "heartbeat_at"]
    ordering = ["id"]

    def changelist_view(self, request, extra_context=None):
        # One read of every process's state and running jobs for the whole page.
        self._health = {w["id"]: w for w in selectors.worker_processes()}
        return super().changelist_view(request, extra_context)

    def _row(self, obj) -> dict:
        health = getattr(self, "_health", None) or {}
        if obj.pk not in health:
            health = {w["id"]: w for w in selectors.worker_processes()}
        return health.get(obj.pk, {})

    @admin.display(description="state")
    def state(self, obj):
        return self._row(obj).get("state", "")

    @admin.display(description="memory")
    def memory(self, obj):
        return f"{obj.rss_bytes / 2**20:.0f} MiB" if obj.rss_bytes else "-"

    @admin.display(description="running jobs (held, if lost)")
    def held(self, obj):
        return ", ".join(f"#{j['id']} {j['type']}" for j in self._row(obj).get("running_jobs", [])) or "-"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in WorkerProcess._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
