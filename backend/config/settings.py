"""Django settings, read from the environment (django-environ) and `.env` when present.

Every variable is documented in `.env.sample`. `DJANGO_ENV=production` turns on the
production checks: a strong SECRET_KEY, DEBUG off, ALLOWED_HOSTS set, secure cookies; and the
demo app's system check refuses to start (`check`, `migrate`) while the demo account still
opens with its published password (demo/checks.py).
"""
import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BACKEND_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BACKEND_DIR.parent

env = environ.Env()
if (REPO_DIR / ".env").is_file():
    environ.Env.read_env(REPO_DIR / ".env", overwrite=False)
# An empty value (`DEBUG=`, as `.env.sample` and docker-compose's env_file pass it) means "not
# set": the default applies. Without this, `cp .env.sample .env` gives an empty SECRET_KEY.
env.ENVIRON = {k: v for k, v in os.environ.items() if v != ""}

DJANGO_ENV = env.str("DJANGO_ENV", default="development")
if DJANGO_ENV not in ("development", "production"):
    raise ImproperlyConfigured("DJANGO_ENV must be 'development' or 'production'")
PRODUCTION = DJANGO_ENV == "production"

_DEV_SECRET_KEY = "dev-insecure-change-me-0f3c1b9e8a7d4c2b"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET_KEY)
# The debug switch has one name, DEBUG. DJANGO_DEBUG looks like it should work and used to be
# ignored without a word (`DJANGO_DEBUG=false` left a production-shaped setup in debug mode):
# set, it stops the start-up.
if "DJANGO_DEBUG" in env.ENVIRON:
    raise ImproperlyConfigured("DJANGO_DEBUG is not read: the debug variable is DEBUG "
                               "(DEBUG=false or DEBUG=true); remove DJANGO_DEBUG")
DEBUG = env.bool("DEBUG", default=not PRODUCTION)
# Only the names the site answers to: the Host header reaches absolute URLs (the API's
# pagination links, redirects), so `*` would let any client put its own host in them. In
# development, the loopback names plus any the environment adds.
LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
ALLOWED_HOSTS = [*([] if PRODUCTION else LOOPBACK_HOSTS), *env.list("ALLOWED_HOSTS", default=[])]
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])


def _weak_secret_key(key: str) -> str | None:
    """Why `key` is too weak to sign production's sessions and tokens, or None. Refused: the
    development key (even inside a longer one), Django's `django-insecure-` keys, fewer than 50
    characters, fewer than 10 distinct characters, or a key so patterned (a repeated word or
    phrase) that it compresses to under 36 bytes. `secrets.token_urlsafe(50)` passes by far."""
    import zlib

    if _DEV_SECRET_KEY in key:
        return "it is the development key"
    if key.startswith("django-insecure-"):
        return "it is one of Django's insecure startproject keys"
    if len(key) < 50:
        return f"it has {len(key)} characters, fewer than 50"
    if len(set(key)) < 10:
        return f"it has {len(set(key))} distinct characters, fewer than 10"
    if len(zlib.compress(key.encode("utf-8", "surrogatepass"), 9)) - 8 < 36:
        return "it repeats itself (a word or phrase over and over): too little entropy"
    return None


if PRODUCTION:
    if (_weakness := _weak_secret_key(SECRET_KEY)) is not None:
        raise ImproperlyConfigured(
            f"production: SECRET_KEY is too weak ({_weakness}); set it to a random string of "
            "50+ characters: python -c \"import secrets; print(secrets.token_urlsafe(50))\"")
    if DEBUG:
        raise ImproperlyConfigured("production: DEBUG must be off")
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("production: set ALLOWED_HOSTS")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_REDIRECT_EXEMPT = [r"^api/health/$", r"^metrics$"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework.authtoken",
    "drf_spectacular_sidecar",
    "django_pg_jobqueue",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------
# DATABASE_URL when set; otherwise the embedded, project-local PostgreSQL (started on demand,
# data in .pgdata/). See backend/config/embedded_pg.py.
DATABASE_URL = env.str("DATABASE_URL", default="")
if not DATABASE_URL:
    from config import embedded_pg

    DATABASE_URL = embedded_pg.ensure_running()
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
DATABASES["default"].setdefault("OPTIONS", {})
if env.bool("DATABASE_POOL", default=False):
    # psycopg's pool, for the API under gunicorn's threads, and for the handlers of a worker's
    # executor threads (which return their connection after each job); the worker's own
    # machinery has a pool of its own (JOB_WORKER_POOL_SIZE).
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=10),
        "timeout": 10,
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME", default=None)}

# The queue in a database of its own (docs/how-to/poolers-and-databases.md): JOB_DATABASE_URL
# defines the alias "queue", and the router sends the queue's models and migrations there.
JOB_DATABASE_URL = env.str("JOB_DATABASE_URL", default="")
if JOB_DATABASE_URL:
    DATABASES["queue"] = env.db_url_config(JOB_DATABASE_URL)
    DATABASES["queue"]["ENGINE"] = "django.db.backends.postgresql"
    DATABASES["queue"].setdefault("OPTIONS", {})["connect_timeout"] = 5
    DATABASES["queue"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["queue"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["queue"]["TEST"] = {"NAME": env.str("JOB_TEST_DATABASE_NAME", default=None)}
    JOB_DATABASE = "queue"
    DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
# The API's and dashboard's reads from a streaming replica of the queue's database
# (docs/how-to/read-replicas.md): JOB_READ_DATABASE_URL names it.
JOB_READ_DATABASE_URL = env.str("JOB_READ_DATABASE_URL", default="")
if JOB_READ_DATABASE_URL:
    DATABASES["replica"] = env.db_url_config(JOB_READ_DATABASE_URL)
    DATABASES["replica"]["ENGINE"] = "django.db.backends.postgresql"
    DATABASES["replica"].setdefault("OPTIONS", {})["connect_timeout"] = 2
    DATABASES["replica"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = True
    # The test run reads the test database itself through this alias.
    DATABASES["replica"]["TEST"] = {"MIRROR": "queue" if JOB_DATABASE_URL else "default"}
    JOB_READ_DATABASE = "replica"
    JOB_READ_MAX_LAG_SECONDS = env.float("JOB_READ_MAX_LAG_SECONDS", default=30.0)
    DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
# Behind PgBouncer in transaction mode (DATABASE_URL, or JOB_DATABASE_URL, pointing at it):
# no prepared statements, SET LOCAL limits, LISTEN on the direct JOB_LISTEN_DATABASE_URL; and
# no server-side cursors, which a transaction pooler cannot keep.
JOB_TRANSACTION_POOLER = env.bool("JOB_TRANSACTION_POOLER", default=False)
JOB_LISTEN_DATABASE_URL = env.str("JOB_LISTEN_DATABASE_URL", default="")
if JOB_TRANSACTION_POOLER:
    for _database in DATABASES.values():
        _database["DISABLE_SERVER_SIDE_CURSORS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BACKEND_DIR / "staticfiles"
# Whitenoise serves STATIC_ROOT (collectstatic), the dashboard's built assets among them
# (django_pg_jobqueue/dashboard/, `make ui`); the dashboard's page is its view (config/urls.py).
# In development it serves the apps' static files straight from the finders, under gunicorn as
# under runserver, and picks up a rebuilt UI without a restart.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

LOGIN_URL = "/admin/login/"

# --- Caches: the login throttle's counts, shared by every process ----------------------------
# The API's login throttle, and the admin's login throttle (config/urls.py), count in
# JOB_THROTTLE_CACHE (the job-creation throttle counts in the queue's database, its own table). It must be shared by gunicorn's processes (and hosts), or each
# counts on its own: here the database cache, table `jobqueue_cache`, created after every
# `migrate` by the demo app (demo/apps.py runs createcachetable). MAX_ENTRIES bounds the table;
# Django's database cache counts its rows on every write, so keep it in the thousands, and use
# Redis (django.core.cache.backends.redis.RedisCache) for heavy traffic. "default" stays a
# per-process memory cache for anything else.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobqueue": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "jobqueue_cache",
        "OPTIONS": {"MAX_ENTRIES": 10000, "CULL_FREQUENCY": 3},
    },
}
# JOB_THROTTLE_CACHE_URL (redis://host:6379/0) moves that cache to Redis (Django's own
# RedisCache backend; the demo installs redis-py): the counts stay shared.
JOB_THROTTLE_CACHE_URL = env.str("JOB_THROTTLE_CACHE_URL", default="")
if JOB_THROTTLE_CACHE_URL:
    CACHES["jobqueue"] = env.cache_url_config(JOB_THROTTLE_CACHE_URL)
# "default" (per process) is enough for one process alone, e.g. a benchmark of the API's raw speed.
JOB_THROTTLE_CACHE = env.str("JOB_THROTTLE_CACHE", default="jobqueue")

# --- The API ------------------------------------------------------------------------------
# No REST_FRAMEWORK or SPECTACULAR_SETTINGS: the API (django_pg_jobqueue.api, mounted in
# config/urls.py) declares its DRF and drf-spectacular configuration on its own views. The
# docs pages (/api/docs/) need "drf_spectacular_sidecar" in INSTALLED_APPS; token
# authentication needs "rest_framework.authtoken".

# --- Producers: Django's Tasks framework and periodic jobs (README "producers") ------------
# django.tasks' @task functions are stored as jobs and run by `run_job_workers`. QUEUES lists
# the queue_name values tasks may use ([] accepts any).
TASKS = {
    "default": {
        "BACKEND": "django_pg_jobqueue.tasks_backend.QueueBackend",
        "QUEUES": env.list("TASKS_QUEUES", default=["default"]),
    }
}
# Cron schedules, each tick enqueued exactly once across worker processes (django_pg_jobqueue/periodic.py):
# {"name": {"cron": "0 3 * * *", "timezone": "Europe/Paris", "type": "report_generate",
#           "payload": {...}}}  or {"task": "myapp.tasks.fn", "args": [...], "kwargs": {...}}.
# Write the dict here, or pass it as JSON in the environment.
JOB_PERIODIC = env.json("JOB_PERIODIC", default={})

# --- The queue (every JOB_* setting; typed defaults and validation in django_pg_jobqueue/conf.py) --------
JOB_LEASE_SECONDS = env.float("JOB_LEASE_SECONDS", default=30.0)
JOB_WORKER_THREADS = env.int("JOB_WORKER_THREADS", default=4)
JOB_WORKER_LOG_LEVEL = env.str("JOB_WORKER_LOG_LEVEL", default="INFO")
JOB_LOG_FORMAT = env.str("JOB_LOG_FORMAT", default="text")
JOB_POLL_INTERVAL_SECONDS = env.float("JOB_POLL_INTERVAL_SECONDS", default=1.0)
JOB_POLL_JITTER_SECONDS = env.float("JOB_POLL_JITTER_SECONDS", default=0.25)
JOB_POLL_INTERVAL_MAX_SECONDS = env.float("JOB_POLL_INTERVAL_MAX_SECONDS", default=5.0)
JOB_FETCH_COOLDOWN_SECONDS = env.float("JOB_FETCH_COOLDOWN_SECONDS", default=0.25)
JOB_WAKE_JITTER_SECONDS = env.float("JOB_WAKE_JITTER_SECONDS", default=None)
JOB_MAINTENANCE_LEADER = env.bool("JOB_MAINTENANCE_LEADER", default=True)
JOB_LEADER_LEASE_SECONDS = env.float("JOB_LEADER_LEASE_SECONDS", default=None)
JOB_LISTEN_NOTIFY = env.bool("JOB_LISTEN_NOTIFY", default=True)
JOB_SHUTDOWN_GRACE_SECONDS = env.float("JOB_SHUTDOWN_GRACE_SECONDS", default=25.0)
JOB_TIMEOUT_GRACE_SECONDS = env.float("JOB_TIMEOUT_GRACE_SECONDS", default=5.0)
JOB_REAPER_INTERVAL_SECONDS = env.float("JOB_REAPER_INTERVAL_SECONDS", default=5.0)
JOB_RETRY_BASE_SECONDS = env.float("JOB_RETRY_BASE_SECONDS", default=1.0)
JOB_RETRY_MAX_SECONDS = env.float("JOB_RETRY_MAX_SECONDS", default=3600.0)
JOB_RETRY_JITTER = env.float("JOB_RETRY_JITTER", default=0.2)
JOB_DEFAULT_MAX_ATTEMPTS = env.int("JOB_DEFAULT_MAX_ATTEMPTS", default=3)
JOB_DEFAULT_TIMEOUT_SECONDS = env.int("JOB_DEFAULT_TIMEOUT_SECONDS", default=600)
JOB_MAX_PAYLOAD_BYTES = env.int("JOB_MAX_PAYLOAD_BYTES", default=65536)
JOB_API_PUBLIC_READ = env.bool("JOB_API_PUBLIC_READ", default=False)
# What the API and the dashboard's create form may create (the library's default: nothing):
# the demo's handlers and the library's deterministic ones (demo/handlers.py registers
# them). No Django task.
JOB_API_CREATABLE_TYPES = env.list("JOB_API_CREATABLE_TYPES", default=[
    "email_send", "payment_retry", "report_generate", "noop", "sleep", "flaky", "fail"])
JOB_API_CREATABLE_TASKS = env.list("JOB_API_CREATABLE_TASKS", default=[])
# The bounds of what an API user chooses for a job: the library's defaults (a queue that
# exists, priority at most 0, at most 30 days ahead, a timeout of at most a day) unless the
# environment says otherwise (the browser tests name their own queues).
JOB_API_QUEUES = env.list("JOB_API_QUEUES", default=[]) or None  # empty: a queue that exists
JOB_API_MAX_PRIORITY = env.int("JOB_API_MAX_PRIORITY", default=0)
JOB_API_MAX_DELAY_SECONDS = env.int("JOB_API_MAX_DELAY_SECONDS", default=30 * 86400)
JOB_API_MAX_TIMEOUT_SECONDS = env.int("JOB_API_MAX_TIMEOUT_SECONDS", default=86400)
# The dashboard's own password login (off in the library): the demo logs in demo/demo-password
# with it. A host with SSO or two-factor login leaves it off.
JOB_API_PASSWORD_LOGIN = env.bool("JOB_API_PASSWORD_LOGIN", default=True)
JOB_MAX_QUEUE_DEPTH = env.int("JOB_MAX_QUEUE_DEPTH", default=None)
JOB_CLAIM_BATCH_SIZE = env.int("JOB_CLAIM_BATCH_SIZE", default=200)
JOB_PREFETCH = env.int("JOB_PREFETCH", default=128)
JOB_STATEMENT_TIMEOUT_MS = env.int("JOB_STATEMENT_TIMEOUT_MS", default=30000)
JOB_PREPARED_STATEMENTS = env.bool("JOB_PREPARED_STATEMENTS", default=True)
JOB_CREATE_RATE = env.str("JOB_CREATE_RATE", default="600/min")
JOB_LOGIN_RATE = env.str("JOB_LOGIN_RATE", default="30/min")
# How many proxies in front append to X-Forwarded-For; 0 reads REMOTE_ADDR only (the default:
# `make run` and docker-compose publish gunicorn directly). See docs/how-to/security.md.
JOB_TRUSTED_PROXY_COUNT = env.int("JOB_TRUSTED_PROXY_COUNT", default=0)
# Operations: retention and the pruner, /metrics, OpenTelemetry.
JOB_RETENTION_SUCCEEDED = env.str("JOB_RETENTION_SUCCEEDED", default="7d")
JOB_RETENTION_FAILED = env.str("JOB_RETENTION_FAILED", default="30d")
JOB_RETENTION_CANCELLED = env.str("JOB_RETENTION_CANCELLED", default="7d")
JOB_PRUNE_INTERVAL_SECONDS = env.float("JOB_PRUNE_INTERVAL_SECONDS", default=300.0)
JOB_PRUNE_BATCH_SIZE = env.int("JOB_PRUNE_BATCH_SIZE", default=1000)
JOB_METRICS_TOKEN = env.str("JOB_METRICS_TOKEN", default="")
JOB_METRICS_WINDOW_SECONDS = env.float("JOB_METRICS_WINDOW_SECONDS", default=300.0)
JOB_METRICS_STATEMENT_TIMEOUT_MS = env.int("JOB_METRICS_STATEMENT_TIMEOUT_MS", default=5000)
JOB_OTEL_ENABLED = env.bool("JOB_OTEL_ENABLED", default=False)
# Extra modules of @handler functions to import at start-up, beyond each app's handlers.py
# (e.g. test-only handlers that worker subprocesses must know).
JOB_EXTRA_HANDLER_MODULES = env.list("JOB_EXTRA_HANDLER_MODULES", default=[])

# A bad JOB_LOG_FORMAT or JOB_WORKER_LOG_LEVEL must reach `manage.py check`, which names it,
# rather than crash logging's set-up first: LOGGING only takes values it can use.
_LOG_FORMATTER = JOB_LOG_FORMAT if JOB_LOG_FORMAT in ("text", "json") else "text"
_JOB_LOG_LEVEL = (JOB_WORKER_LOG_LEVEL.upper() if JOB_WORKER_LOG_LEVEL.upper() in
                  ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "INFO")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "django_pg_jobqueue.logformat.JsonFormatter"},
    },
    "handlers": {
        # Production logs go to stdout for the container runtime; development keeps stderr.
        "console": {"class": "logging.StreamHandler", "formatter": _LOG_FORMATTER,
                    "stream": "ext://sys.stdout" if PRODUCTION else "ext://sys.stderr"},
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django_pg_jobqueue": {"handlers": ["console"], "level": _JOB_LOG_LEVEL, "propagate": False},
        # A line a second saying what the workers finished ("finished in the last 1.0s: 12
        # succeeded, 1 retry_scheduled"), so that `make run` shows work happening; a line per
        # success is DEBUG, which at thousands of jobs a second costs more than the jobs.
        "django_pg_jobqueue.summary": {
            "level": "INFO" if _JOB_LOG_LEVEL in ("DEBUG", "INFO") else _JOB_LOG_LEVEL},
        # Django's own default gives "django" a bare console handler (when DEBUG) and lets it
        # propagate to root's: every django.* line, django.tasks' task lines among them, would
        # print twice, once bare and once formatted. One formatted line instead (the demo sets
        # no ADMINS, so Django's mail_admins handler had nothing to send).
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
