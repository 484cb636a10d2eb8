"""Who the client is, how many login attempts it may make, and the pages' Content-Security-Policy.

Imports only Django: the admin's login (``throttle_login``) and the dashboard use it without the
``api`` extra; the API's throttles (api/throttles.py) build on it.

The client's address
    ``client_address(request)`` is REMOTE_ADDR, unless JOB_TRUSTED_PROXY_COUNT says how many
    proxies in front of Django append the address they saw to X-Forwarded-For: then it is the
    address the outermost of them appended. Whatever a client writes into X-Forwarded-For itself
    is never believed. IPv6 addresses are counted by their /64 prefix (one host holds a whole
    /64), IPv4 ones whole.

Login attempts
    JOB_LOGIN_RATE attempts per client address (30/min by default) across the API's
    ``auth/login/`` and every login view wrapped in ``throttle_login`` (the demo wraps the
    admin's): one budget per client, every attempt counted, right or wrong. The counts live in
    Django's cache JOB_THROTTLE_CACHE; they are shared across processes only when that cache is
    (the database cache, Redis, Memcached): a LocMemCache counts per process, which
    ``check --deploy`` says (django_pg_jobqueue.W043).

    The window is a sliding log of JOB_LOGIN_RATE slots, each one a cache key claimed with
    ``cache.add()`` (atomic in every shared backend: a row's primary key, Redis SET NX,
    memcached add) that expires with the window. Concurrent attempts cannot share a slot, so a
    burst of parallel guesses cannot get past the limit as it can with a read-modify-write
    counter.
"""
import functools
import ipaddress
import math
import time
from hashlib import blake2b
from urllib.parse import urlsplit

from django.conf import settings
from django.core import checks
from django.core.cache import caches
from django.http import HttpResponse
from django.utils.html import format_html

from . import conf

#: Seconds per period of a rate (`30/min`), as DRF reads them: by the period's first letter.
PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """"30/min" -> (30, 60): so many per so many seconds."""
    count, period = rate.split("/")
    return int(count), PERIODS[period[0]]


# -- the client ---------------------------------------------------------------------------------

def client_address(request) -> str:
    """The client's address as Django sees it: REMOTE_ADDR, or with JOB_TRUSTED_PROXY_COUNT = n
    the n-th address from the right of X-Forwarded-For (the one the outermost trusted proxy
    appended). Fewer addresses than n: the leftmost. No header: REMOTE_ADDR."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    proxies = conf.get().TRUSTED_PROXY_COUNT
    if proxies:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        addresses = [a.strip() for a in forwarded.split(",") if a.strip()]
        if addresses:
            return addresses[-min(proxies, len(addresses))]
    return remote


def client_ident(request) -> str:
    """What a client's attempts are counted under: its IPv4 address, or its IPv6 /64."""
    address = client_address(request)
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address or "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is 192.0.2.1
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


# -- the shared limiter -------------------------------------------------------------------------

def throttle_cache():
    """The cache the throttles count in (JOB_THROTTLE_CACHE)."""
    return caches[conf.get().THROTTLE_CACHE]


class SlotLimiter:
    """At most `count` hits per `seconds` per ident, counted in the throttle cache: each hit
    claims one of `count` slots with an atomic `cache.add`, and a slot frees itself when its
    key expires, `seconds` after it was claimed."""

    def __init__(self, scope: str, rate: str):
        self.scope = scope
        self.count, self.seconds = parse_rate(rate)

    def _keys(self, ident: str) -> list[str]:
        digest = blake2b(ident.encode(), digest_size=12).hexdigest()  # short, memcached-safe
        return [f"django_pg_jobqueue:{self.scope}:{digest}:{slot}" for slot in range(self.count)]

    def hit(self, ident: str) -> float | None:
        """Count one hit: None when it is allowed, else the seconds until a slot frees."""
        cache = throttle_cache()
        keys = self._keys(ident)
        taken = cache.get_many(keys)
        now = time.time()
        timeout = max(1, math.ceil(self.seconds))
        for key in keys:
            if key not in taken and cache.add(key, now, timeout=timeout):
                return None
        claimed = [t for t in taken.values() if isinstance(t, (int, float))]
        oldest = min(claimed) if claimed else now
        return max(1.0, oldest + self.seconds - now)


def login_limiter() -> SlotLimiter:
    return SlotLimiter("login", conf.get().LOGIN_RATE)


def login_attempt_wait(request) -> float | None:
    """Count a login attempt of this request's client: None when allowed, else the seconds to
    wait. The API's LoginThrottle and `throttle_login` share it (one budget per client)."""
    return login_limiter().hit(client_ident(request))


_TOO_MANY = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Too many login attempts</title></head>
<body><h1>Too many login attempts</h1>
<p>Too many login attempts from your address. Try again in {} seconds.</p></body></html>
"""


def throttle_login(view):
    """Wrap a login view (the admin's, or any other) so that its POSTs count against the same
    per-client budget as the API's login: beyond JOB_LOGIN_RATE, a 429 page with Retry-After.
    GETs (the form itself) are not counted. In the host's URLconf, before the admin's URLs:

        path("admin/login/", throttle_login(admin.site.login)),
        path("admin/", admin.site.urls),
    """

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method == "POST":
            wait = login_attempt_wait(request)
            if wait is not None:
                seconds = math.ceil(wait)
                response = HttpResponse(format_html(_TOO_MANY, seconds), status=429,
                                        content_type="text/html; charset=utf-8")
                response["Retry-After"] = str(seconds)
                return response
        return view(request, *args, **kwargs)

    return wrapped


# -- Content-Security-Policy ----------------------------------------------------------------------

def _static_origin() -> str | None:
    """STATIC_URL's origin when the static files are served from another one (a CDN)."""
    parts = urlsplit(settings.STATIC_URL or "")
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


def content_security_policy_header(*, inline_styles: bool = False, workers: bool = False) -> str:
    """The app's pages' policy: scripts, styles, images and fonts from the site (and from
    STATIC_URL's origin when it has one), requests to the site, no plugins, no <base>, framed by
    the site only. `inline_styles`: style elements too (ReDoc and Swagger UI inject theirs);
    `workers`: workers from blob: URLs (ReDoc's search)."""
    static = [origin] if (origin := _static_origin()) else []
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'", *static],
        "style-src": ["'self'", *static, *(["'unsafe-inline'"] if inline_styles else [])],
        "img-src": ["'self'", *static, "data:"],
        "font-src": ["'self'", *static, "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'self'"],
    }
    if workers:
        directives["worker-src"] = ["'self'", "blob:"]
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


def content_security_policy(view=None, **options):
    """Set the app's Content-Security-Policy on this view's responses (a policy already on the
    response, the host's, is kept). `@content_security_policy` or
    `@content_security_policy(inline_styles=True)`."""
    if view is None:
        return functools.partial(content_security_policy, **options)

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy_header(**options)
        return response

    return wrapped


# -- checks ---------------------------------------------------------------------------------------

PER_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache",)
NO_CACHES = ("django.core.cache.backends.dummy.DummyCache",)


def check_throttle_cache(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """`check --deploy`: the throttle cache must count, and should count for every process."""
    alias = getattr(settings, "JOB_THROTTLE_CACHE", conf.default("JOB_THROTTLE_CACHE"))
    try:
        backend = settings.CACHES[alias]["BACKEND"]
    except (KeyError, TypeError, AttributeError):
        return []  # a missing alias is conf's error (JOB_THROTTLE_CACHE)
    if backend in NO_CACHES:
        return [checks.Error(
            f"JOB_THROTTLE_CACHE = {alias!r} is a DummyCache, which counts nothing: the login "
            "throttle never refuses anything.",
            hint="Point JOB_THROTTLE_CACHE at a cache shared by every process, e.g. "
                 "django.core.cache.backends.db.DatabaseCache (then run createcachetable).",
            obj="JOB_THROTTLE_CACHE", id="django_pg_jobqueue.E044")]
    if backend in PER_PROCESS_CACHES:
        return [checks.Warning(
            f"JOB_THROTTLE_CACHE = {alias!r} is a LocMemCache, which counts per process: with n "
            "server processes (gunicorn's workers, several hosts) a client gets n times the "
            "login rate.",
            hint="Point JOB_THROTTLE_CACHE at a cache shared by every process: "
                 "django.core.cache.backends.db.DatabaseCache (then run createcachetable), Redis "
                 "or Memcached. See the security how-to.",
            obj="JOB_THROTTLE_CACHE", id="django_pg_jobqueue.W043")]
    return []


checks.register(check_throttle_cache, checks.Tags.security, deploy=True)

