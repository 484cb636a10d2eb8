"""LISTEN for enqueue notifications and wake idle lanes at once.

Enqueueing sends NOTIFY inside its transaction, so PostgreSQL delivers it on commit. Polling
stays as the fallback (a missed notification costs at most one poll interval), and
JOB_LISTEN_NOTIFY=false turns this off.

LISTEN is session state: a transaction pooler (PgBouncer in transaction mode) would run it on
one server connection and deliver nothing after. So the listener holds a connection of its
own, in autocommit, for the life of the process: to JOB_LISTEN_DATABASE_URL when set (a direct
connection to PostgreSQL, past the pooler), otherwise with the parameters of the queue's
DATABASES entry. NOTIFY itself is sent inside the enqueuing transaction and works through the
pooler: PostgreSQL delivers it to every listener of the database on commit."""
import logging
import threading
from typing import TYPE_CHECKING

import psycopg

from .. import db
from .base import Backoff, RateLimitedLog

if TYPE_CHECKING:
    from .signals import TestSignals

log = logging.getLogger("django_pg_jobqueue.listener")


class Listener(threading.Thread):
    signals: "TestSignals | None" = None  # the pool's test signals, when a test asked (signals.py)

    def __init__(self, on_notify, connected=None):
        super().__init__(name="listener", daemon=True)
        self.on_notify = on_notify  # callback(queue_name)
        self.stopping = threading.Event()
        # Set while LISTEN is up. A supervisor passes a multiprocessing Event, which its
        # children read (worker/relay.py).
        self.connected = connected if connected is not None else threading.Event()

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        errors, backoff = RateLimitedLog(log), Backoff()
        params = connection_params()
        while not self.stopping.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    db.listen(conn)
                    self.connected.set()
                    if self.signals is not None:
                        self.signals.listening.emit(True)
                    backoff.reset()
                    # Wake everyone once after (re)connecting: notifications sent while we
                    # were away are lost. (The line: what a test of another process waits on.)
                    log.debug("LISTEN connection up: waking every lane once")
                    self.on_notify(None)
                    while not self.stopping.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.on_notify(note.payload)
            except psycopg.Error as exc:
                self.connected.clear()
                if self.signals is not None:
                    self.signals.listening.emit(False)
                errors.error("listener: %s", exc)
                self.stopping.wait(backoff.next_delay())


def connection_params() -> dict:
    """psycopg.connect() keyword arguments of the listener's connection."""
    return db.listen_connection_params("jobqueue-listener")
