"""Idempotency keys sent to the API are scoped to the user who sent them (keys.py).

A key is stored as ``api:<user id>:<key>``, so that two users' keys never meet: another user's
key is, for you, a key you never used (a new job of yours), and nothing about their job comes
back, not even that it exists. The stored key stays unique, as the service layer requires. A key
too long to fit ``MAX_IDEMPOTENCY_KEY_LENGTH`` with its scope is stored as
``api:<user id>:sha256:<its SHA-256>`` instead (jobs then show ``sha256:<hex>`` as their key).

Python callers of ``enqueue()`` and the Tasks backend keep one global namespace: a key from
Python is stored as given. Keys starting with ``api:`` are the API's; do not use that prefix
from Python. Jobs show the key as the client sent it (``unscoped``).
"""
from .. import keys
from ..keys import PREFIX, unscoped
from ..states import MAX_IDEMPOTENCY_KEY_LENGTH

__all__ = ["PREFIX", "key_scope", "scoped", "unscoped"]


def scoped(user, key: str | None) -> str | None:
    """The stored form of the idempotency key `key` sent by `user` (None stays None)."""
    return keys.scoped(key_scope(user), key, MAX_IDEMPOTENCY_KEY_LENGTH)


def key_scope(user) -> str:
    """The scope of the unique and concurrency keys `user` sends (enqueue's `key_scope`): the
    same as their idempotency keys', so that another user's job is never returned to them
    and never holds theirs back."""
    return keys.user_scope(user.pk)
