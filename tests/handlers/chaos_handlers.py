"""The `chaos` handler and the tools the fault tests share: a ledger of executions, the worker
subprocess environment, and a reader for worker output.

Worker subprocesses import this module through JOB_EXTRA_HANDLER_MODULES; the handler appends
one line to the ledger file (CHAOS_LEDGER) when an execution starts and one when it ends. Each
line is a single O_APPEND write of less than PIPE_BUF bytes, so lines from many threads and
processes never interleave, and a line written before a SIGKILL survives it (it is in the
kernel, not in a Python buffer). The ledger, not the database, is the ground truth of what ran.
"""
import os
import select
import signal
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from django_pg_jobqueue.exceptions import PermanentError
from django_pg_jobqueue.registry import handler
from tests.handlers.appending import AppendedFile

_LEDGER = AppendedFile("CHAOS_LEDGER")
_HOARD: list[bytes] = []  # what `hog` jobs leak


def _ledger(kind: str, ctx, extra: str = "") -> None:
    _LEDGER.write(f"{kind}\t{ctx.job_id}\t{ctx.attempt}\t{ctx.lease_token}\t{ctx.worker_id}\t"
                  f"{os.getpid()}\t{time.time():.6f}\t{extra}\n")


@handler("chaos", max_attempts=20, timeout_seconds=300,
         description="Fault-test handler: payload.mode ok|flaky|fail|long|hog|die; writes the ledger.")
def chaos(ctx, payload):
    _ledger("start", ctx)
    mode = payload.get("mode", "ok")
    try:
        if mode == "ok":
            if ctx.wait(float(payload.get("seconds", 0.02))):
                ctx.raise_if_should_stop()
        elif mode == "flaky":
            ctx.wait(float(payload.get("seconds", 0.01)))
            if ctx.attempt <= int(payload.get("fail_times", 1)):
                raise RuntimeError(f"chaos flaky: attempt {ctx.attempt}")
        elif mode == "fail":
            if payload.get("permanent"):
                raise PermanentError("chaos: permanent failure")
            raise RuntimeError("chaos: failure")
        elif mode == "die":  # the process dies in the handler: os._exit, or SIGKILL (the OOM
            if payload.get("how") == "sigkill":  # killer's way)
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(1)
        elif mode == "hog":  # keeps payload.mb MiB for the life of the process (a leak)
            _HOARD.append(b"x" * (int(payload.get("mb", 10)) << 20))
            ctx.wait(float(payload.get("seconds", 0.2)))
        elif mode == "long":
            # Runs past several lease renewals, reporting progress (fenced writes).
            seconds, step = float(payload.get("seconds", 5)), 0.25
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if ctx.wait(step):
                    ctx.raise_if_should_stop()
                left = max(0.0, deadline - time.monotonic())
                ctx.progress(int(100 * (1 - left / seconds)), "working")
        else:
            raise PermanentError(f"unknown chaos mode {mode!r}")
    except BaseException as exc:
        _ledger("end", ctx, f"raise:{type(exc).__name__}")
        raise
    _ledger("end", ctx, "return")
    return {"mode": mode, "attempt": ctx.attempt, "pid": os.getpid()}


@handler("spin", max_attempts=2, timeout_seconds=2,
         description="Fault-test handler: loops forever, never looking at its context.")
def spin(ctx, payload):
    _ledger("start", ctx)
    while True:
        pass


@handler("die", max_attempts=3, timeout_seconds=300,
         description="Fault-test handler: ends its whole process after payload.seconds.")
def die(ctx, payload):
    _ledger("start", ctx)
    time.sleep(float(payload.get("seconds", 0.5)))  # the job's work: deaf to a stop, by design
    os._exit(int(payload.get("code", 1)))


@handler("grow", max_attempts=3, timeout_seconds=300,
         description="Fault-test handler: holds payload.mb MiB while it runs payload.seconds.")
def grow(ctx, payload):
    _ledger("start", ctx)
    held = b"x" * (int(payload.get("mb", 100)) << 20)
    ctx.wait(float(payload.get("seconds", 30)))
    _ledger("end", ctx, "return")
    return len(held)


@handler("fork_and_return", max_attempts=1, timeout_seconds=60,
         description="Fault-test handler: forks; the child returns into the worker instead of "
                     "calling os._exit, and writes its pid to payload.pid_file first.")
def fork_and_return(ctx, payload):
    sockets = _sockets()
    pid = os.fork()
    if pid == 0:
        with open(payload["pid_file"], "w") as f:
            f.write(f"{os.getpid()} {_sockets()}")
        return {"child": True}  # the mistake: a forked child must end with os._exit
    # The child's end, signalled through a pidfd (Linux), within the handler's own wait.
    pidfd = os.pidfd_open(pid)
    try:
        ended, _, _ = select.select([pidfd], [], [], float(payload.get("wait_seconds", 20)))
    finally:
        os.close(pidfd)
    if not ended:
        return {"child": False, "child_exit": None}  # still running: left for the test to end
    _, status = os.waitpid(pid, 0)
    return {"child": False, "child_exit": os.waitstatus_to_exitcode(status), "sockets": sockets}


def _sockets() -> int:
    """How many of this process's file descriptors are sockets (Linux)."""
    import stat

    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += stat.S_ISSOCK(os.fstat(int(fd)).st_mode)
        except OSError:
            pass
    return count


# --- for the tests ------------------------------------------------------------------------
LEASE_SECONDS = 2.0
REAPER_INTERVAL_SECONDS = 0.5


def worker_env(ledger: str | os.PathLike, **overrides) -> dict:
    """Fast leases, reaper and retries for worker subprocesses, and the chaos handler."""
    env = {
        "JOB_LEASE_SECONDS": str(LEASE_SECONDS),
        "JOB_REAPER_INTERVAL_SECONDS": str(REAPER_INTERVAL_SECONDS),
        "JOB_RETRY_BASE_SECONDS": "0.05", "JOB_RETRY_MAX_SECONDS": "0.5", "JOB_RETRY_JITTER": "0.1",
        "JOB_POLL_INTERVAL_SECONDS": "0.2", "JOB_POLL_JITTER_SECONDS": "0.1",
        "JOB_SHUTDOWN_GRACE_SECONDS": "3", "JOB_WORKER_LOG_LEVEL": "WARNING",
        "JOB_EXTRA_HANDLER_MODULES": "tests.handlers.chaos_handlers",
        "CHAOS_LEDGER": str(ledger),
    }
    env.update({k: str(v) for k, v in overrides.items()})
    return env


class Output(threading.Thread):
    """Reads a worker subprocess's output (so the pipe never fills and blocks it), keeping
    every line with the time it arrived."""

    def __init__(self, proc: subprocess.Popen):
        super().__init__(daemon=True)
        self.proc, self.lines = proc, []
        self._arrived = threading.Condition()
        self.start()

    def run(self) -> None:
        for line in self.proc.stdout:
            with self._arrived:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._arrived.notify_all()
        with self._arrived:  # the process ended: no line will come
            self._arrived.notify_all()

    def wait_for_line(self, needle: str, count: int = 1, timeout: float = 30.0,
                      after: str | None = None) -> list[str]:
        """Block until `count` lines contain `needle` (woken by each line as it arrives, no
        polling): those lines. `after`: count only the lines that came after the first line
        containing it. Fail the test after `timeout` seconds or when the output ends first."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(found := self._after(after, needle)) < count:
                left = deadline - time.monotonic()
                if left <= 0 or not self.is_alive():
                    raise AssertionError(f"{count} line(s) with {needle!r} "
                                         f"{f'after {after!r} ' if after else ''}not seen within "
                                         f"{timeout}s:\n" + self.text()[-3000:])
                self._arrived.wait(left)
            return found

    def _after(self, first: str | None, needle: str) -> list[str]:
        lines = [line for _, line in self.lines]
        if first is not None:
            start = next((i for i, line in enumerate(lines) if first in line), len(lines))
            lines = lines[start + 1:]
        return [line for line in lines if needle in line]

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def matching(self, needle: str, since: float = 0.0, until: float = float("inf")) -> list[str]:
        return [line for t, line in self.lines if needle in line and since <= t <= until]


@dataclass
class Execution:
    job_id: int
    attempt: int
    token: str
    worker_id: str
    pid: int
    started: float
    ended: float | None = None
    outcome: str | None = None  # "return", "raise:<Exception>", None: never ended (killed)


@dataclass
class Ledger:
    executions: dict[str, Execution] = field(default_factory=dict)  # by lease token
    by_job: dict[int, list[Execution]] = field(default_factory=lambda: defaultdict(list))
    duplicate_starts: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, path) -> "Ledger":
        ledger = cls()
        if not os.path.exists(path):
            return ledger
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 8:
                    continue  # a line cut short cannot happen with O_APPEND; be safe anyway
                kind, job_id, attempt, token, worker_id, pid, at, extra = parts[:8]
                if kind == "start":
                    if token in ledger.executions:
                        ledger.duplicate_starts.append(token)
                        continue
                    ex = Execution(int(job_id), int(attempt), token, worker_id, int(pid), float(at))
                    ledger.executions[token] = ex
                    ledger.by_job[ex.job_id].append(ex)
                elif kind == "end" and token in ledger.executions:
                    ledger.executions[token].ended = float(at)
                    ledger.executions[token].outcome = extra
        return ledger
