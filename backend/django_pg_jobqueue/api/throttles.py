"""Throttles: job creation per user (JOB_CREATE_RATE, counting jobs) and login attempts per
client (JOB_LOGIN_RATE, shared with the admin's login; see security.py).

Both count in Django's cache JOB_THROTTLE_CACHE, which must be shared by every process serving
the API (the database cache, Redis, Memcached) for the rates to hold across gunicorn's workers:
a LocMemCache counts per process (`check --deploy` warns). Clients are told apart by
`security.client_ident`: REMOTE_ADDR, or X-Forwarded-For as JOB_TRUSTED_PROXY_COUNT says, never
a client's own header by default.
"""
from array import array

from rest_framework.exceptions import ValidationError
from rest_framework.throttling import BaseThrottle, UserRateThrottle

from .. import conf, security


class JobCreateThrottle(UserRateThrottle):
    """Job creation (single and bulk) per user, at JOB_CREATE_RATE (default 600/min): every job
    counts, so a bulk request of n jobs spends n of the window (`cost`). A bulk request of more
    jobs than the rate allows in a whole window can never pass: a 400 says so, rather than a 429
    that a client would retry forever.

    DRF's sliding window, decision for decision for single jobs: `history` holds one timestamp
    per allowed request, newest first, and `counts` the jobs of each (a bulk request is one
    entry, not n). Both are packed arrays, cached together: the cache pickles the whole window on
    every request, which for a list costs ~50 us per thousand entries (a window holds up to the
    rate's count: 1.4 ms a request at 20,000), and for an array one copy of its bytes.

    Across processes the window is read, then written: requests of one user that arrive at the
    same moment in different processes can each see the window before the other's jobs, so a
    user's concurrent requests can overshoot the rate by what is in flight at once.
    """

    scope = "job_create"

    def __init__(self):
        super().__init__()
        self.cache = security.throttle_cache()

    def get_rate(self):
        return conf.get().CREATE_RATE

    def get_ident(self, request):
        return security.client_ident(request)

    @staticmethod
    def cost(request) -> int:
        """The jobs this request would create: the length of a bulk request's `jobs` list."""
        data = request.data
        if isinstance(data, dict) and isinstance(data.get("jobs"), list):
            return max(1, len(data["jobs"]))
        return 1

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.cost_of_request = cost = self.cost(request)
        if cost > self.num_requests:
            raise ValidationError({"jobs": [
                f"this request holds {cost} jobs, more than JOB_CREATE_RATE "
                f"({conf.get().CREATE_RATE}) allows in a whole period: send at most "
                f"{self.num_requests} jobs per request (or raise JOB_CREATE_RATE)."]})
        stored = self.cache.get(self.key)
        if isinstance(stored, tuple) and len(stored) == 2:
            self.history, self.counts = stored
        else:
            self.history, self.counts = array("d"), array("L")
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
            self.counts.pop()
        self.spent = sum(self.counts)
        if self.spent + cost > self.num_requests:
            return self.throttle_failure()
        return self.throttle_success()

    def throttle_success(self):
        self.history.insert(0, self.now)  # newest first, as DRF keeps it
        self.counts.insert(0, self.cost_of_request)
        self.cache.set(self.key, (self.history, self.counts), self.duration)
        return True

    def wait(self):
        """Seconds until enough of the window has expired for this request's jobs to fit: when
        the oldest entries holding the excess have left it."""
        over = self.spent + self.cost_of_request - self.num_requests
        for timestamp, count in zip(reversed(self.history), reversed(self.counts), strict=True):
            over -= count
            if over <= 0:
                return max(0.0, timestamp + self.duration - self.now)
        return self.duration


class LoginThrottle(BaseThrottle):
    """Login attempts per client, at JOB_LOGIN_RATE (default 30/min), in one budget with every
    login view wrapped in `security.throttle_login` (the admin's, in the demo)."""

    def allow_request(self, request, view):
        self._wait = security.login_attempt_wait(request)
        return self._wait is None

    def wait(self):
        return self._wait
