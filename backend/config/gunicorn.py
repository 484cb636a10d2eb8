"""gunicorn settings for the API (`make run`, docker-compose). Override with GUNICORN_* env."""
import multiprocessing
import os


def _env(name: str, default):
    """An unset or empty variable (`GUNICORN_WORKERS=` from .env.sample) gives the default."""
    return os.environ.get(name) or default


workers = int(_env("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count() * 2)))
threads = int(_env("GUNICORN_THREADS", 4))
worker_class = "gthread"
timeout = int(_env("GUNICORN_TIMEOUT", 30))
graceful_timeout = 20
keepalive = 5
accesslog = "-" if os.environ.get("GUNICORN_ACCESS_LOG", "").lower() in ("1", "true") else None
errorlog = "-"
forwarded_allow_ips = _env("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_fork(server, worker):
    # prometheus-client multiprocess mode: each gunicorn worker writes its own files.
    pass
