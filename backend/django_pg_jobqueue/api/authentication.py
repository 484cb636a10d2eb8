"""Token authentication with a short per-process memory of tokens and permissions.

DRF's TokenAuthentication reads the token and its user on every request, and
`user.has_perm` then loads all of the user's permissions (two more queries): on a POST
that is three queries and ~1.5 ms of ORM work around a one-statement insert. Here each
process remembers, for AUTH_CACHE_SECONDS, which user a valid token belongs to and
whether that user holds a permission.

What that costs: a change to a token, a user, a group or a permission clears this
process's memory at once (signals below), but the other gunicorn processes learn of it
only when their entries expire, so a revoked token or a removed permission can still be
honoured for up to AUTH_CACHE_SECONDS there. Changes made with `QuerySet.update()` send
no signals and also wait for the expiry. Unknown tokens are never remembered: each one
is looked up.

Token authentication needs `rest_framework.authtoken` in INSTALLED_APPS (its Token model);
this module imports that model only when a token is first looked up, so that a project
without it can still use the rest (session authentication, `has_perm`).
"""
import copy
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models.signals import m2m_changed, post_delete, post_save
from rest_framework.authentication import TokenAuthentication

AUTH_CACHE_SECONDS = 5.0
MAX_ENTRIES = 10_000


class _Memory:
    """A dict whose entries expire; cleared whole when it grows past MAX_ENTRIES. Reads and
    writes are single dict operations, safe across gunicorn's threads."""

    def __init__(self):
        self._entries: dict = {}

    def get(self, key):
        entry = self._entries.get(key)
        if entry is not None and entry[0] > time.monotonic():
            return entry[1]
        return None

    def put(self, key, value) -> None:
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + AUTH_CACHE_SECONDS, value)

    def clear(self) -> None:
        self._entries.clear()


tokens = _Memory()       # token key -> (user, token)
permissions = _Memory()  # (user id, permission) -> bool


def forget_all(**_) -> None:
    """Forget every remembered token and permission (this process only)."""
    tokens.clear()
    permissions.clear()


def _forget_on_changes_to(model) -> None:
    for name, signal in (("save", post_save), ("delete", post_delete)):
        signal.connect(forget_all, sender=model, weak=False,
                       dispatch_uid=f"jobs-api-auth-{model._meta.label}-{name}")


_User = get_user_model()
for _model in (_User, Group, Permission):
    _forget_on_changes_to(_model)
for _through in (_User.groups.through, _User.user_permissions.through, Group.permissions.through):
    m2m_changed.connect(forget_all, sender=_through, weak=False,
                        dispatch_uid=f"jobs-api-auth-{_through.__name__}")
_watching_tokens = False


def _watch_tokens(token_model) -> None:
    """Forget on any change to a token; connected before the first token is remembered."""
    global _watching_tokens
    if not _watching_tokens:
        _forget_on_changes_to(token_model)  # dispatch_uid: connecting twice is harmless
        _watching_tokens = True


class CachedTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`, as DRF's, with the token's user remembered for
    AUTH_CACHE_SECONDS. Each request gets its own copy of the user."""

    def authenticate_credentials(self, key):
        hit = tokens.get(key)
        if hit is None:
            _watch_tokens(self.get_model())
            hit = super().authenticate_credentials(key)  # 401 for unknown keys, inactive users
            tokens.put(key, hit)
        user, token = hit
        return copy.copy(user), token


def has_perm(user, perm: str) -> bool:
    """`user.has_perm(perm)`, remembered for AUTH_CACHE_SECONDS per user and permission."""
    key = (user.pk, perm)
    allowed = permissions.get(key)
    if allowed is None:
        allowed = user.has_perm(perm)
        permissions.put(key, allowed)
    return allowed
