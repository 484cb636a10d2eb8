"""Minimal Django settings for django-tasks-db's measurements (peers venv only)."""
import os
from urllib.parse import unquote, urlsplit

_u = urlsplit(os.environ["BENCH_DTDB_URL"])
SECRET_KEY = "bench-only"
USE_TZ = True
INSTALLED_APPS = ["django_tasks_db"]
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql", "NAME": _u.path.lstrip("/"),
    "USER": unquote(_u.username or ""), "PASSWORD": unquote(_u.password or ""),
    "HOST": _u.hostname or "", "PORT": _u.port or "", "CONN_MAX_AGE": 60,
}}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "root": {"level": "WARNING"}}
