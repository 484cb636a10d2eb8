"""How a worker process says why it exited: the exit statuses worker/process.py ends with and
worker/supervisor.py reads (both mean: start another at once), and `exit_now`, the exit that
waits for no thread. Imports nothing of the package's (a spawned child imports the
supervisor, and so this, before Django is set up)."""
import os
import sys

EXIT_RECYCLED = 3      # a planned recycle (--max-jobs-per-process, --max-memory-per-process)
EXIT_HARD_TIMEOUT = 4  # ended for a handler running past its timeout plus grace


def exit_now(code: int) -> None:
    """End the process with `code` at once (os._exit: no exit handlers run and no thread is
    waited for; the caller runs what must run first), its output flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a pipe nobody reads
            pass
    os._exit(code)
