"""Retry policies: how long a failed attempt waits before the next, and which errors are worth
another attempt at all.

A policy is set per handler (`@handler(retry_policy=...)`), per Django task
(`task_options(retry_policy=...)`) or per job (`enqueue(..., retry_policy=...)`, an
`enqueue_many` item, `POST /api/v1/jobs/`). The job's own policy wins over its type's, which
wins over the global settings (JOB_RETRY_BASE_SECONDS, JOB_RETRY_MAX_SECONDS,
JOB_RETRY_JITTER). A policy is one of:

- exponential: after attempt *n* fails, wait `base_seconds * factor^n`, randomised by
  +/- `jitter` (a fraction), at most `max_seconds`; a field left out takes the setting's value
  (factor: 2), so `RetryPolicy()` alone is the global policy;
- a list of delays: `delays_seconds=[1, 5, 30]`: after attempt *n* fails, wait the *n*-th
  delay (the last one again once the list is spent), randomised by +/- `jitter` (default 0);
- a function `f(attempt, exception) -> seconds` (a callable, or its dotted path): for handlers
  and tasks only, never for a single job: a job's policy is data, and the API accepts exactly
  what Python's enqueue() does.

Each may name exceptions: `give_up_on` (the attempt fails the job at once, whatever attempts
are left) and `retry_on` (only these are retried; any other fails the job at once). A name
matches the exception's class or any of its base classes, by its bare name (`ValueError`) or
its dotted path (`billing.errors.CardDeclined`); in Python, classes may be given instead.

The decision and the delay are computed where the failure is written, in sql.FAIL's single
guarded statement, on the database clock: the worker sends the type's policy as JSON (and, for
a function, the delay it returned) and the names of the exception's classes; the row's own
policy, if any, replaces it there. An expired lease (the reaper, which may run where the
handler is not registered) follows the job's own policy, else the global one.
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils.module_loading import import_string

from .states import MAX_DELAY_SECONDS

log = logging.getLogger("django_pg_jobqueue.retries")

MAX_DELAYS = 100  # items of delays_seconds
MAX_EXCEPTION_NAMES = 50  # items of retry_on and give_up_on each
MAX_FACTOR = 10.0
_NAME_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_DATA_KEYS = frozenset({"base_seconds", "factor", "max_seconds", "jitter", "delays_seconds",
                        "retry_on", "give_up_on"})


class InvalidRetryPolicy(ValueError):
    """A retry policy that cannot be used; `field` names the offending key."""

    def __init__(self, field_name: str, message: str):
        self.field = field_name
        super().__init__(f"retry_policy[{field_name!r}] {message}" if field_name else
                         f"retry_policy {message}")


def _number(name: str, value, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRetryPolicy(name, f"must be a number, not {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and low <= value <= high):
        raise InvalidRetryPolicy(name, f"must be between {low:g} and {high:g}, not {value!r}")
    return value


def _exception_name(item) -> str:
    if isinstance(item, type) and issubclass(item, BaseException):
        return f"{item.__module__}.{item.__qualname__}"
    if isinstance(item, str) and len(item) <= 200 and _NAME_RE.fullmatch(item):
        return item
    raise InvalidRetryPolicy("", f"names exceptions by class or dotted name, not {item!r}")


def _names(name: str, items) -> tuple[str, ...]:
    if items is None:
        return ()
    if isinstance(items, (str, type)):
        items = [items]
    if not isinstance(items, (list, tuple)):
        raise InvalidRetryPolicy(name, "must be a list of exception names or classes")
    if len(items) > MAX_EXCEPTION_NAMES:
        raise InvalidRetryPolicy(name, f"names at most {MAX_EXCEPTION_NAMES} exceptions")
    try:
        return tuple(_exception_name(i) for i in items)
    except InvalidRetryPolicy as exc:
        raise InvalidRetryPolicy(name, str(exc).removeprefix("retry_policy ")) from None


@dataclass(frozen=True)
class RetryPolicy:
    """See the module's docstring. Construct with keywords; `RetryPolicy.from_data(dict)` reads
    the JSON shape (what the API and a job row hold)."""

    base_seconds: float | None = None
    factor: float | None = None
    max_seconds: float | None = None
    jitter: float | None = None
    delays_seconds: tuple[float, ...] | None = None
    function: Callable[[int, BaseException | None], float] | str | None = None
    retry_on: tuple[str, ...] = field(default=())
    give_up_on: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.delays_seconds is not None:
            delays = self.delays_seconds
            if not isinstance(delays, (list, tuple)) or not delays:
                raise InvalidRetryPolicy("delays_seconds", "must be a non-empty list of seconds")
            if len(delays) > MAX_DELAYS:
                raise InvalidRetryPolicy("delays_seconds", f"has at most {MAX_DELAYS} delays")
            set_(self, "delays_seconds", tuple(
                _number("delays_seconds", d, 0, MAX_DELAY_SECONDS) for d in delays))
            for name in ("base_seconds", "factor", "max_seconds"):
                if getattr(self, name) is not None:
                    raise InvalidRetryPolicy(name, "does not go with delays_seconds")
        if self.function is not None:
            if self.delays_seconds is not None or any(
                    getattr(self, n) is not None for n in ("base_seconds", "factor", "max_seconds")):
                raise InvalidRetryPolicy("function", "goes with no other delay setting")
            if not (callable(self.function) or isinstance(self.function, str)
                    and _NAME_RE.fullmatch(self.function) and "." in self.function):
                raise InvalidRetryPolicy("function", "must be a callable or its dotted path")
        for name, low, high in (("base_seconds", 0, MAX_DELAY_SECONDS), ("factor", 1, MAX_FACTOR),
                                ("max_seconds", 0, MAX_DELAY_SECONDS), ("jitter", 0, 1)):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _number(name, value, low, high))
        set_(self, "retry_on", _names("retry_on", self.retry_on))
        set_(self, "give_up_on", _names("give_up_on", self.give_up_on))

    @classmethod
    def from_data(cls, data) -> RetryPolicy:
        """The policy of a JSON object (a job's `retry_policy`); InvalidRetryPolicy if refused.
        No function here: a job's policy is data only."""
        if isinstance(data, RetryPolicy):
            if data.function is not None:
                raise InvalidRetryPolicy("function", "is for handlers and tasks only: a job's "
                                                     "policy is data (delays or exponential)")
            return data
        if not isinstance(data, dict):
            raise InvalidRetryPolicy("", f"must be an object, not {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in _DATA_KEYS)
        if unknown:
            raise InvalidRetryPolicy(unknown[0], "is not a retry policy field; expected "
                                     + ", ".join(sorted(_DATA_KEYS)))
        return cls(**data)

    def as_data(self) -> dict[str, Any]:
        """The JSON shape, its unset fields left out; a function as `{"function": path}`."""
        data: dict[str, Any] = {}
        for name in ("base_seconds", "factor", "max_seconds", "jitter"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        if self.delays_seconds is not None:
            data["delays_seconds"] = list(self.delays_seconds)
        if self.function is not None:
            data["function"] = (self.function if isinstance(self.function, str) else
                                f"{self.function.__module__}.{self.function.__qualname__}")
        if self.retry_on:
            data["retry_on"] = list(self.retry_on)
        if self.give_up_on:
            data["give_up_on"] = list(self.give_up_on)
        return data

    def function_delay(self, attempt: int, exc: BaseException | None) -> float | None:
        """A function policy's delay after `attempt` failed with `exc`; None (the global
        backoff then applies) when the function fails or returns no usable number."""
        if self.function is None:
            return None
        try:
            func = import_string(self.function) if isinstance(self.function, str) else self.function
            seconds = float(func(attempt, exc))
            if math.isfinite(seconds) and 0 <= seconds <= MAX_DELAY_SECONDS:
                return seconds
            log.warning("retry policy %s returned %r: not 0..%s seconds; the global backoff "
                        "applies", self.function, seconds, MAX_DELAY_SECONDS)
        except Exception as error:  # noqa: BLE001 - a broken policy must not lose the failure
            log.warning("retry policy %s failed (%s); the global backoff applies",
                        self.function, error)
        return None


def as_policy(value) -> RetryPolicy | None:
    """A handler's or task's `retry_policy` argument: a RetryPolicy, its JSON shape, or None."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    if isinstance(value, dict) and "function" in value:
        rest = {k: v for k, v in value.items() if k != "function"}
        return RetryPolicy(function=value["function"], **rest)
    return RetryPolicy.from_data(value)


def exception_names(exc: BaseException | None) -> list[str] | None:
    """Every name an exception answers to in retry_on / give_up_on: each class of its MRO by
    bare name and by dotted path. None when the failure came with no exception."""
    if exc is None:
        return None
    names: list[str] = []
    for klass in type(exc).__mro__:
        if klass is object:
            continue
        names.append(klass.__qualname__)
        names.append(f"{klass.__module__}.{klass.__qualname__}")
    return names


def describe(data: dict | None) -> str:
    """A short text of a policy's JSON shape (None: the global settings), for the job's detail."""
    if not data:
        return "default (JOB_RETRY_* settings)"
    if "delays_seconds" in data:
        text = "delays [" + ", ".join(f"{d:g}" for d in data["delays_seconds"]) + "]"
        if data.get("jitter"):
            text += f" +/-{data['jitter']:g}"
    elif "function" in data:
        text = f"function {data['function']}"
    else:
        parts = [f"{k.removesuffix('_seconds')} {data[k]:g}"
                 for k in ("base_seconds", "factor", "max_seconds", "jitter") if k in data]
        text = "exponential" + (" (" + ", ".join(parts) + ")" if parts else "")
    if data.get("give_up_on"):
        text += "; gives up on " + ", ".join(data["give_up_on"])
    if data.get("retry_on"):
        text += "; retries only " + ", ".join(data["retry_on"])
    return text

