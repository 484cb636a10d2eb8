"""The periodic enqueuer: the thread each worker process runs to enqueue its schedules' due ticks
(the schedules are declared in django_pg_jobqueue.periodic; a tick is enqueued through the
engine, by services/schedules.py, exactly once however many processes try, by its idempotency
key)."""
import logging
import time
from datetime import datetime, timedelta

from django.db import DatabaseError
from django.utils import timezone as dj_timezone

from ..engine import Engine, default_engine
from ..periodic import MAX_CATCH_UP, MAX_WAIT_SECONDS, entries
from .base import ServiceThread

log = logging.getLogger("django_pg_jobqueue.periodic")


class PeriodicEnqueuer(ServiceThread):
    """Enqueues due ticks, then sleeps until the next one (at most MAX_WAIT_SECONDS)."""

    def __init__(self, engine: Engine | None = None) -> None:
        super().__init__("periodic", log)
        self.engine = engine or default_engine()
        self.interval = 1.0
        self._cursor: dict[str, datetime] = {}  # entry name -> end of this process's last pass
        self.total: dict[str, int] = {}

    def run_once(self, now: datetime | None = None) -> dict[str, int]:
        started = time.monotonic()
        now = now or dj_timezone.now()
        counts = {"enqueued": 0, "existing": 0, "skipped": 0, "invalid": 0, "paused": 0}
        next_at = now + timedelta(seconds=MAX_WAIT_SECONDS)
        paused = self.engine.paused_schedules()
        for entry in entries():
            if entry.name in paused:
                # Paused (services/schedules.py): its ticks pass unenqueued; the cursor moves
                # on, so that resuming enqueues the ticks from then on, not the missed ones.
                counts["paused"] += 1
                self._cursor[entry.name] = now
                next_at = min(next_at, entry.next_tick(now)) if not entry.problems() else next_at
                continue
            problems = entry.problems()
            if problems:
                counts["invalid"] += 1
                log.error("periodic entry %r is invalid: %s", entry.name, "; ".join(problems))
                continue
            cursor = self._cursor.get(entry.name)
            if cursor is None:
                due = [entry.latest_tick(now)]
            else:
                due = entry.ticks_between(cursor, now, MAX_CATCH_UP)
                if len(due) > MAX_CATCH_UP:
                    counts["skipped"] += len(due) - 1
                    log.warning("periodic entry %r: more than %d ticks due at once; enqueueing "
                                "only the latest", entry.name, MAX_CATCH_UP)
                    due = [entry.latest_tick(now)]
            for tick in due:
                try:
                    created = self.engine.enqueue_tick(entry, tick)
                except DatabaseError:
                    raise  # the service loop reconnects and backs off; the cursor stays put
                except Exception as exc:
                    # This entry's problem (a bad queue name, arguments that are not JSON, a
                    # changed payload under the same key): it must not hold up the others.
                    log.error("periodic entry %r tick %s not enqueued: %s: %s", entry.name,
                              tick.isoformat(), type(exc).__name__, exc)
                    counts["invalid"] += 1
                    continue
                counts["enqueued" if created else "existing"] += 1
                if created:
                    log.info("periodic entry %r: enqueued tick %s", entry.name, tick.isoformat())
            self._cursor[entry.name] = now
            next_at = min(next_at, entry.next_tick(now))
        for k, v in counts.items():
            self.total[k] = self.total.get(k, 0) + v
        wait = (next_at - now).total_seconds() - (time.monotonic() - started)
        self.interval = min(MAX_WAIT_SECONDS, max(0.01, wait + 0.005))
        return counts
