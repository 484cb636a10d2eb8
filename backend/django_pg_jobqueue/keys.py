"""Keys that API users name are theirs: scoped to the user who sent them.

An API user's idempotency key, unique key and concurrency key (and any key a job names to
share something with other jobs, such as rate-limit or fairness keys) is stored under the
user's scope, ``api:<user id>:<key>``, so that two users' keys never meet: another user's key
is, for you, a key you never used. Python callers (`enqueue()`, the Tasks backend, periodic
schedules) are trusted code and name global keys, stored as given; keys starting with
``api:`` are the API's, do not use that prefix from Python.

A scoped key too long for its column is stored as ``api:<user id>:sha256:<its SHA-256>``
instead: the same key from the same user always gives the same stored form.
"""
import hashlib

PREFIX = "api:"
DIGEST = "sha256:"


def user_scope(user_pk) -> str:
    """The scope of the keys an API user sends."""
    return f"{PREFIX}{user_pk}:"


def scoped(scope: str, key: str | None, max_length: int) -> str | None:
    """The stored form of `key` under `scope` ("" for Python's global keys: as given), at
    most `max_length` characters (None stays None)."""
    if key is None or not scope:
        return key
    if len(scope) + len(key) <= max_length:
        return scope + key
    return f"{scope}{DIGEST}{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


def unscoped(stored: str | None) -> str | None:
    """The key as its client sent it, from its stored form (a long one: `sha256:<hex>`); a
    key from Python as it is."""
    if stored is None or not stored.startswith(PREFIX):
        return stored
    _, separator, key = stored[len(PREFIX):].partition(":")
    return key if separator else stored
