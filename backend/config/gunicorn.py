"""gunicorn settings for the API (`make run`, docker-compose). Override with GUNICORN_* env."""
import multiprocessing
import os

workers = int(os.environ.get("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count() * 2)))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
worker_class = "gthread"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 30))
graceful_timeout = 20
keepalive = 5
accesslog = "-" if os.environ.get("GUNICORN_ACCESS_LOG", "").lower() in ("1", "true") else None
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_fork(server, worker):
    # prometheus-client multiprocess mode: each gunicorn worker writes its own files.
    pass
