"""Idempotency keys sent to the API are scoped to the user who sent them.

A key is stored as ``api:<user id>:<key>``, so that two users' keys never meet: another user's
key is, for you, a key you never used (a new job of yours), and nothing about their job comes
back, not even that it exists. The stored key stays unique, as the service layer requires. A key
too long to fit ``MAX_IDEMPOTENCY_KEY_LENGTH`` with its scope is stored as
``api:<user id>:sha256:<its SHA-256>`` instead (jobs then show ``sha256:<hex>`` as their key).

Python callers of ``enqueue()`` and the Tasks backend keep one global namespace: a key from
Python is stored as given. Keys starting with ``api:`` are the API's; do not use that prefix
from Python. Jobs show the key as the client sent it (``unscoped``).
"""
import hashlib

from ..states import MAX_IDEMPOTENCY_KEY_LENGTH

PREFIX = "api:"
DIGEST = "sha256:"


def scoped(user, key: str | None) -> str | None:
    """The stored form of `key` sent by `user` (None stays None)."""
    if key is None:
        return None
    scope = f"{PREFIX}{user.pk}:"
    if len(scope) + len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        return scope + key
    return f"{scope}{DIGEST}{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


def unique_scope(user) -> str:
    """The scope of the unique keys `user` sends (enqueue's `unique`): the same as their
    idempotency keys', so that another user's unique job is never returned to them."""
    return f"{PREFIX}{user.pk}:"


def unscoped(stored: str | None) -> str | None:
    """The key as its client sent it, from its stored form; a key from Python as it is."""
    if stored is None or not stored.startswith(PREFIX):
        return stored
    _, separator, key = stored[len(PREFIX):].partition(":")
    return key if separator else stored
