"""The one validation of a job's arguments: pure checks, no database.

Every argument `enqueue()` takes (and the API, the Tasks backend and schedules pass on) is
checked here, before any SQL: what PostgreSQL would refuse (NUL in jsonb or text, lone
surrogates, 'infinity', out-of-range numbers) and what it would accept but the queue must not
(a negative delay jumps the queue, timeout=0 means no limit, a queue name the API cannot
address). Each refusal is an `InvalidJobArgument` (a ValueError; `JobArgumentTypeError` is also
a TypeError) naming the argument; nothing is written.

What needs the database (does the queue exist, may the API use it) is
`services/preparing.py`'s; what the catalogue knows (job types, declared queues) is
`catalogue.py`'s.
"""
import hashlib
import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from numbers import Real

from . import conf
from .compat import UTC
from .encoders import acyclic_encoder
from .exceptions import (
    InvalidJobArgument,
    JobArgumentTypeError,
    JobPayloadTooLarge,
    NotCreatable,
)
from .retries import InvalidRetryPolicy, RetryPolicy
from .states import (
    HOSTNAME_RE,
    MAX_AGING_SECONDS,
    MAX_CONCURRENCY_KEY_LENGTH,
    MAX_CONCURRENCY_KEY_LIMIT,
    MAX_DELAY_SECONDS,
    MAX_EXPIRES_IN_SECONDS,
    MAX_FAIRNESS_WEIGHT,
    MAX_HOSTNAME_LENGTH,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_PAYLOAD_DEPTH,
    MAX_POLICY_PERIOD_SECONDS,
    MAX_QUEUE_NAME_LENGTH,
    MAX_UNIQUE_KEY_LENGTH,
    MAX_UNIQUE_KEY_STORED_LENGTH,
    MAX_UNIQUE_PERIOD_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_RE,
    RUN_AT_MIN,
    Status,
)


def type_error(argument: str, expected: str, value) -> JobArgumentTypeError:
    return JobArgumentTypeError(argument, f"must be {expected}, not {type(value).__name__}")


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def where(path: list, root: str = "payload") -> str:
    return root + "".join(f"[{key!r}]" for key in path)


def unstorable_text(text: str) -> str | None:
    """Why PostgreSQL cannot store this string (in jsonb or text), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which PostgreSQL cannot store"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate (not valid Unicode), which PostgreSQL cannot store"
    return None


def check_json(value, path: list, depth: int, root: str = "payload") -> bool:
    """Refuse what json.dumps would encode but jsonb cannot hold, or what would not come
    back as it went in: NUL, lone surrogates, non-string keys, NaN and infinities, nesting
    deeper than MAX_PAYLOAD_DEPTH (a circular payload is infinitely deep). Returns whether
    the value holds a tuple or a subclass of a JSON type (stored as plain JSON: the returned
    job then carries the decoded payload, as the row does)."""
    kind = type(value)
    if kind is str:
        problem = unstorable_text(value)
        if problem:
            raise InvalidJobArgument(root, f"{where(path, root)} {problem}")
        return False
    if kind is int or kind is bool or value is None:
        return False
    if kind is float:
        if not math.isfinite(value):
            raise InvalidJobArgument(
                root, f"{where(path, root)} is {value!r}, which JSON cannot hold")
        return False
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_PAYLOAD_DEPTH:
            raise InvalidJobArgument(
                root, f"nests deeper than {MAX_PAYLOAD_DEPTH} levels at {where(path, root)} "
                           "(or refers to itself)")
        odd = kind not in (dict, list)
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise JobArgumentTypeError(
                        root, f"{where(path, root)} has the key {key!r} "
                                   f"({type(key).__name__}); JSON object keys are strings")
                problem = unstorable_text(key)
                if problem:
                    raise InvalidJobArgument(root, f"a key of {where(path, root)} {problem}")
                path.append(key)
                odd = check_json(item, path, depth + 1, root) or odd or type(key) is not str
                path.pop()
        else:
            for index, item in enumerate(value):
                path.append(index)
                odd = check_json(item, path, depth + 1, root) or odd
                path.pop()
        return odd
    if isinstance(value, str):
        check_json(str(value), path, depth, root)
        return True
    if isinstance(value, (int, float)):  # subclasses (IntEnum ...): stored as the number
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidJobArgument(
                root, f"{where(path, root)} is {value!r}, which JSON cannot hold")
        return True
    raise JobArgumentTypeError(
        root, f"{where(path, root)} is a {type(value).__name__}, which JSON cannot encode "
                   "(use str, int, float, bool, None, list and dict)")


def check_json_value(value, argument: str) -> None:
    """Refuse, as InvalidJobArgument naming `argument`, a value that a job's JSON could not
    hold as it is (the rules of a payload, for any JSON value: the Tasks backend checks a
    task's args and kwargs with it, so that its errors name them)."""
    check_json(value, [], 0, argument)


# The job list's payload filter (`?payload=customer_id:42`): the longest term it takes.
MAX_PAYLOAD_FILTER_LENGTH = 500


def check_payload_filter(term) -> dict:
    """The JSON object a job's payload must contain for the job list's `payload` filter,
    from one term `path:value`: `customer_id:42` is `{"customer_id": 42}`, and
    `customer.address.city:Lyon` is `{"customer": {"address": {"city": "Lyon"}}}`. The path is
    one key or several joined by dots (a key holds no `.` or `:`); the value is read as JSON
    (`42`, `true`, `null`, `"42"` for the string, `["a"]` for an array holding "a") and,
    when it is not JSON, as the text itself. InvalidJobArgument naming `payload` otherwise:
    no colon, an empty key or value, a term over MAX_PAYLOAD_FILTER_LENGTH characters, or a
    value PostgreSQL's jsonb could not hold (NUL, lone surrogates, NaN, infinities)."""
    if not isinstance(term, str):
        raise type_error("payload", "a string (path:value)", term)
    term = term.strip()
    if len(term) > MAX_PAYLOAD_FILTER_LENGTH:
        raise InvalidJobArgument(
            "payload", f"is {len(term)} characters long; at most {MAX_PAYLOAD_FILTER_LENGTH}")
    path, colon, text = term.partition(":")
    if not colon:
        raise InvalidJobArgument(
            "payload", f"must be path:value, such as customer_id:42; got {term!r}")
    keys = path.strip().split(".")
    if any(not key.strip() for key in keys):
        raise InvalidJobArgument(
            "payload", f"has an empty key in its path {path.strip()!r}: write keys joined by "
                       "dots, such as customer.id:42")
    text = text.strip()
    if not text:
        raise InvalidJobArgument(
            "payload", f"has no value after the colon: {term!r} (write \"\" for an empty "
                       "string)")
    try:
        value = json.loads(text)
    except ValueError:  # not JSON (a JSONDecodeError, or a number of too many digits): text
        value = text
    contained: object = value
    for key in reversed([key.strip() for key in keys]):
        contained = {key: contained}
    check_json_value(contained, "payload")
    return contained  # type: ignore[return-value]


# The payload's JSON text as stored: compact, UTF-8 as is, no NaN. One encoder for every call
# (json.dumps builds a new one for each call given options: a tenth of a bulk item's checks).
PAYLOAD_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# Its C half built once (encoders.acyclic_encoder): for values check_json accepted, which has
# refused a circular one as too deep.
_ENCODE_CHECKED = acyclic_encoder(PAYLOAD_ENCODER)


def validate_payload(payload) -> tuple[dict, str]:
    """The payload as stored (a dict) and its JSON text; InvalidJobArgument if refused."""
    if payload is None:
        return {}, "{}"
    if not isinstance(payload, dict):
        raise type_error("payload", "a dict (a JSON object)", payload)
    if not payload and type(payload) is dict:  # the empty payload: nothing to check
        return payload, "{}"
    normalize, text = encode_as_payload(payload, "payload", too_large=JobPayloadTooLarge)
    return (json.loads(text) if normalize else payload), text


def encode_as_payload(value, argument: str, *,
                      too_large: Callable[[int, int], Exception] | None = None) -> tuple[bool, str]:
    """Any JSON value stored as a payload is: checked under a payload's rules (check_json)
    and encoded (PAYLOAD_ENCODER) within JOB_MAX_PAYLOAD_BYTES of UTF-8, each refusal naming
    `argument`. Returns whether the value needed normalizing (check_json) and its JSON text.
    Over the limit: `too_large(size, limit)` (a payload's JobPayloadTooLarge, which the API
    answers with 413), an InvalidJobArgument naming `argument` by default (a signal's data)."""
    normalize = check_json(value, [], 0, argument)
    try:
        text = _ENCODE_CHECKED(value) if _ENCODE_CHECKED else PAYLOAD_ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:  # not reached for checked input
        raise InvalidJobArgument(argument, f"cannot be encoded as JSON: {exc}") from None
    limit = conf.get().MAX_PAYLOAD_BYTES
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > limit:
        if too_large is not None:
            raise too_large(size, limit)
        raise InvalidJobArgument(argument, JobPayloadTooLarge.describe(size, limit))
    return normalize, text


def check_int(argument: str, value, low: int, high: int) -> int:
    if not is_int(value):
        raise type_error(argument, "a whole number (int)", value)
    if not low <= value <= high:
        raise InvalidJobArgument(argument, f"must be between {low} and {high}, not {value}")
    return int(value)


def check_queue(queue) -> str:
    if not isinstance(queue, str):
        raise type_error("queue", "a str", queue)
    if not (0 < len(queue) <= MAX_QUEUE_NAME_LENGTH and QUEUE_NAME_RE.fullmatch(queue)):
        raise InvalidJobArgument(
            "queue", f"{queue[:120]!r} is not a queue name: use 1 to {MAX_QUEUE_NAME_LENGTH} "
                     "ASCII letters, digits and _ . : -")
    return str(queue)


def check_hostname(hostname, argument: str = "hostname") -> str:
    """A worker host's name, as `run_job_workers` reports it (job_workers.hostname) and a
    host's override names it: 1 to MAX_HOSTNAME_LENGTH letters, digits and _ . : -."""
    if not isinstance(hostname, str):
        raise type_error(argument, "a str", hostname)
    if not (0 < len(hostname) <= MAX_HOSTNAME_LENGTH and HOSTNAME_RE.fullmatch(hostname)):
        raise InvalidJobArgument(
            argument, f"{hostname[:120]!r} is not a host name: use 1 to {MAX_HOSTNAME_LENGTH} "
                      "ASCII letters, digits and _ . : -")
    return hostname


def check_run_at(run_at) -> datetime | None:
    if run_at is None:
        return None
    if not isinstance(run_at, datetime):
        raise type_error("run_at", "a timezone-aware datetime", run_at)
    try:
        offset = run_at.utcoffset()
    except Exception as exc:
        raise InvalidJobArgument("run_at", f"its tzinfo fails: {exc}") from None
    if offset is None:
        raise InvalidJobArgument(
            "run_at", f"{run_at.isoformat()} is naive: give a timezone-aware datetime "
                      "(django.utils.timezone.now() + timedelta(...), or tzinfo=...)")
    try:  # stored in UTC: an instant before year 1 or after 9999 there could not be read back
        in_utc = run_at.astimezone(UTC)
    except (OverflowError, ValueError):
        in_utc = None
    if in_utc is None or in_utc < RUN_AT_MIN:
        raise InvalidJobArgument(
            "run_at", f"{run_at.isoformat()} is out of range: give a time from "
                      "2000-01-01T00:00:00Z to 9999-12-31T23:59:59Z") from None
    return run_at


def check_delay(delay) -> float:
    """`delay_seconds`: a number of seconds, or a timedelta (its total seconds)."""
    if delay is None:
        return 0.0
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, Real) and not isinstance(delay, bool):
        try:
            seconds = float(delay)
        except OverflowError:
            seconds = math.inf
    else:
        raise type_error("delay_seconds", "a number of seconds or a timedelta", delay)
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DELAY_SECONDS):
        raise InvalidJobArgument(
            "delay_seconds", f"must be between 0 and {MAX_DELAY_SECONDS} seconds, not {delay!r}")
    return seconds


def check_text_key(argument: str, key, max_length: int) -> str | None:
    """A key given as `argument` (an idempotency key, a concurrency key): None, or 1 to
    `max_length` characters, not all blank, storable as text."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise type_error(argument, "a str or None", key)
    if not key.strip() or len(key) > max_length:
        raise InvalidJobArgument(argument, f"must have 1 to {max_length} characters, "
                                           "not all blank")
    problem = unstorable_text(key)
    if problem:
        raise InvalidJobArgument(argument, problem)
    return str(key)


def check_idempotency_key(key) -> str | None:
    return check_text_key("idempotency_key", key, MAX_IDEMPOTENCY_KEY_LENGTH)



# -- unique jobs ---------------------------------------------------------------------------------
_UNIQUE_OPTIONS = ("key", "fields", "states", "period_seconds")
# The statuses a unique job may count in. A queued and a running job always count: a job moving
# between those two (a claim, a retry after a failed attempt, a release) must never meet
# another job of its key, which could then not be written.
_UNIQUE_ALWAYS = (Status.QUEUED.value, Status.RUNNING.value)
_ALL_STATES = tuple(s.value for s in Status)


def _key_material(argument: str, options: dict, payload: dict) -> str:
    """What a unique, debounce or throttle key is made of (`options`: its dict, `argument`:
    its name): "key:<key>", or "payload:<digest>" of the payload's `fields` (neither: the
    whole payload)."""
    key, fields = options.get("key"), options.get("fields")
    if key is not None and fields is not None:
        raise InvalidJobArgument(argument, f"give {argument}['key'] or {argument}['fields'], "
                                           "not both")
    if key is not None:
        if not isinstance(key, str):
            raise type_error(argument, "a dict whose 'key' is a str", key)
        if not key.strip() or len(key) > MAX_UNIQUE_KEY_LENGTH:
            raise InvalidJobArgument(argument, f"{argument}['key'] must have 1 to "
                                               f"{MAX_UNIQUE_KEY_LENGTH} characters, not all blank")
        problem = unstorable_text(key)
        if problem:
            raise InvalidJobArgument(argument, f"{argument}['key'] {problem}")
        return f"key:{key}"
    if fields is None:
        chosen = payload
    elif (not isinstance(fields, (list, tuple)) or not fields
          or not all(isinstance(f, str) for f in fields)):
        raise type_error(argument, "a dict whose 'fields' is a non-empty list of payload "
                                   "keys (str)", fields)
    else:
        chosen = {f: payload.get(f) for f in fields}
    digest = hashlib.sha256(json.dumps(chosen, sort_keys=True, ensure_ascii=False,
                                       separators=(",", ":")).encode()).hexdigest()
    return f"payload:{digest[:40]}"


def _period(argument: str, options: dict, maximum: float, required: bool) -> float | None:
    """`options['period_seconds']`: a number (or a timedelta) above 0 and at most `maximum`."""
    period = options.get("period_seconds")
    if period is None:
        if required:
            raise InvalidJobArgument(argument, f"{argument}['period_seconds'] is required")
        return None
    if isinstance(period, timedelta):
        period = period.total_seconds()
    if not isinstance(period, Real) or isinstance(period, bool):
        raise type_error(argument, "a dict whose 'period_seconds' is a number", period)
    period = float(period)
    if not (math.isfinite(period) and 0 < period <= maximum):
        raise InvalidJobArgument(argument, f"{argument}['period_seconds'] must be above 0 and "
                                           f"at most {maximum}")
    return period


def _stored_key(job_type: str, scope: str, material: str) -> str:
    """A key's stored form, "<type>:<scope><material>"; one that would not fit the column is
    stored as "<type>:<scope>key-sha256:<the SHA-256 of material>" (never a DataError)."""
    stored = f"{job_type}:{scope}{material}"
    if len(stored) > MAX_UNIQUE_KEY_STORED_LENGTH:
        digest = hashlib.sha256(material.encode("utf-8")).hexdigest()
        stored = f"{job_type}:{scope}key-sha256:{digest}"
    return stored


def _check_options(argument: str, value, allowed: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise type_error(argument, f"a dict of {', '.join(allowed)}", value)
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise JobArgumentTypeError(argument, f"has the unknown option {unknown[0]!r}; expected "
                                             f"{', '.join(allowed)}")
    return value


def check_unique(unique, job_type: str, payload: dict,
                  scope: str = "") -> tuple[str, list[str], float | None]:
    """The unique key, the states it counts in and the period of `unique` (a dict of key,
    fields, states, period_seconds; see enqueue()). `scope`: the API's user scope
    ("api:<user id>:"), so that API users' keys never meet, as their idempotency keys.

    Stored as "<type>:<scope>key:<key>". A key that would not fit the column so (a long type
    with a long key under an API user's scope) is stored as "<type>:<scope>key-sha256:<the
    SHA-256 of key:<key>>": the same key always gives the same stored form, never a
    DataError."""
    unique = _check_options("unique", unique, _UNIQUE_OPTIONS)
    material = _key_material("unique", unique, payload)
    period = _period("unique", unique, MAX_UNIQUE_PERIOD_SECONDS, required=False)
    states = unique.get("states")
    if states is None:
        # Without a period: while queued or running. With one: whatever became of the job.
        states = list(_UNIQUE_ALWAYS) if period is None else list(_ALL_STATES)
    elif (not isinstance(states, (list, tuple))
          or not all(isinstance(state, str) for state in states)):
        raise type_error("unique", "a dict whose 'states' is a list of statuses", states)
    else:
        bad = sorted(set(states) - set(_ALL_STATES))
        if bad:
            raise InvalidJobArgument("unique", f"unique['states'] has {bad[0]!r}, not a status: "
                                               f"{', '.join(_ALL_STATES)}")
        if not set(_UNIQUE_ALWAYS) <= set(states):
            raise InvalidJobArgument("unique", "unique['states'] must include 'queued' and "
                                               "'running' (a job moving between them must "
                                               "never meet another of its key)")
    # A job enqueued after others waits before it is queued: it holds its key then too.
    ordered = [state for state in _ALL_STATES if state in states or state == Status.WAITING]
    return _stored_key(job_type, scope, material), ordered, period


# -- enqueue policies: debounce, throttle, expiry (docs/how-to/enqueue-policies.md) -------------
# Not the API's job-creation throttle (JOB_API_THROTTLE_*, api/throttles.py), which limits how
# many jobs a user may create: a throttle here limits one key to one job per period.
_POLICY_OPTIONS = ("key", "fields", "period_seconds")


def check_throttle(throttle, job_type: str, payload: dict,
                   scope: str = "") -> tuple[str, list[str], float]:
    """`throttle` (a dict of key or fields, and period_seconds): at most one job of this type
    and key per period, the first wins and later enqueues get it back. A unique key whose
    states are every status and whose period is the throttle's, so the unique index
    arbitrates it (race-safe as unique jobs are), stored apart from unique keys as
    "<type>:<scope>throttle:<material>"."""
    throttle = _check_options("throttle", throttle, _POLICY_OPTIONS)
    material = _key_material("throttle", throttle, payload)
    period = _period("throttle", throttle, MAX_POLICY_PERIOD_SECONDS, required=True)
    assert period is not None
    return _stored_key(job_type, scope, f"throttle:{material}"), list(_ALL_STATES), period


def check_debounce(debounce, job_type: str, payload: dict,
                   scope: str = "") -> tuple[str, float]:
    """`debounce` (a dict of key or fields, and period_seconds): the stored debounce key
    ("<type>:<scope>debounce:<material>") and the quiet period: the job starts once no
    enqueue of its key came for that long, with the last one's payload."""
    debounce = _check_options("debounce", debounce, _POLICY_OPTIONS)
    material = _key_material("debounce", debounce, payload)
    period = _period("debounce", debounce, MAX_POLICY_PERIOD_SECONDS, required=True)
    assert period is not None
    return _stored_key(job_type, scope, f"debounce:{material}"), period


def check_expiry(expires_at, expires_in_seconds) -> tuple[datetime | None, float | None]:
    """`expires_at` (a timezone-aware datetime) or `expires_in_seconds` (a number above 0, or
    a timedelta, at most MAX_EXPIRES_IN_SECONDS), not both: when a job not started by then is
    dropped. A past expires_at is refused: the job could never run."""
    if expires_at is not None and expires_in_seconds is not None:
        raise InvalidJobArgument("expires_in_seconds", "give expires_at or expires_in_seconds, "
                                                       "not both")
    if expires_at is not None:
        if not isinstance(expires_at, datetime):
            raise type_error("expires_at", "a timezone-aware datetime", expires_at)
        if expires_at.utcoffset() is None:
            raise InvalidJobArgument("expires_at", f"{expires_at.isoformat()} is naive: give a "
                                                   "timezone-aware datetime")
        now = datetime.now(UTC)
        if expires_at <= now:
            raise InvalidJobArgument("expires_at", f"{expires_at.isoformat()} has passed: the "
                                                   "job could never run")
        if expires_at > now + timedelta(seconds=MAX_EXPIRES_IN_SECONDS):
            raise InvalidJobArgument("expires_at", f"must be at most {MAX_EXPIRES_IN_SECONDS} "
                                                   "seconds from now")
        return expires_at, None
    if expires_in_seconds is None:
        return None, None
    seconds = expires_in_seconds
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    if not isinstance(seconds, Real) or isinstance(seconds, bool):
        raise type_error("expires_in_seconds", "a number of seconds or a timedelta",
                         expires_in_seconds)
    seconds = float(seconds)
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_EXPIRES_IN_SECONDS):
        raise InvalidJobArgument("expires_in_seconds", "must be above 0 and at most "
                                                       f"{MAX_EXPIRES_IN_SECONDS}, not "
                                                       f"{expires_in_seconds!r}")
    return None, seconds


def check_concurrency_key(key, limit) -> tuple[str | None, int | None]:
    """A concurrency key (1 to MAX_CONCURRENCY_KEY_LENGTH characters, not all blank) and its
    limit (1 to MAX_CONCURRENCY_KEY_LIMIT, default 1); a limit without a key is refused.
    enqueue() and the Tasks backend (`@task_options`, `QueueTask.using`) check with it.
    The key as named; an API user's is then stored under their scope (keys.py)."""
    if key is None:
        if limit is not None:
            raise InvalidJobArgument("concurrency_key_limit", "needs a concurrency_key")
        return None, None
    key = check_text_key("concurrency_key", key, MAX_CONCURRENCY_KEY_LENGTH)
    limit = check_int("concurrency_key_limit", 1 if limit is None else limit, 1,
                       MAX_CONCURRENCY_KEY_LIMIT)
    return key, limit


def check_fairness_key(key) -> str | None:
    """A fairness key (1 to MAX_CONCURRENCY_KEY_LENGTH characters, not all blank: a tenant,
    a customer), or None. enqueue(), the API and the Tasks backend check with it. The key as
    named; an API user's is then stored under their scope (keys.py)."""
    if key is None:
        return None
    return check_text_key("fairness_key", key, MAX_CONCURRENCY_KEY_LENGTH)


def check_fairness_weights(weights) -> dict[str, int | None]:
    """Fair shares' weights for a queue (services.set_fairness_weights): a dict {fairness key
    as stored (an API user's under their scope, keys.py), or a prefix ending in `*`: its turns
    per round, 1 to MAX_FAIRNESS_WEIGHT, or None: its setting removed}. InvalidJobArgument
    (JobArgumentTypeError) naming `fairness_weights`, and the key at fault."""
    if not isinstance(weights, dict):
        raise type_error("fairness_weights", "a dict of fairness key to weight", weights)
    checked: dict[str, int | None] = {}
    for raw, weight in weights.items():
        try:
            key = str(check_text_key("fairness_weights", raw, MAX_CONCURRENCY_KEY_LENGTH))
        except InvalidJobArgument as exc:
            raise InvalidJobArgument("fairness_weights",
                                     f"key {str(raw)[:60]!r}: {exc.detail}") from None
        if weight is not None and (not is_int(weight) or not 1 <= weight <= MAX_FAIRNESS_WEIGHT):
            raise InvalidJobArgument(
                "fairness_weights", f"the weight of {key[:60]!r} must be a whole number "
                                    f"from 1 to {MAX_FAIRNESS_WEIGHT}, or None to remove it, "
                                    f"not {weight!r}")
        checked[key] = None if weight is None else int(weight)
    return checked


def check_aging(aging_seconds, aging_max_priority) -> tuple[float | None, int | None]:
    """A queue's priority aging: `aging_seconds` (above 0, at most MAX_AGING_SECONDS, or
    None: off) and its cap `aging_max_priority` (PRIORITY_MIN to PRIORITY_MAX, or None:
    PRIORITY_MAX; only with aging)."""
    if aging_seconds is None:
        if aging_max_priority is not None:
            raise InvalidJobArgument("aging_max_priority", "needs aging_seconds")
        return None, None
    if isinstance(aging_seconds, timedelta):
        aging_seconds = aging_seconds.total_seconds()
    if isinstance(aging_seconds, bool) or not isinstance(aging_seconds, (int, float)):
        raise type_error("aging_seconds", "a number of seconds, a timedelta or None",
                         aging_seconds)
    if not (math.isfinite(aging_seconds) and 0 < aging_seconds <= MAX_AGING_SECONDS):
        raise InvalidJobArgument("aging_seconds", f"must be above 0 and at most "
                                                  f"{MAX_AGING_SECONDS}, not {aging_seconds!r}")
    if aging_max_priority is not None:
        aging_max_priority = check_int("aging_max_priority", aging_max_priority, PRIORITY_MIN,
                                       PRIORITY_MAX)
    return float(aging_seconds), aging_max_priority


def check_creatable(job_type: str) -> None:
    """The API creates only the types the host opened to it (JOB_API_CREATABLE_TYPES), and
    Django tasks only when some are listed in JOB_API_CREATABLE_TASKS."""
    settings = conf.get()
    if job_type == conf.DJANGO_TASK_TYPE:
        if not settings.API_CREATABLE_TASKS:
            raise NotCreatable("type", f"job type {job_type!r} cannot be created through the "
                                       "API: no Django task is listed in JOB_API_CREATABLE_TASKS")
    elif job_type not in settings.API_CREATABLE_TYPES:
        raise NotCreatable("type", f"job type {job_type!r} cannot be created through the API "
                                   "(it is not in JOB_API_CREATABLE_TYPES)")


def check_creatable_task(payload: dict) -> None:
    """A django_task job from the API: a listed task, its args a list, its kwargs a dict, its
    backend an alias of TASKS (what the worker's django_task handler reads)."""
    from django.conf import settings as django_settings

    task = payload.get("task")
    if not isinstance(task, str) or task not in conf.get().API_CREATABLE_TASKS:
        raise NotCreatable("payload", f"payload['task'] {task!r} is not a task the API may "
                                      "create (JOB_API_CREATABLE_TASKS)")
    if not isinstance(payload.get("args", []), list):
        raise type_error("payload", "a dict whose 'args' is a list", payload["args"])
    if not isinstance(payload.get("kwargs", {}), dict):
        raise type_error("payload", "a dict whose 'kwargs' is a dict", payload["kwargs"])
    backend = payload.get("backend")
    aliases = getattr(django_settings, "TASKS", {})
    if backend is None:
        raise InvalidJobArgument("payload", "payload['backend'] is required: the alias of TASKS "
                                            "whose backend runs the task: " + ", ".join(map(repr, aliases)))
    if not isinstance(backend, str) or backend not in aliases:
        raise InvalidJobArgument("payload", f"payload['backend'] {backend!r} is not an alias "
                                            "of TASKS: " + ", ".join(map(repr, aliases)))


def check_retry_policy(policy) -> dict | None:
    """A job's own retry policy as stored: data only (delays or exponential, exceptions by
    name), never a function, from Python exactly as from the API."""
    if policy is None:
        return None
    try:
        return RetryPolicy.from_data(policy).as_data()
    except InvalidRetryPolicy as exc:
        raise InvalidJobArgument("retry_policy", str(exc).removeprefix("retry_policy ")) from None
    except TypeError as exc:
        raise JobArgumentTypeError("retry_policy", str(exc)) from None




SIGNAL_NAME_CHARS = 200  # models.JobSignal.name's max_length


def check_signal_name(name) -> str:
    """A signal's name (send_signal, ctx.wait_for_signal): a string of 1 to SIGNAL_NAME_CHARS
    characters, no NUL (InvalidJobArgument naming `name` otherwise)."""
    if not isinstance(name, str):
        raise type_error("name", "a str", name)
    if not name or len(name) > SIGNAL_NAME_CHARS:
        raise InvalidJobArgument("name", f"a signal's name is 1 to {SIGNAL_NAME_CHARS} "
                                         f"characters, not {len(name)}")
    problem = unstorable_text(name)
    if problem:
        raise InvalidJobArgument("name", f"a signal's name {problem}")
    return name


def check_wait_timeout(timeout) -> float | None:
    """A durable wait's timeout (ctx.wait_for_signal): None (no timeout), or seconds (a number
    or a timedelta) from 0 to MAX_DELAY_SECONDS (InvalidJobArgument naming `timeout`)."""
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, Real) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise type_error("timeout", "seconds (a number or a timedelta) or None", timeout)
    if not 0 <= seconds <= MAX_DELAY_SECONDS:  # NaN fails this too
        raise InvalidJobArgument("timeout", f"must be from 0 to {MAX_DELAY_SECONDS} seconds, "
                                            f"not {timeout!r}")
    return seconds


def check_wake_time(when) -> datetime:
    """A durable sleep's end (ctx.sleep_until): a timezone-aware datetime
    (InvalidJobArgument naming `when`)."""
    if not isinstance(when, datetime):
        raise type_error("when", "a timezone-aware datetime", when)
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidJobArgument("when", f"must be timezone-aware (django.utils.timezone.now() "
                                         f"gives one), not {when!r}")
    return when
