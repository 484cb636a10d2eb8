"""A handler that forks (`os.fork()`, a C library that does, `multiprocessing`'s fork start).

The child is a copy of the worker process with one thread, the handler's: it inherits every
socket the worker holds to PostgreSQL (the pool's connections, the listener's LISTEN
connection, the handler's own) and, if it returns from the handler or raises out of it, it
returns into the executor's code with no completer, renewer or lane behind it. Before,
such a child waited forever to hand its result to a completer that did not exist, holding
copies of the worker's sockets: a killed worker's sessions (its LISTEN, an open transaction's
locks) then stayed open on the server for as long as that child lived.

Two guards, installed once per worker process (`install()`, from WorkerPool.start):
- at fork, every PostgreSQL socket the process holds is pointed at /dev/null in the child
  (`dup2`): the child holds none of them, and whatever it does with the inherited connection
  objects (use them: an error; close them: the goodbye goes nowhere) never reaches the
  parent's sessions. A forked child that wants the database opens its own connection;
- a child that comes back from the handler into the worker (`run_here`) is ended there at
  once with `os._exit` (0 if the handler returned, 1 if it raised, a SystemExit's own code),
  never running a line of the worker's code, with a line on stderr saying so.

Subprocesses (`subprocess.Popen`, `multiprocessing` with spawn) are not forks of this kind:
they start a fresh program, inherit no connection (psycopg's sockets are close-on-exec) and
never return into the worker. They are the handler's to wait for or end; one it leaves
running outlives its job, as it would outlive any Python function that started it."""
import gc
import os
import socket
import sys

_installed = False
_inherited: list[int] = []  # the sockets the forking process held, taken at fork time
_forked = False  # set in a child at fork: a flag, cheaper on every job than os.getpid()


def install() -> None:
    """Register the fork guards in this process (once; they cannot be removed)."""
    global _installed
    if _installed:
        return
    os.register_at_fork(before=_note_sockets, after_in_parent=_inherited.clear,
                        after_in_child=_drop_inherited_sockets)
    _installed = True


def _connection_sockets() -> set[int]:
    """The file descriptors of this process's open PostgreSQL connections (every thread's, the
    pool's idle ones, the listener's), found among live objects."""
    import psycopg

    found = set()
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance() asks a weakref.proxy for its __class__, and a
        # proxy whose object is gone raises ReferenceError (seen: the scan then found nothing).
        if not issubclass(type(obj), psycopg.Connection):
            continue
        try:  # a connection whose construction failed half-way may lack what `closed` reads
            if not obj.closed:
                found.add(obj.pgconn.socket)
        except Exception:  # noqa: BLE001, S112 - one odd object must not blind the whole scan
            continue
    return found


def _note_sockets() -> None:
    """In the forking process, just before the fork: its connections' sockets."""
    _inherited.clear()
    _inherited.extend(_connection_sockets())


def _peer(fd: int):
    """The address a socket file descriptor is connected to, or None (not a connected socket).
    Looked at through a duplicate, so that closing the socket object closes only that."""
    try:
        dup = os.dup(fd)
    except OSError:
        return None
    try:
        sock = socket.socket(fileno=dup)
    except OSError:
        os.close(dup)
        return None
    try:
        return sock.getpeername()
    except OSError:
        return None
    finally:
        sock.close()


def _sockets_to_drop() -> set[int]:
    """In the child: the sockets noted before the fork, those of the connections found again
    now (another thread may have finished opening one between the note and the fork), and any
    other socket connected to the same servers (one still being opened at the fork, not yet a
    connection object). Linux lists a process's descriptors in /proc/self/fd; elsewhere the
    first two sets only."""
    fds = set(_inherited) | _connection_sockets()
    peers = {peer for peer in map(_peer, fds) if peer}
    if peers:
        try:
            names = os.listdir("/proc/self/fd")
        except OSError:
            names = []
        for name in names:
            fd = int(name)
            if fd not in fds and _peer(fd) in peers:
                fds.add(fd)
    return fds


def _drop_inherited_sockets() -> None:
    """In the child: each inherited PostgreSQL socket becomes /dev/null under the same number
    (so no later open reuses it for something a stray write could corrupt)."""
    global _forked
    _forked = True
    try:
        fds = _sockets_to_drop()
    except Exception:  # noqa: BLE001 - a guard of the child must not fail the fork
        fds = set(_inherited)
    _inherited.clear()
    if not fds:
        return
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in fds:
        try:
            os.dup2(devnull, fd)
        except OSError:
            pass
    os.close(devnull)


def run_here(call, job_id: int):
    """`call()` (the handler, through its middleware), made sure to return in this process:
    a forked child that comes back out of it is ended there."""
    try:
        result = call()
    except BaseException as exc:
        if _forked:
            _end_child(job_id, exc)
        raise
    if _forked:
        _end_child(job_id, None)
    return result


def _end_child(job_id: int, exc: BaseException | None) -> None:
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        how = f"exited with SystemExit({exc.code!r})"
    else:
        code = 0 if exc is None else 1
        how = "returned" if exc is None else f"raised {type(exc).__name__}"
    try:
        os.write(2, (f"process {os.getpid()}, forked by the handler of job {job_id}, "
                     f"{how} and so returned into the worker instead of calling os._exit(): "
                     f"ended with status {code}\n").encode())
    except OSError:
        pass
    for stream in (sys.stdout, sys.stderr):  # the child's own output, written by now
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
