"""Job list filters (django-filter): status, state, type, queue, priority, created range,
search (an id, a key, or text in any job: selectors.text_search)."""
import datetime as dt

import django_filters
from django import forms
from django.db.models import Q
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ErrorDetail, ValidationError

from .. import keys
from ..arguments import MAX_PAYLOAD_FILTER_LENGTH, check_payload_filter
from ..exceptions import InvalidJobArgument
from ..models import STATUS_IN_UNIQUE_STATES, Job
from ..selectors import (
    SEARCH_MIN_TEXT_CHARS,
    in_states,
    parse_job_id,
    payload_contains,
    text_search,
)
from ..states import (
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_QUEUE_NAME_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    State,
)
from .fields import STATUS_CHOICES
from .idempotency import PREFIX, key_scope, scoped
from .per_class import once_per_class


class StatusInFilter(django_filters.BaseInFilter, django_filters.ChoiceFilter):
    pass


class IntegerFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class UTCDateTimeField(IsoDateTimeField):
    """ISO 8601, converted to UTC here: PostgreSQL refuses offsets beyond +-15:59 and years
    outside its range, and a refused value must be a 400, not a failed statement."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        try:
            return parsed.astimezone(dt.timezone.utc)
        except (OverflowError, ValueError):
            raise forms.ValidationError("Date/time out of range.", code="invalid") from None


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UTCDateTimeField


def _searchable(value: str) -> None:
    """A search shorter than SEARCH_MIN_TEXT_CHARS is a 400 unless it is a job id: a trigram
    index cannot look for less, and an empty list would wrongly say that nothing matches."""
    value = value.strip()
    if value and len(value) < SEARCH_MIN_TEXT_CHARS and parse_job_id(value) is None:
        raise forms.ValidationError(
            f"search needs at least {SEARCH_MIN_TEXT_CHARS} characters (or a job id); "
            f"got {value!r}.", code="too_short")


def _payload_term(value: str) -> None:
    """A payload filter the selector would refuse is a 400 naming `payload`, with its reason."""
    if value.strip():
        try:
            check_payload_filter(value)
        except InvalidJobArgument as error:
            raise forms.ValidationError(error.detail, code="invalid") from None


# Filters that take several values, comma-separated in one parameter.
MULTI_VALUE_FILTERS = ("status", "state")


class JobFilter(django_filters.FilterSet):
    status = StatusInFilter(
        field_name="status", lookup_expr="in", choices=[(s, s) for s in STATUS_CHOICES],
        error_messages={"invalid_choice": (
            f"%(value)s is not a status: give one or several of {', '.join(STATUS_CHOICES)}, "
            "comma-separated.")},
        help_text="One status or several, comma-separated (any of them): queued,running.",
    )
    state = StatusInFilter(
        method="filter_state", choices=[(s.value, s.value) for s in State],
        error_messages={"invalid_choice": (
            f"%(value)s is not a state: give one or several of {', '.join(State)}, "
            "comma-separated.")},
        help_text=("One state or several, comma-separated (any of them): scheduled,retryable. "
                   "available: queued and due now; scheduled: queued, due later, never "
                   "attempted; retryable: queued, due later after a failed attempt (its "
                   "backoff); running, succeeded, failed, cancelled: that status. With "
                   "`status` too, a job must match both."),
    )
    # lookup_expr is spelled out: django-filter's default comes from FILTERS_DEFAULT_LOOKUP_EXPR.
    type = django_filters.CharFilter(field_name="type", lookup_expr="exact", max_length=100,
                                     help_text="Exact job type.")
    queue = django_filters.CharFilter(field_name="queue", lookup_expr="exact",
                                      max_length=MAX_QUEUE_NAME_LENGTH, help_text="Exact queue name.")
    priority = IntegerFilter(field_name="priority", lookup_expr="exact", min_value=PRIORITY_MIN,
                             max_value=PRIORITY_MAX, help_text="Exact priority.")
    priority_min = IntegerFilter(field_name="priority", lookup_expr="gte",
                                               min_value=PRIORITY_MIN, max_value=PRIORITY_MAX)
    priority_max = IntegerFilter(field_name="priority", lookup_expr="lte",
                                               min_value=PRIORITY_MIN, max_value=PRIORITY_MAX)
    created_after = UTCDateTimeFilter(field_name="created_at", lookup_expr="gte",
                                                     help_text="ISO 8601; created at or after.")
    created_before = UTCDateTimeFilter(field_name="created_at", lookup_expr="lt",
                                                      help_text="ISO 8601; created before.")
    concurrency_key = django_filters.CharFilter(
        method="filter_concurrency_key", max_length=MAX_CONCURRENCY_KEY_LENGTH,
        help_text=("Exact concurrency key: the jobs that share it (e.g. customer:42): a key "
                   "given to `enqueue()` from Python, or one you sent to the API yourself "
                   "(an API user's keys are their own)."))
    batch = IntegerFilter(field_name="batch_id", lookup_expr="exact", min_value=1,
                          max_value=2**63 - 1,
                          help_text="The members of a batch (by its id; jobs_batch_idx serves it).")
    schedule = django_filters.CharFilter(
        method="filter_schedule", max_length=200,
        help_text=("The jobs a periodic schedule enqueued (by its name: their idempotency key is "
                   "`periodic:<name>:<tick>`). Give `type` too for an index to serve it."))
    payload = django_filters.CharFilter(
        method="filter_payload", max_length=MAX_PAYLOAD_FILTER_LENGTH, validators=[_payload_term],
        help_text=("The jobs whose payload contains a value: `path:value`, the path one key or "
                   "several joined by dots, the value JSON (`42`, `true`, `\"42\"` for the "
                   "string) or else the text itself. `customer_id:42` is the payload "
                   "containment `payload @> {\"customer_id\": 42}`; `customer.city:Lyon` is "
                   "`{\"customer\": {\"city\": \"Lyon\"}}`. A GIN index serves it, for every "
                   "job however old."))
    search = django_filters.CharFilter(
        method="filter_search", max_length=MAX_IDEMPOTENCY_KEY_LENGTH, validators=[_searchable],
        help_text=(f"A job id, an exact idempotency key, or (from {SEARCH_MIN_TEXT_CHARS} "
                   "characters) text in the payload or the last error, case-insensitive, in "
                   "every job (trigram indexes serve it). A value of 1 or 2 characters that is "
                   f"not a job id is a 400 (`search needs at least {SEARCH_MIN_TEXT_CHARS} "
                   "characters`)."))

    class Meta:
        model = Job
        fields = []

    def get_form_class(self):
        """django-filter builds a new form class (and a form field per filter) for every
        request: ~1 ms of a list. The class is the same every time, and each form instance
        deep-copies its fields anyway, so it is built once."""
        return once_per_class(self, "_shared_form_class", super().get_form_class)

    def is_valid(self):
        """A filter given twice (`?state=a&state=b`) is a 400 naming it, rather than the last
        value silently winning: several values go comma-separated in one parameter."""
        valid = super().is_valid()
        repeated = [name for name in self.base_filters if hasattr(self.data, "getlist")
                    and len(self.data.getlist(name)) > 1]
        for name in repeated:
            self.form.add_error(name, (
                "given more than once: give several values comma-separated in one "
                f"parameter ({name}=a,b)." if name in MULTI_VALUE_FILTERS
                else "given more than once: give it once."))
        return valid and not repeated

    def filter_state(self, queryset, name, value):
        return queryset.filter(in_states(value)) if value else queryset

    def filter_schedule(self, queryset, name, value):
        value = value.strip()
        return queryset.filter(idempotency_key__startswith=f"periodic:{value}:") if value else queryset

    def filter_concurrency_key(self, queryset, name, value):
        """The jobs that share this key: Python's global key, or the reader's own API key,
        as the jobs show them (never another user's, which shares nothing with theirs)."""
        if not value:
            return queryset
        match = Q()
        if not value.startswith(PREFIX):
            match |= Q(concurrency_key=value)
        user = getattr(self.request, "user", None)
        if user is not None and user.is_authenticated:
            match |= Q(concurrency_key=keys.scoped(
                key_scope(user), value, MAX_CONCURRENCY_KEY_LENGTH))
        return queryset.filter(match) if match else queryset.none()

    def filter_payload(self, queryset, name, value):
        if not value.strip():
            return queryset
        return queryset.filter(payload_contains(value))

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        match = Q()
        if not value.startswith(PREFIX):  # a key from Python (enqueue); never another's API key
            match |= Q(idempotency_key=value)
        user = getattr(self.request, "user", None)
        if user is not None and user.is_authenticated:  # the reader's own key, from the API
            match |= Q(idempotency_key=scoped(user, value))
        job_id = parse_job_id(value)
        if job_id is not None:
            match |= Q(pk=job_id)
        # The job that holds a unique key now (the one a duplicate enqueue returns): served by
        # the unique key's partial index, whose condition this repeats.
        match |= Q(unique_key=value) & Q(STATUS_IN_UNIQUE_STATES)
        if len(value) >= SEARCH_MIN_TEXT_CHARS:
            match |= text_search(value)
        return queryset.filter(match) if match else queryset.none()


class JobFilterBackend(DjangoFilterBackend):
    """django-filter's backend, skipped when the request names no filter.

    Without filter parameters a filter set filters nothing, yet building its form (a deep
    copy of every form field) and validating it is ~10% of a list page's Python time. A
    query parameter that starts with a filter's name (which also covers widgets that read
    suffixed names, `<name>_min` ...) takes django-filter's way, as before.
    """

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None:
            names = tuple(filterset_class.base_filters)
            if not any(key.startswith(names) for key in request.query_params):
                return queryset
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            raise filter_errors(filterset)
        return filterset.qs


def filter_errors(filterset) -> ValidationError:
    """A filter set's errors as a 400, each with its code.

    Not django-filter's translate_validation: it %-formats every message, with or without
    parameters, so a message quoting the value (`search needs at least 3 characters ...; got
    '%'`) raised a TypeError, a 500. Django formats a message only when it has parameters."""
    return ValidationError({
        name: [ErrorDetail(error.message % error.params if error.params else error.message,
                           code=error.code) for error in errors]
        for name, errors in filterset.errors.as_data().items()})
