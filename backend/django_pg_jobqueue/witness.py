"""The start witness: a small process beside an unsupervised worker process that knows which
prefetched job each of its threads started, so that the start need not be written, and waited
for, before the handler runs.

Why it exists. A prefetched job is claimed under the buffer's id (`<process>-prefetch`); the
reaper gives such a job back uncharged when its lease expires (sql.REAP): it never started.
A job a thread did start must instead be charged if its process dies (its handler may be what
killed it), so before the handler runs, something that outlives the process must know. A
database write per start did that, at the price of a round trip every thread waited for
between jobs: it took the drain of no-op jobs from about 32,000 to 13,000 jobs/s, most of the
difference in the threads' waits (docs/explanation/performance.md). The witness is the other
way to know: each thread writes the id of the job it is about to run into a slot of a memory
map shared with the witness (a store of eight bytes), and the witness, whose only other work
is to wait for the end of the pipe to its parent, writes the adoption when the parent dies
(sql.ADOPT_STARTED_BY_DEAD_PROCESS): the jobs then read as started, and the reaper charges
them. The database still hears of each start from the pool's starter, in batches nobody waits
for (the thread's id as the running job's owner), and the witness's write is a no-op for
every job the starter already recorded or whose outcome was written.

A supervised child needs no witness: its supervisor reads the same slots (worker/hostbeat.py's
ChildReport) when it settles the child's jobs. Without either (a pool run inside another
process: tests, `drain`) or while the witness is not alive, a thread waits for its start to be
written, as before. When the whole host dies, no witness survives it: a started prefetched job
then comes back uncharged, once (docs/explanation/design.md).

The witness imports neither Django nor the rest of the package (it runs `main()` in a fresh
interpreter): only psycopg and the statement, and it connects only when a slot is set."""
from __future__ import annotations

import json
import mmap
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

from . import sql

SLOT = struct.Struct("q")  # a job id per executor thread, 0: none
READY = b"ready\n"


class StartWitness:
    """The parent's side: the shared slots and the witness process."""

    # How often alive() asks the kernel whether the witness exited. It is asked before every
    # prefetched job's start, and Popen.poll() (a lock and a waitpid call) was a tenth of a
    # worker thread's own CPU a no-op job; in between, alive() reads what the last poll (or a
    # wait) found. A witness that dies unexpectedly is then trusted with the starts of at
    # most this long after its death: should the process die too in that time, before the
    # starter has written those starts, they come back uncharged once, as when the whole host
    # dies (docs/explanation/design.md, the start witness).
    POLL_SECONDS = 0.05

    def __init__(self, proc: subprocess.Popen, slots: mmap.mmap, size: int):
        self.proc, self.slots, self.size = proc, slots, size
        self._next_poll = 0.0

    @classmethod
    def launch(cls, *, prefetch_id: str, worker_ids: list[str], connect: dict,
               timeout: float = 30.0) -> StartWitness:
        """Start the witness of the threads `worker_ids` (slot i: worker_ids[i]) of the process
        whose prefetch buffer is `prefetch_id`, connecting with psycopg.connect(**connect) if it
        ever writes. Raises OSError (or RuntimeError) if it does not come up within `timeout`."""
        size = SLOT.size * max(1, len(worker_ids))
        fd, path = tempfile.mkstemp(prefix="jobqueue-witness-")
        try:
            os.ftruncate(fd, size)
            slots = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        try:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            proc = subprocess.Popen(
                [sys.executable, "-c", "from django_pg_jobqueue.witness import main; main()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True)
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({"path": path, "prefetch_id": prefetch_id,
                                         "worker_ids": worker_ids,
                                         "connect": connect}).encode() + b"\n")
            proc.stdin.flush()
            ready = _read_line(proc, timeout)
            if ready != READY:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"the start witness did not come up (said {ready!r})")
        finally:
            os.unlink(path)  # mapped on both sides (or failed): nothing is left on disk
        return cls(proc, slots, len(worker_ids))

    def set_running(self, index: int, job_id: int) -> None:
        """Executor thread `index` runs `job_id` from now on (0: none)."""
        if index < self.size:
            try:
                SLOT.pack_into(self.slots, index * SLOT.size, job_id)
            except (TypeError, ValueError):  # closed (the pool stopped, or its witness exited)
                pass

    def alive(self) -> bool:
        if self.proc.returncode is not None:
            return False
        now = time.monotonic()
        if now < self._next_poll:
            return True
        self._next_poll = now + self.POLL_SECONDS
        return self.proc.poll() is None

    def close(self, timeout: float = 10.0) -> None:
        """The parent stops: the witness writes what the slots still hold (nothing, after a
        graceful stop) and exits."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.slots.close()


def _read_line(proc: subprocess.Popen, timeout: float) -> bytes:
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the start witness did not come up within {timeout:g}s")
    return proc.stdout.readline()


def started_jobs(slots: bytes | mmap.mmap, worker_ids: list[str]) -> list[tuple[int, str]]:
    """(job id, worker id) of each slot that names a job."""
    out = []
    for index, worker_id in enumerate(worker_ids):
        (job_id,) = SLOT.unpack_from(slots, index * SLOT.size)
        if job_id:
            out.append((job_id, worker_id))
    return out


def main() -> None:
    """The witness process: map the slots, say ready, wait for the parent's end, write."""
    # It must outlive its parent: a signal to the process group (Ctrl-C, a service manager's
    # SIGTERM) is the parent's to answer; the witness ends when the parent has.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    config = json.loads(stdin.readline())
    worker_ids = config["worker_ids"]
    with open(config["path"], "r+b") as f:
        slots = mmap.mmap(f.fileno(), SLOT.size * max(1, len(worker_ids)))
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    while stdin.read(65536):  # nothing is ever sent: the end of the pipe is the parent's end
        pass
    started = started_jobs(slots, worker_ids)
    if not started:
        return
    try:
        adopted = write(started, config["prefetch_id"], config["connect"])
    except Exception as exc:  # noqa: BLE001 - the reaper's rule decides then (uncharged)
        print(f"start witness of {config['prefetch_id']}: could not record that job(s) "
              f"{', '.join(str(i) for i, _ in started)} started before the process ended "
              f"({exc}); the reaper gives them back uncharged", file=sys.stderr, flush=True)
        return
    if adopted:
        print(f"start witness of {config['prefetch_id']}: the process ended while running "
              f"prefetched job(s) {', '.join(str(i) for i in sorted(adopted))}; recorded as "
              f"started, so their attempts are charged", file=sys.stderr, flush=True)


def write(started: list[tuple[int, str]], prefetch_id: str, connect: dict) -> set[int]:
    """Record each (job id, worker id) as started by that thread, if the job still runs under
    the dead process's prefetch id; the ids recorded."""
    import psycopg

    with psycopg.connect(**connect, autocommit=True) as conn:
        rows = conn.execute(sql.ADOPT_STARTED_BY_DEAD_PROCESS, {
            "ids": [job_id for job_id, _ in started],
            "worker_ids": [worker_id for _, worker_id in started],
            "prefetch_id": prefetch_id}).fetchall()
    return {row[0] for row in rows}
