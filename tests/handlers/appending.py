"""A ledger file that handlers in several worker processes append to at once."""
import os
import threading


class AppendedFile:
    """The file an environment variable names (nothing is written while it is unset), opened
    once per process with O_APPEND: each line is one write, never interleaved with another
    process's."""

    def __init__(self, variable: str):
        self.variable = variable
        self._fd: int | None = None
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        path = os.environ.get(self.variable)
        if not path:
            return
        with self._lock:
            if self._fd is None:
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, line.encode())
