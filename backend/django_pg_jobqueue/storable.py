"""What a handler hands back, made storable before it is written.

A handler's result goes into a `jsonb` column; its error message, traceback, progress and log
messages into `text` columns. PostgreSQL refuses two things Python strings may hold:

- NUL (U+0000): `text` cannot hold it, and `jsonb` refuses the `\\u0000` escape;
- surrogate code points (U+D800-U+DFFF) that do not form a pair: they have no UTF-8 encoding,
  so the driver cannot send them in `text`, and `jsonb` refuses a lone `\\udXXX` escape.

Both are replaced by U+FFFD (the replacement character), in strings and in object keys alike.
In a result, a high surrogate escape followed by a low one is a valid JSON pair, read as the one
character it encodes, and is kept. Everything else passes unchanged.

Caps (settings, see docs/how-to/handlers-outcomes.md):
- states.MAX_JSON_DEPTH (64): how deeply a result's (or a log line's data's) objects and arrays
  may nest, checked before encoding by a walk that does not recurse, so the outcome is the same
  on every Python (3.13's encoder no longer raises RecursionError where 3.12's did).
- JOB_MAX_RESULT_BYTES: the result's JSON encoding, in bytes. Over it, the job fails for good.
- JOB_MAX_ERROR_CHARS: an error message keeps its start and says how much was cut.
- JOB_MAX_TRACEBACK_CHARS: a traceback keeps its end (the innermost frames and the exception).

The encoding of a result happens here, in our code, after the handler returned: whatever goes
wrong in it is `UnstorableResult`, never confused with an exception the handler raised.
"""
from __future__ import annotations

import json
import re
import traceback as traceback_module

from . import conf
from .encoders import acyclic_encoder
from .exceptions import UnstorableResult
from .states import MAX_JSON_DEPTH

REPLACEMENT = "\ufffd"
PROGRESS_MESSAGE_CHARS = 500  # the column's max_length (models.Job.progress_message)
LOG_MESSAGE_CHARS = 10000

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
# In JSON text made by json.dumps (ensure_ascii): every backslash starts an escape, so scanning
# escapes left to right never mistakes `\\u0000` (an escaped backslash, then "u0000") for one.
_JSON_ESCAPE = re.compile(r"\\u(d[89ab][0-9a-f]{2})(\\ud[c-f][0-9a-f]{2})?|\\ud[c-f][0-9a-f]{2}|\\u0000|\\.")




def clean_text(value: str) -> str:
    """`value` with NUL and surrogate code points replaced by U+FFFD."""
    if _BAD_TEXT.search(value) is None:
        return value
    return _BAD_TEXT.sub(REPLACEMENT, value)


def cap_start(value: str, limit: int) -> str:
    """The first characters of `value`, at most `limit` in all, saying how many were cut."""
    if len(value) <= limit:
        return value
    cut = len(value) - limit
    while True:  # the marker's own length depends on the number it shows
        marker = f" [cut: {cut} more characters]"
        keep = max(0, limit - len(marker))
        if len(value) - keep == cut:
            return value[:keep] + marker
        cut = len(value) - keep


def cap_end(value: str, limit: int) -> str:
    """The last characters of `value`, at most `limit` in all, saying how many were cut."""
    if len(value) <= limit:
        return value
    cut = len(value) - limit
    while True:
        marker = f"[cut: {cut} earlier characters]\n"
        keep = max(0, limit - len(marker))
        if len(value) - keep == cut:
            return marker + value[len(value) - keep:]
        cut = len(value) - keep


def _clean_json_escapes(text: str) -> str:
    def replace(m: re.Match) -> str:
        token = m.group(0)
        if m.group(1) is not None:  # a high surrogate: kept only with its low half
            return token if m.group(2) is not None else "\\ufffd"
        if token == "\\u0000" or token.startswith("\\ud"):
            return "\\ufffd"
        return token

    return _JSON_ESCAPE.sub(replace, text)


def nesting_problem(value, limit: int = MAX_JSON_DEPTH, visit=None) -> str | None:
    """"nests deeper than 64 levels" when `value`'s objects and arrays nest deeper than
    `limit`, else None. Iterative (never a RecursionError, whatever the interpreter), it stops
    at the first container past `limit`; a structure that contains itself is left to the
    encoder, which names it ("Circular reference detected"). With `visit`, each object key
    and each value that is no object or array, on the way, is passed to it (the API's parser
    checks a request body's strings and numbers in the same walk); it may raise to stop."""
    return _walk(value, limit, visit)[0]


def _walk(value, limit: int, visit) -> tuple[str | None, bool]:
    """nesting_problem's walk: the problem, and whether it met a structure that contains
    itself (where it stopped)."""
    containers = (dict, list, tuple)
    if not isinstance(value, containers):
        if visit is not None:
            visit(value)
        return None, False
    if visit is None and limit >= 1:  # the common result: an object of plain values
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, containers):
                break
        else:  # one level deep, and nothing in it can be itself
            return None, False
    on_path: set[int] = set()
    stack: list = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if item is None:  # leaving a container: `depth` holds its id
            on_path.discard(depth)
            continue
        if depth > limit:
            return f"nests deeper than {limit} levels (MAX_JSON_DEPTH)", False
        if id(item) in on_path:
            return None, True  # circular: the encoder says so
        on_path.add(id(item))
        stack.append((None, id(item)))
        children = item.values() if isinstance(item, dict) else item
        if visit is None:
            stack.extend((child, depth + 1) for child in children
                         if isinstance(child, containers))
            continue
        if isinstance(item, dict):
            for key in item:
                visit(key)
        for child in children:
            if isinstance(child, containers):
                stack.append((child, depth + 1))
            else:
                visit(child)
    return None, False


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_INNERMOST = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")


def text_nesting_problem(text: str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """"nests deeper than 64 levels" when the JSON document `text` nests deeper than
    `limit`, else None: told before the text is parsed, since json.loads recurses in C and
    Python 3.13's can overflow a small thread stack (a crash, not a RecursionError) where
    3.12's raises. Strings are blanked, then each pass removes every innermost array and
    object (regular expressions, in C); whatever is left after `limit` passes nests deeper.
    Text that is not JSON is left to the parser to refuse."""
    if text.count("[") + text.count("{") <= limit:
        return None
    text = _JSON_STRING.sub("0", text)
    for _ in range(limit):
        text, removed = _INNERMOST.subn("0", text)
        if not removed:
            break
    if "[" in text or "{" in text:
        return f"nests deeper than {limit} levels (MAX_JSON_DEPTH)"
    return None


# One encoder for every value: json.dumps with an option builds a new JSONEncoder per call.
_ENCODER = json.JSONEncoder(allow_nan=False)
_ENCODE_WALKED = acyclic_encoder(_ENCODER)


def encode_json(value, *, what: str = "value") -> str:
    """`value` as JSON text PostgreSQL's jsonb accepts (NaN and infinities refused; NUL and
    unpaired surrogates replaced). Raises UnstorableResult saying why it cannot be encoded."""
    if value is None:  # most handlers return nothing
        return "null"
    # The depth limit is ours, held before the encoder runs: how deep Python's encoder goes
    # differs between versions (3.12 raises RecursionError at a depth 3.13 encodes, and 3.13
    # can overflow a small thread stack instead), and the outcome must not.
    problem, circular = _walk(value, MAX_JSON_DEPTH, None)
    if problem is not None:
        raise UnstorableResult(f"{what} is nested too deeply: it {problem}")
    try:
        text = (_ENCODE_WALKED(value) if _ENCODE_WALKED and not circular
                else _ENCODER.encode(value))
    except RecursionError:  # pragma: no cover - refused by the walk above first
        raise UnstorableResult(f"{what} is nested too deeply to encode") from None
    except Exception as exc:  # noqa: BLE001 - whatever encoding this value raised, in our code
        raise UnstorableResult(f"{what} is not JSON: {describe_exception(exc)}") from None
    if "\\u0000" in text or "\\ud" in text:
        text = _clean_json_escapes(text)
    return text


def encode_result(value) -> str:
    """A handler's result as the JSON text to store, or UnstorableResult saying why not."""
    try:
        text = encode_json(value, what="it")
    except UnstorableResult as exc:
        raise UnstorableResult(f"the handler's result cannot be stored: {exc}") from None
    limit = conf.get().MAX_RESULT_BYTES
    size = len(text)  # ASCII (ensure_ascii): characters are bytes
    if size > limit:
        raise UnstorableResult(f"the handler's result cannot be stored: it is {size} bytes of "
                               f"JSON, over JOB_MAX_RESULT_BYTES ({limit})")
    return text


def describe_exception(exc: BaseException) -> str:
    """'ClassName: message', cleaned, never raising: an exception whose str() fails is named
    by its class with a marker saying so. An empty message gives the class name alone."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except BaseException as inner:  # noqa: BLE001 - a hostile __str__ may raise anything
        message = f"[str() of the exception raised {type(inner).__name__}]"
    if not isinstance(message, str):  # pragma: no cover - str() always returns a str
        message = "[str() of the exception returned no string]"
    return clean_text(f"{name}: {message}" if message else name)


def error_message(text: str) -> str:
    """An error message to store: cleaned and capped at JOB_MAX_ERROR_CHARS."""
    return cap_start(clean_text(text), conf.get().MAX_ERROR_CHARS)


def format_traceback(exc: BaseException) -> str:
    """The exception's traceback to store: cleaned, capped at JOB_MAX_TRACEBACK_CHARS (its end
    kept), and never raising."""
    try:
        text = "".join(traceback_module.format_exception(exc))
    except BaseException as inner:  # noqa: BLE001
        text = f"[the traceback could not be formatted: {type(inner).__name__}]"
    return traceback_text(text)


def traceback_text(text: str | None) -> str | None:
    if text is None:
        return None
    return cap_end(clean_text(text), conf.get().MAX_TRACEBACK_CHARS)


def progress_message(text) -> str:
    return cap_start(clean_text(str(text or "")), PROGRESS_MESSAGE_CHARS)


def log_message(text) -> str:
    return cap_start(clean_text(str(text)), LOG_MESSAGE_CHARS)


def log_data(data: dict | None) -> str:
    """The `data` of a log line (ctx.log's keyword arguments) as storable JSON. Refused with a
    ValueError naming the argument when it is not JSON or over JOB_MAX_RESULT_BYTES."""
    try:
        text = encode_json(data or {}, what="ctx.log() data")
    except UnstorableResult as exc:
        raise ValueError(str(exc)) from None
    limit = conf.get().MAX_RESULT_BYTES
    if len(text) > limit:
        raise ValueError(f"ctx.log() data is {len(text)} bytes of JSON, over "
                         f"JOB_MAX_RESULT_BYTES ({limit})")
    return text


def safe_repr(value, limit: int = 100) -> str:
    """repr(value), cleaned and cut to `limit` characters, or its type's name if repr fails."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        text = f"<{type(value).__name__} object>"
    return cap_start(clean_text(text), limit)
