"""One LISTEN connection per host: the supervisor listens, and wakes one child per notification.

Without a supervisor every worker process holds its own LISTEN connection and every NOTIFY
wakes every process, so a job enqueued alone costs one claim per process. Under
`run_job_workers --processes N` the supervisor holds the host's only LISTEN connection
(worker/listener.py's Listener, autocommit, no transaction, no claim) and relays each
notification to ONE child, over that child's own pipe:

- a notification of a queue goes to the next child in turn (a rotation, so the children
  share the work); a child that has no idle thread for that queue answers "pass", and the
  supervisor hands the wake-up to the next child, at most once round the host;
- a child whose claims keep coming back full (a burst: a batch enqueue sends one NOTIFY per
  queue however many jobs it holds) answers "more" once, and the supervisor wakes the next
  child too: a burst spreads over the host one child at a time, at the cost of no claim that
  finds nothing;
- a notification with no queue (the listener has just (re)connected, and what was sent
  while it was away is lost) goes to every child.

A pipe per child, not a shared queue or a shared event: the supervisor chooses which child
wakes (an event would wake them all, which is the stampede this avoids), the message carries
the queue, the child answers on the same pipe, and a dead child's pipe is simply closed with
it. The supervisor shares one more thing with its children: whether its LISTEN connection is
up (a multiprocessing Event). While it is, an idle child backs its polling off towards
JOB_POLL_INTERVAL_MAX_SECONDS, as a listening process does; while it is down (the connection
lost, the server restarting) the children poll every JOB_POLL_INTERVAL_SECONDS and so still
pick up every job, and the supervisor reconnects with a capped backoff.

Children of a supervisor therefore hold no LISTEN connection: an idle child holds the one
connection its worker pool keeps (worker/pool.py), the supervisor holds the LISTEN one."""
import logging
import threading
from multiprocessing.connection import wait as wait_for_connections
from typing import Any

log = logging.getLogger("django_pg_jobqueue.relay")

WAKE, PASS, MORE = "wake", "pass", "more"


class HostRelay(threading.Thread):
    """The supervisor's side: the children's pipes, the rotation, and the answers."""

    def __init__(self) -> None:
        super().__init__(name="relay", daemon=True)
        self.children: dict[int, Any] = {}  # slot index -> the supervisor's end of its pipe
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.turn = 0  # the next slot index to wake

    def attach(self, index: int, conn) -> None:
        with self.lock:
            self.children[index] = conn

    def detach(self, index: int, conn=None) -> None:
        """Forget a slot's pipe (only if it is still `conn`, when given: a restarted child's
        new pipe may have taken the slot meanwhile) and close it."""
        with self.lock:
            if conn is not None and self.children.get(index) is not conn:
                return
            conn = self.children.pop(index, None)
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self.stopping.set()

    # -- sending -------------------------------------------------------------------------------
    def _send(self, index: int, message: tuple) -> bool:
        with self.lock:
            conn = self.children.get(index)
            if conn is None:
                return False
            try:
                conn.send(message)
            except (OSError, ValueError):  # the child is gone: its pipe closes with it
                return False
            return True

    def _next_after(self, index: int | None) -> int | None:
        """The next attached slot after `index` (None: at the rotation's turn), in slot order."""
        with self.lock:
            order = sorted(self.children)
            if not order:
                return None
            start = self.turn if index is None else index + 1
            chosen = next((i for i in order if i >= start), order[0])
            self.turn = chosen + 1
            return chosen

    def _wake_one(self, queue: str | None, hops: int, after: int | None = None) -> None:
        """Wake one child (the next in turn, or the next after `after`); `hops`: how many
        children this wake-up has already visited. Round the host once at most."""
        with self.lock:
            size = len(self.children)
        while hops < size:
            index = self._next_after(after)
            if index is None:
                return
            if self._send(index, (WAKE, queue, hops)):
                return
            after, hops = index, hops + 1

    def notify(self, payload: str | None) -> None:
        """The Listener's callback: a NOTIFY of `payload` (a queue), or None after connecting."""
        if payload is None:
            with self.lock:
                indexes = sorted(self.children)
            for index in indexes:
                self._send(index, (WAKE, None, 0))
            return
        self._wake_one(payload, 0)

    # -- the children's answers --------------------------------------------------------------
    def run(self) -> None:
        while not self.stopping.is_set():
            with self.lock:
                by_conn: dict[Any, int] = {conn: i for i, conn in self.children.items()}
            if not by_conn:
                self.stopping.wait(0.2)
                continue
            try:
                ready: list[Any] = wait_for_connections(list(by_conn), timeout=0.2)
            except (OSError, ValueError):  # a pipe closed while waiting: look again
                continue
            for conn in ready:
                index = by_conn[conn]
                message: tuple[str, str | None, int]
                try:
                    message = conn.recv()
                except (EOFError, OSError, ValueError):  # that child ended; it is reaped
                    self.detach(index, conn)
                    continue
                kind, queue, hops = message
                if kind == PASS:  # busy: the next child takes it, unless all were asked
                    self._wake_one(queue, hops + 1, after=index)
                elif kind == MORE:  # a burst: one more child joins in
                    self._wake_one(queue, 1, after=index)


class RelayedWakeups(threading.Thread):
    """A supervised child's side: wake-ups from the supervisor instead of a LISTEN of its own.

    Stands in for the pool's Listener: `connected` says whether the supervisor's LISTEN
    connection is up (the idle back-off reads it), `on_notify(queue)` wakes the pool's lanes,
    `can_take(queue)` says whether a lane of that queue has an idle thread (if none, the
    wake-up is passed on to another child)."""

    def __init__(self, conn, connected, on_notify, can_take):
        super().__init__(name="relayed-wakeups", daemon=True)
        self.conn, self.connected = conn, connected
        self.on_notify, self.can_take = on_notify, can_take
        self.stopping = threading.Event()
        self.send_lock = threading.Lock()

    def stop(self) -> None:
        self.stopping.set()

    def _answer(self, message: tuple) -> None:
        with self.send_lock:
            try:
                self.conn.send(message)
            except (OSError, ValueError):  # the supervisor is gone; process.py notices
                pass

    def more(self, queue: str | None) -> None:
        """This child's claims keep coming back full: ask the supervisor to wake another."""
        self._answer((MORE, queue, 0))

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if not self.conn.poll(0.5):
                    continue
                _, queue, hops = self.conn.recv()
            except (EOFError, OSError, ValueError):
                log.warning("relayed wake-ups: the supervisor's pipe closed; polling only")
                self.connected = _NEVER  # poll at the base interval from now on
                return
            self.on_notify(queue)
            if queue is not None and not self.can_take(queue):
                self._answer((PASS, queue, hops))


class _Never:
    @staticmethod
    def is_set() -> bool:
        return False


_NEVER = _Never()
