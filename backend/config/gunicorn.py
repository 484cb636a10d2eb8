"""gunicorn settings for the API (`make run`, docker-compose). Override with GUNICORN_* env."""
import multiprocessing
import os


def _env(name: str, default):
    """An unset or empty variable (`GUNICORN_WORKERS=` from .env.sample) gives the default."""
    return os.environ.get(name) or default


# One process per CPU (at most 4). A gthread process runs Python on one core at a time (the
# GIL) and its threads cover the waits on the database, so processes beyond the cores only
# add CPU per request (more GIL handoffs, more switching) and spread the clients' keep-alive
# connections unevenly: the processes that happened to accept more of them answer later.
# On 2 cores, 2 x 4 against 4 x 4 at 32 connections (POST /api/v1/jobs/, 4 interleaved runs
# each): p95 40-47 ms against 58-80 ms, 1,290 against 1,440 us of CPU per request.
workers = int(_env("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count())))
threads = int(_env("GUNICORN_THREADS", 4))
worker_class = "gthread"
timeout = int(_env("GUNICORN_TIMEOUT", 30))
graceful_timeout = 20
keepalive = 5
accesslog = "-" if os.environ.get("GUNICORN_ACCESS_LOG", "").lower() in ("1", "true") else None
errorlog = "-"
forwarded_allow_ips = _env("FORWARDED_ALLOW_IPS", "127.0.0.1")


# Import Django, every view and DRF once, in the master, before forking: otherwise each
# worker imports the URL conf (and with it DRF, drf-spectacular, ...) on its first request,
# ~1 s of CPU per worker that a request waits for. Code changes need a restart (not HUP).
preload_app = True


def when_ready(server):
    """In the master, after the app loaded and before the workers fork."""
    from django.db import connections
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view module
    connections.close_all()  # no connection may cross a fork


def post_fork(server, worker):
    # prometheus-client multiprocess mode: each gunicorn worker writes its own files.
    pass
