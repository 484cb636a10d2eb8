"""Throttles: job creation per user (JOB_CREATE_RATE, counting jobs) and login attempts per
client (JOB_LOGIN_RATE, shared with the admin's login; see security.py).

Job creation counts in the queue's own database (services/throttling.py, one statement a
request, exact across every process that serves the API); logins count in Django's cache
JOB_THROTTLE_CACHE, which must be shared by every process serving the API (the database cache,
Redis, Memcached): a LocMemCache counts per process (`check --deploy` warns). Clients are told
apart by `security.client_ident`: REMOTE_ADDR, or X-Forwarded-For as JOB_TRUSTED_PROXY_COUNT
says, never a client's own header by default.
"""
import logging

from django.db import DatabaseError
from rest_framework.exceptions import ValidationError
from rest_framework.throttling import BaseThrottle, UserRateThrottle

from .. import conf, security
from ..services import throttling

log = logging.getLogger("django_pg_jobqueue.api")


class JobCreateThrottle(UserRateThrottle):
    """Job creation (single and bulk) per user, at JOB_CREATE_RATE (default 600/min): every job
    counts, so a bulk request of n jobs spends n of the window (`cost`), and every entry of a
    job's `after` one more (`job_units`): a dependency costs the enqueue a row and a lock, as
    a job does, and a request naming thousands of them must spend its budget as fast. A bulk request of more
    jobs than the rate allows in a whole window can never pass: a 400 says so, rather than a 429
    that a client would retry forever.

    A sliding window counted in slices: the window (the rate's period) is cut into BUCKETS
    slices, and the user's row in `job_throttle_windows` holds the jobs charged to each slice
    that still overlaps the window. A slice counts until all of it has left the window, so the
    throttle never allows more than the rate in any period, and refuses at most one slice (a
    sixtieth of the period: 1 s at `/min`) earlier than an exact log of every request would.
    The row holds at most BUCKETS + 1 slices whatever the rate.

    Only jobs created are charged. `allow_request` reserves this request's jobs in one
    statement that checks and charges the window together (sql.THROTTLE_RESERVE_IF_IT_FITS),
    so that requests of one user arriving at once in different processes can never pass the
    rate together; the view then keeps what it created (`charge`) and gives the rest back, and
    a request that ends without creating (a 400, an idempotent replay, a 409, an error) gives
    back all of it (`settle_unspent`). Meanwhile its reservation counts: a request racing one
    that will be refused may be throttled by it.
    """

    scope = "job_create"
    BUCKETS = 60

    def get_rate(self):
        return conf.get().CREATE_RATE

    def get_ident(self, request):
        return security.client_ident(request)

    @staticmethod
    def cost(request) -> int:
        """What this request would spend: `job_units` of each job it holds (of the body as
        sent, before it is validated: an invalid request gives it all back)."""
        data = request.data
        if isinstance(data, dict) and isinstance(data.get("jobs"), list):
            return max(1, sum(job_units(job) for job in data["jobs"]))
        return job_units(data)

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.cost_of_request = cost = self.cost(request)
        if cost > self.num_requests:
            raise ValidationError({"jobs": [
                f"this request holds {cost} jobs and dependencies (each entry of `after` "
                f"counts as a job), more than JOB_CREATE_RATE ({conf.get().CREATE_RATE}) "
                f"allows in a whole period: send at most {self.num_requests} per request "
                "(or raise JOB_CREATE_RATE)."]})
        self.now = self.timer()
        self.width = self.duration / self.BUCKETS
        self.slice_index = int(self.now // self.width)
        if not throttling.reserve(self.key, slice_index=self.slice_index,
                                  window_slices=self.BUCKETS, cost=cost, limit=self.num_requests,
                                  keep_seconds=self.duration + self.width):
            self.reserved = 0
            return self.throttle_failure()
        self.reserved = cost
        request.jobqueue_create_throttle = self  # settled by the view: charge_created()
        return True

    def charge(self, jobs: int) -> None:
        """Keep `jobs` of this request's reservation (the jobs it created); give the rest back."""
        unused, self.reserved = self.reserved - max(0, jobs), 0
        if unused > 0:
            throttling.give_back(self.key, slice_index=self.slice_index, jobs=unused)

    def wait(self):
        """Seconds until enough of the window has expired for this request's jobs to fit: when
        the oldest slices holding the excess have left it."""
        window = throttling.window(self.key, oldest=self.slice_index - self.BUCKETS)
        over = sum(count for _, count in window) + self.cost_of_request - self.num_requests
        for index, count in window:
            over -= count
            if over <= 0:
                return max(0.0, (index + 1) * self.width + self.duration - self.now)
        return self.duration


def job_units(job) -> int:
    """What one job of a create request spends of JOB_CREATE_RATE: 1, and 1 more per entry of
    its `after` list."""
    after = job.get("after") if isinstance(job, dict) else None
    return 1 + (len(after) if isinstance(after, list) else 0)


def charge_created(request, jobs: int) -> None:
    """Charge the creation throttle that let this request in with what it created (`jobs`:
    the `job_units` of the jobs created), and give the rest of its reservation back."""
    throttle = getattr(request, "jobqueue_create_throttle", None)
    if throttle is not None:
        throttle.charge(jobs)


def settle_unspent(request) -> None:
    """At the end of a request: if it reserved jobs and never said what it created (it was
    refused, or failed), give them all back."""
    throttle = getattr(request, "jobqueue_create_throttle", None)
    if throttle is not None and throttle.reserved:
        try:
            throttle.charge(0)
        except DatabaseError as exc:  # the reservation stays spent: stricter, never looser
            log.warning("job-creation throttle: could not give back %d job(s) of %s: %s",
                        throttle.reserved, throttle.key, exc)


class LoginThrottle(BaseThrottle):
    """Login attempts per client, at JOB_LOGIN_RATE (default 30/min), in one budget with every
    login view wrapped in `security.throttle_login` (the admin's, in the demo)."""

    def allow_request(self, request, view):
        self._wait = security.login_attempt_wait(request)
        return self._wait is None

    def wait(self):
        return self._wait
