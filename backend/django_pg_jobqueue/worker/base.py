"""What every worker-side thread shares: a stop event to wait on, a connection borrowed from
the worker's pool for each run and given back after it (db.worker_connection), reconnect with
capped backoff, and logging at a bounded rate during an outage."""
import logging
import random
import threading
import time
from typing import TYPE_CHECKING

from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
)

from ..db import worker_connection

if TYPE_CHECKING:
    from .leader import Leadership
    from .signals import TestSignals

CONNECTION_ERRORS = (OperationalError, InterfaceError)


class RateLimitedLog:
    """Logs the first of a run of errors, then at most one line per `interval` seconds."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0):
        self.logger, self.interval = logger, interval
        self._last = 0.0
        self.suppressed = 0

    def error(self, msg: str, *args) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval:
            extra = f" ({self.suppressed} similar suppressed)" if self.suppressed else ""
            self.logger.error(msg + extra, *args)
            self._last, self.suppressed = now, 0
        else:
            self.suppressed += 1


class Backoff:
    def __init__(self, base: float = 0.2, cap: float = 10.0):
        self.base, self.cap, self.failures = base, cap, 0

    def next_delay(self) -> float:
        self.failures += 1
        delay = min(self.cap, self.base * 2 ** (self.failures - 1))
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


class ServiceThread(threading.Thread):
    """A loop that runs `run_once()` every `interval` seconds until `stop()`.

    Tests call `run_once()` directly instead of sleeping for the loop."""

    interval: float = 1.0
    # A maintenance loop runs only while this process leads (worker/leader.py); None: always.
    leadership: "Leadership | None" = None
    signals: "TestSignals | None" = None  # the pool's test signals, when a test asked (signals.py)

    def __init__(self, name: str, logger: logging.Logger):
        super().__init__(name=name, daemon=True)
        self.log = logger
        self.stopping = threading.Event()
        self.errors = RateLimitedLog(logger)
        self.backoff = Backoff()

    def run_once(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def stop(self) -> None:
        self.stopping.set()

    def pause_after_pass(self) -> float:
        """How long to wait after a pass that went well: `interval`, unless the pass says."""
        return self.interval

    def on_connection_error(self) -> None:
        """Called after a failed run because the database was unreachable."""

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                if self.leadership is not None and not self.leadership.is_leader():
                    # Another process runs this loop: nothing to do, no statement sent. Look
                    # again soon, so that a new leader's loops start within a second.
                    self.stopping.wait(min(self.interval, 1.0))
                    continue
                try:
                    close_old_connections()
                    with worker_connection():  # given back, or discarded if it broke
                        result = self.run_once()
                    if self.signals is not None:
                        self.signals.pass_done(self.name, result)
                    self.backoff.reset()
                    # Read after the pass: run_once may set the wait until its next one (the
                    # periodic enqueuer sleeps until the next tick, not the last pass's guess).
                    wait = self.pause_after_pass()
                except CONNECTION_ERRORS as exc:
                    self.errors.error("%s: database unavailable: %s", self.name, exc)
                    wait = self.backoff.next_delay()
                    self.on_connection_error()
                except DatabaseError as exc:
                    self.errors.error("%s: database error: %s", self.name, exc)
                    wait = self.backoff.next_delay()
                except Exception:
                    self.log.exception("%s: unexpected error", self.name)
                    wait = self.backoff.next_delay()
                finally:
                    # What the run opened outside the pool (the ORM on another alias): closed,
                    # so that an idle maintenance thread holds no connection.
                    connections.close_all()
                self.stopping.wait(wait)
        finally:
            connections.close_all()
