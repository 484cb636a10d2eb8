"""Every JOB_* setting with its typed default, validated once.

`config/settings.py` reads them from the environment; this module is the only place the
queue reads them from, through `get()`. Tests change them with `override_settings`.
"""
import re
from dataclasses import dataclass, fields
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver


@dataclass(frozen=True)
class QueueConf:
    LEASE_SECONDS: float = 30.0
    WORKER_THREADS: int = 4
    WORKER_LOG_LEVEL: str = "INFO"
    LOG_FORMAT: str = "text"
    POLL_INTERVAL_SECONDS: float = 1.0
    POLL_JITTER_SECONDS: float = 0.25
    LISTEN_NOTIFY: bool = True
    SHUTDOWN_GRACE_SECONDS: float = 25.0
    REAPER_INTERVAL_SECONDS: float = 5.0
    RETRY_BASE_SECONDS: float = 1.0
    RETRY_MAX_SECONDS: float = 3600.0
    RETRY_JITTER: float = 0.2
    DEFAULT_MAX_ATTEMPTS: int = 3
    DEFAULT_TIMEOUT_SECONDS: int | None = 600
    MAX_PAYLOAD_BYTES: int = 65536
    API_PUBLIC_READ: bool = False
    MAX_QUEUE_DEPTH: int | None = None
    CLAIM_BATCH_SIZE: int = 50
    PREFETCH: int = 0  # most jobs a lane claims beyond its idle threads (worker/pool.py); 0: off
    STATEMENT_TIMEOUT_MS: int = 30000
    PREPARED_STATEMENTS: bool = True
    CREATE_RATE: str = "600/min"
    # Retention (jobs/services/pruning.py): how long finished jobs and their events are kept,
    # per final status, as durations ('7d', '12h'; '' or 'off' keeps them forever).
    RETENTION_SUCCEEDED: str = "7d"
    RETENTION_FAILED: str = "30d"
    RETENTION_CANCELLED: str = "7d"
    PRUNE_INTERVAL_SECONDS: float = 300.0  # the worker pool's pruner; 0 turns it off
    PRUNE_BATCH_SIZE: int = 1000
    # GET /metrics (jobs/metrics.py)
    METRICS_TOKEN: str = ""  # set: the endpoint requires `Authorization: Bearer <token>`
    METRICS_WINDOW_SECONDS: float = 300.0  # the sliding window of the *_recent metrics
    METRICS_STATEMENT_TIMEOUT_MS: int = 5000
    OTEL_ENABLED: bool = False  # OpenTelemetry spans (jobs/tracing.py), if opentelemetry-api is installed
    EXTRA_HANDLER_MODULES: tuple[str, ...] = ()
    MAX_RESULT_BYTES: int = 1048576  # most bytes of a result's JSON; over it the job fails for good (outcomes.py)
    MAX_ERROR_CHARS: int = 10000  # an error message is cut to this many characters, saying so
    MAX_TRACEBACK_CHARS: int = 20000  # a traceback keeps its last this many characters, saying so

    def validate(self) -> "QueueConf":
        if self.LEASE_SECONDS < 1:
            raise ImproperlyConfigured("JOB_LEASE_SECONDS must be at least 1")
        if self.WORKER_THREADS < 1:
            raise ImproperlyConfigured("JOB_WORKER_THREADS must be at least 1")
        if not 0 <= self.RETRY_JITTER <= 1:
            raise ImproperlyConfigured("JOB_RETRY_JITTER must be between 0 and 1")
        if self.RETRY_BASE_SECONDS < 0 or self.RETRY_MAX_SECONDS < self.RETRY_BASE_SECONDS:
            raise ImproperlyConfigured("need 0 <= JOB_RETRY_BASE_SECONDS <= JOB_RETRY_MAX_SECONDS")
        if self.DEFAULT_MAX_ATTEMPTS < 1:
            raise ImproperlyConfigured("JOB_DEFAULT_MAX_ATTEMPTS must be at least 1")
        if self.POLL_INTERVAL_SECONDS <= 0:
            raise ImproperlyConfigured("JOB_POLL_INTERVAL_SECONDS must be positive")
        if self.LOG_FORMAT not in ("text", "json"):
            raise ImproperlyConfigured("JOB_LOG_FORMAT must be 'text' or 'json'")
        for status in ("SUCCEEDED", "FAILED", "CANCELLED"):
            try:
                self.retention(status)
            except ValueError as exc:
                raise ImproperlyConfigured(f"JOB_RETENTION_{status}: {exc}") from None
        if self.PREFETCH < 0:
            raise ImproperlyConfigured("JOB_PREFETCH must be >= 0 (0: off)")
        if self.PRUNE_INTERVAL_SECONDS < 0:
            raise ImproperlyConfigured("JOB_PRUNE_INTERVAL_SECONDS must be >= 0 (0: off)")
        if self.PRUNE_BATCH_SIZE < 1:
            raise ImproperlyConfigured("JOB_PRUNE_BATCH_SIZE must be at least 1")
        if self.METRICS_WINDOW_SECONDS < 1:
            raise ImproperlyConfigured("JOB_METRICS_WINDOW_SECONDS must be at least 1")
        if not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", self.CREATE_RATE):
            raise ImproperlyConfigured("JOB_CREATE_RATE must look like 600/min (per s, min, hour or day)")
        if self.MAX_RESULT_BYTES < 16:
            raise ImproperlyConfigured("JOB_MAX_RESULT_BYTES must be at least 16")
        if self.MAX_ERROR_CHARS < 100 or self.MAX_TRACEBACK_CHARS < 100:
            raise ImproperlyConfigured("JOB_MAX_ERROR_CHARS and JOB_MAX_TRACEBACK_CHARS must be at least 100")
        return self

    def retention(self, status: str):
        """How long finished jobs of `status` are kept (a timedelta), or None: forever."""
        from .durations import parse_retention

        return parse_retention(getattr(self, f"RETENTION_{str(status).upper()}"))


@cache
def get() -> QueueConf:
    values = {
        f.name: getattr(settings, f"JOB_{f.name}")
        for f in fields(QueueConf)
        if hasattr(settings, f"JOB_{f.name}")
    }
    if "EXTRA_HANDLER_MODULES" in values:
        values["EXTRA_HANDLER_MODULES"] = tuple(values["EXTRA_HANDLER_MODULES"] or ())
    return QueueConf(**values).validate()


@receiver(setting_changed)
def _reset(setting, **kwargs):
    if setting.startswith("JOB_"):
        get.cache_clear()
