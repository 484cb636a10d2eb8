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

    A sliding window counted in buckets: the window (the rate's period) is cut into BUCKETS
    slices, and the cache holds, per user, the jobs allowed in each slice that still overlaps
    the window (`history`: each slice's start, newest first; `counts`: its jobs). A slice
    counts until all of it has left the window, so the throttle never allows more than the
    rate in any period, and refuses at most one slice (a sixtieth of the period: 1 s at
    `/min`) earlier than an exact log of every request would. What a request reads, adds to
    and writes back is at most BUCKETS + 1 entries whatever the rate: DRF's own throttle keeps
    one timestamp per request in the window, which the cache pickles and stores on every
    request (at 20,000/min from one client, 160 KB a request).

    Only jobs created are charged: `allow_request` checks that this request's jobs would fit,
    and the view charges the window (`charge`) once the jobs exist, with the number actually
    created. A request refused as invalid (400), an idempotent replay (200) or a conflict
    (409) spends nothing.

    Across processes the window is read, then written: requests of one user that arrive at the
    same moment in different processes can each see the window before the other's jobs, so a
    user's concurrent requests can overshoot the rate by what is in flight at once.
    """

    scope = "job_create"
    BUCKETS = 60

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
        self._load()
        self.spent = sum(self.counts)
        if self.spent + cost > self.num_requests:
            return self.throttle_failure()
        request.jobqueue_create_throttle = self  # charged by the view: charge_created()
        return True

    def _load(self) -> None:
        """This user's window from the cache, without the slices that have left it."""
        stored = self.cache.get(self.key)
        if isinstance(stored, tuple) and len(stored) == 2:
            self.history, self.counts = stored
        else:
            self.history, self.counts = array("d"), array("L")
        self.now = self.timer()
        self.width = self.duration / self.BUCKETS
        # A slice leaves the window when its end does.
        while self.history and self.history[-1] + self.width <= self.now - self.duration:
            self.history.pop()
            self.counts.pop()

    def charge(self, jobs: int) -> None:
        """Add `jobs` created to the window (read again: other requests may have charged it
        since the check)."""
        if jobs <= 0 or self.key is None:
            return
        self._load()
        slice_start = self.now - self.now % self.width
        if self.history and self.history[0] == slice_start:
            self.counts[0] += jobs
        else:
            self.history.insert(0, slice_start)  # newest first
            self.counts.insert(0, jobs)
        self.cache.set(self.key, (self.history, self.counts), self.duration)

    def wait(self):
        """Seconds until enough of the window has expired for this request's jobs to fit: when
        the oldest slices holding the excess have left it."""
        over = self.spent + self.cost_of_request - self.num_requests
        for start, count in zip(reversed(self.history), reversed(self.counts), strict=True):
            over -= count
            if over <= 0:
                return max(0.0, start + self.width + self.duration - self.now)
        return self.duration


def charge_created(request, jobs: int) -> None:
    """Charge the creation throttle that let this request in with the `jobs` it created."""
    throttle = getattr(request, "jobqueue_create_throttle", None)
    if throttle is not None:
        throttle.charge(jobs)


class LoginThrottle(BaseThrottle):
    """Login attempts per client, at JOB_LOGIN_RATE (default 30/min), in one budget with every
    login view wrapped in `security.throttle_login` (the admin's, in the demo)."""

    def allow_request(self, request, view):
        self._wait = security.login_attempt_wait(request)
        return self._wait is None

    def wait(self):
        return self._wait
