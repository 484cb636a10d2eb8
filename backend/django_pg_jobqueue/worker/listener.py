"""LISTEN for enqueue notifications and wake idle dispatchers at once.

Enqueueing sends NOTIFY inside its transaction, so PostgreSQL delivers it on commit. Polling
stays as the fallback (a missed notification costs at most one poll interval), and
JOB_LISTEN_NOTIFY=false turns this off for poolers that break LISTEN (PgBouncer in
transaction mode)."""
import logging
import threading

import psycopg
from django.db import connection

from .. import sql
from .base import Backoff, RateLimitedLog

log = logging.getLogger("django_pg_jobqueue.listener")


class Listener(threading.Thread):
    def __init__(self, on_notify):
        super().__init__(name="listener", daemon=True)
        self.on_notify = on_notify  # callback(queue_name)
        self.stopping = threading.Event()
        self.connected = threading.Event()

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        errors, backoff = RateLimitedLog(log), Backoff()
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        params.pop("prepare_threshold", None)
        while not self.stopping.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    conn.execute(f"LISTEN {sql.NOTIFY_CHANNEL}")
                    self.connected.set()
                    backoff.reset()
                    # Wake everyone once after (re)connecting: notifications sent while we
                    # were away are lost.
                    self.on_notify(None)
                    while not self.stopping.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.on_notify(note.payload)
            except psycopg.Error as exc:
                self.connected.clear()
                errors.error("listener: %s", exc)
                self.stopping.wait(backoff.next_delay())
