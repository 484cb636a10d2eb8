"""A strict JSON parser: the API's only way in for request bodies.

DRF's JSONParser reads the whole stream whatever its size (it bypasses Django's
DATA_UPLOAD_MAX_MEMORY_SIZE), turns `1e400` into infinity, and lets a document nested a
thousand levels deep hit the interpreter's recursion limit (a 500). PostgreSQL then refuses
infinities, NUL characters and lone surrogates in jsonb (another 500), and json keeps only the
last of a repeated key. This parser turns each of those into a clear 400, or a 413 for a body
over the size limit, before any view runs.
"""
import json
import math

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from .. import storable
from ..states import MAX_PAYLOAD_DEPTH
from .exceptions import PayloadTooLarge

# How deeply a request body's objects and arrays may nest (scalars do not count, as in
# enqueue()). A job's payload may nest MAX_PAYLOAD_DEPTH levels, alone, in a bulk request and
# from Python alike: the limit here leaves room for the deepest envelope (a bulk request: the
# body, its `jobs` list, an item) and more, so that a payload a little too deep reaches
# enqueue()'s own check and is refused naming its field (`jobs[i].payload`); only a body far
# deeper than any payload may be stops here, before anything recurses over it.
ENVELOPE_DEPTH = 3
MAX_DEPTH = 2 * MAX_PAYLOAD_DEPTH


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (no NaN or Infinity)")


class DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: list) -> dict:
    """An object whose keys are all different (json's default keeps the last of a repeated
    key, silently dropping what the client sent first)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"JSON object has the key {key[:100]!r} more than once")
            seen.add(key)
    return out


def _check(value) -> None:
    """Walk the document without recursion (storable's walk of results): depth, finite
    numbers, text PostgreSQL can store."""
    if storable.nesting_problem(value, MAX_DEPTH, visit=_check_member) is not None:
        raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels (a payload may "
                         f"nest {MAX_PAYLOAD_DEPTH})")


def _check_member(item) -> None:
    """An object key or a scalar of the document."""
    if isinstance(item, float) and not math.isfinite(item):
        raise ParseError("JSON number out of range (no NaN or Infinity)")
    if isinstance(item, str):
        _check_text(item)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise ParseError("JSON strings may not contain NUL (\\u0000) characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseError("JSON strings may not contain unpaired surrogates") from None


def body_limit() -> int | None:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = body_limit()
        raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise PayloadTooLarge(f"request body over {limit} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"request body is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        # Told before parsing: json.loads recurses in C, and how deep it gets before a
        # RecursionError (or, on Python 3.13 in a thread with a small stack, a crash of the
        # whole server process) depends on the interpreter.
        if storable.text_nesting_problem(text, MAX_DEPTH) is not None:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
        try:
            data = json.loads(text, parse_constant=_reject_constant,
                              object_pairs_hook=_object_without_duplicates)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
        except DuplicateKey as exc:
            raise ParseError(str(exc)) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
        _check(data)
        return data
