"""The stuck watch (River's watchStuck): handlers still running past their job's timeout.

A job's timeout fails its attempt on the database clock (worker/renewer.py: retried or failed
by its policy) and asks its handler to stop; a handler that never looks (`while True: pass`,
a call blocked in C) keeps its thread. Once one has run JOB_TIMEOUT_GRACE_SECONDS past its
timeout it is stuck: logged once per attempt, noted on its job's timeline (a `log` event), and
counted in the process's heartbeat (`stuck_handlers`, the `jobqueue_stuck_handlers` gauge).
Under the supervisor (worker/supervisor.py) the process then ends itself and is replaced: the
only way to take a thread back in Python. The renewer calls `run_once()` on each pass."""
import logging
import os
import time
from typing import Any

from .. import conf
from ..engine import Engine, default_engine
from .held import Held

log = logging.getLogger("django_pg_jobqueue.worker")


class StuckWatch:
    def __init__(self, executors, grace_seconds: float | None = None,
                 engine: Engine | None = None):
        self.executors = executors
        self.engine = engine or default_engine()
        self.grace_seconds = (conf.get().TIMEOUT_GRACE_SECONDS if grace_seconds is None
                              else grace_seconds)
        self._reported: set[tuple[int, int]] = set()  # (job id, attempt) already noted
        self.total = 0  # handlers found stuck since the process started

    def stuck(self, now: float | None = None) -> list[tuple[Any, Held, float]]:
        """(executor, held, seconds past its timeout) for each handler running past its
        timeout plus the grace."""
        now = time.monotonic() if now is None else now
        out = []
        for executor in self.executors:
            held = executor.current
            if held is None or held.running_since is None or not held.job.timeout_seconds:
                continue
            past = now - held.running_since - held.job.timeout_seconds
            if past >= self.grace_seconds:
                out.append((executor, held, past))
        return out

    def run_once(self) -> int:
        """Note each newly stuck handler (log, job event); return how many are stuck now."""
        found = self.stuck()
        for executor, held, past in found:
            key = (held.job.id, held.job.attempt)
            if key in self._reported:
                continue
            self._reported.add(key)
            self.total += 1
            message = (f"stuck: the handler is still running {past:.1f}s past its "
                       f"{held.job.timeout_seconds}s timeout (attempt {held.job.attempt}, "
                       f"thread {executor.worker_id}); it does not check ctx.should_stop()")
            log.error("job=%s type=%s %s", held.job.id, held.job.type, message)
            self.engine.record_stuck_handler(held.job.id, attempt=held.job.attempt,
                                             worker_id=executor.worker_id, message=message,
                                             seconds_past_timeout=round(past, 3),
                                             lease_token=held.job.lease_token)
        self._reported &= {(h.job.id, h.job.attempt) for _, h, _ in found}
        return len(found)


def rss_bytes() -> int | None:
    """This process's resident memory now (Linux: /proc/self/statm); elsewhere its peak
    (getrusage), or None when neither can be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    except (ImportError, OSError):
        return None
