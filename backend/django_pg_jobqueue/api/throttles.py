"""Throttles. Counters live in Django's cache: with the default local-memory cache each
gunicorn process counts on its own (configure a shared cache, e.g. Redis, for one global
count across processes)."""
from array import array

from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from .. import conf


class JobCreateThrottle(UserRateThrottle):
    """Job creation (single and bulk) per user, at JOB_CREATE_RATE (default 600/min).

    DRF's sliding window, decision for decision, with the window's timestamps kept as one
    packed array of floats instead of a list: the cache pickles the whole window on every
    request, which for a list costs ~50 us per thousand entries (a window holds up to the
    rate's count: 1.4 ms a request at 20,000), and for an array one copy of its bytes.
    """

    scope = "job_create"

    def get_rate(self):
        return conf.get().CREATE_RATE

    def throttle_success(self):
        if not isinstance(self.history, array):
            self.history = array("d", self.history)  # a user's first request: [] from the cache
        return super().throttle_success()


class LoginThrottle(SimpleRateThrottle):
    """Password guesses per client address."""

    scope = "auth_login"
    rate = "30/min"

    def get_rate(self):
        return self.rate

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
