"""Throttles. Counters live in Django's cache: with the default local-memory cache each
gunicorn process counts on its own (configure a shared cache, e.g. Redis, for one global
count across processes)."""
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from .. import conf


class JobCreateThrottle(UserRateThrottle):
    """Job creation (single and bulk) per user, at JOB_CREATE_RATE (default 600/min)."""

    scope = "job_create"

    def get_rate(self):
        return conf.get().CREATE_RATE


class LoginThrottle(SimpleRateThrottle):
    """Password guesses per client address."""

    scope = "auth_login"
    rate = "30/min"

    def get_rate(self):
        return self.rate

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
