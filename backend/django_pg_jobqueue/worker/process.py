"""One `run_job_workers` process: its pool, run until a signal, a recycle or a hard timeout.

The same loop runs an unsupervised process (`run_job_workers` without --processes) and each
child of the supervisor (worker/supervisor.py). Every half second it checks:
- a recycle (supervised only): the pool ran its --max-jobs-per-process and holds nothing, or
  the process's resident memory is over --max-memory-per-process: a graceful stop (running
  jobs finish within the grace period, the rest are released), exit EXIT_RECYCLED. For
  memory, a handler still running when the grace ends is charged its attempt instead of
  released (failed with an error naming the limit: retried by its policy, failed for good
  once out of attempts), as a hard timeout's is: released uncharged, the job that grows past
  the limit would be claimed by the next process and grow again, forever. Jobs that only
  waited in the process (prefetched) are released uncharged;
- a hard timeout (supervised only): a handler still running JOB_TIMEOUT_GRACE_SECONDS past its
  job's timeout. Its attempt is failed as timed out (if the renewer has not yet), the other
  jobs the process holds are released uncharged (or completed, if they returned), and the
  process exits EXIT_HARD_TIMEOUT for the supervisor to replace: a Python thread cannot be
  stopped from outside, a process can;
- the supervisor (supervised only): the process beats on a shared clock the supervisor reads
  (a child silent for FROZEN_SECONDS is killed: frozen in C, or stopped), and stops gracefully
  if its supervisor is gone.
Unsupervised, a stuck handler is logged, counted and noted on its job (worker/stuck.py), and
its thread is left to run: today's behaviour."""
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections

from .. import db
from .base import CONNECTION_ERRORS
from .exits import EXIT_HARD_TIMEOUT, EXIT_RECYCLED, exit_now
from .pool import WorkerPool, exit_despite_stray_threads
from .stuck import rss_bytes

log = logging.getLogger("django_pg_jobqueue.worker")

CHECK_SECONDS = 0.5


@dataclass
class Supervised:
    """What a supervised child shares with its supervisor: a clock it beats (a shared double,
    time.monotonic(), which is one clock for every process on the host) and its pid."""
    beat: Any  # multiprocessing.Value("d")
    supervisor_pid: int
    max_jobs: int | None = None
    max_memory_bytes: int | None = None
    # This child's end of its wake-up pipe and the supervisor's "LISTEN is up" event
    # (worker/relay.py); None: the supervisor does not listen (JOB_LISTEN_NOTIFY off).
    relay: tuple | None = None
    # Where this child writes its heartbeat's figures for the supervisor to beat for it
    # (worker/hostbeat.py's ChildReport).
    report: Any = None

    def alive(self) -> bool:
        return os.getppid() == self.supervisor_pid


def run_worker_process(pool_options: dict, *, supervised: Supervised | None = None,
                       stdout=None) -> int:
    """Run one pool until SIGTERM/SIGINT (graceful; a second one exits at once, unless
    supervised), a recycle or a hard timeout; return the process's exit code.

    A supervised child treats every SIGTERM as the one graceful stop: it gets one from its
    supervisor and, when a service manager signals the whole process group (systemd's default
    KillMode=control-group, `kill -TERM -<pgid>`), another from there, in either order. The
    escalation is the supervisor's: a second signal to it, or the grace plus its margin, kills
    the children with SIGKILL."""
    stop = threading.Event()

    def on_signal(signum, frame):
        # Set before anything else: a second signal can run this handler again in the middle
        # of the first's log line (Python runs handlers between bytecodes), and must find the
        # stop already under way, not start it a second time.
        second = stop.is_set()
        stop.set()
        if second:
            if supervised is not None:
                log.info("received %s again: already stopping gracefully",
                         signal.Signals(signum).name)
                return
            log.warning("second signal: exiting at once")
            os._exit(1)
        log.info("received %s: shutting down gracefully", signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    if supervised is None:
        signal.signal(signal.SIGINT, on_signal)
    else:  # Ctrl-C reaches the whole process group: the supervisor alone answers it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    pool_options = dict(pool_options)
    db.serve_shard(pool_options.pop("shard", None))  # run_job_workers --shard
    pool = WorkerPool(**pool_options,
                      max_jobs=supervised.max_jobs if supervised else None,
                      supervisor_pid=supervised.supervisor_pid if supervised else None,
                      relay=supervised.relay if supervised else None,
                      report=supervised.report if supervised else None)
    if supervised is None:
        pool.start_witness()  # its supervisor knows a supervised child's starts (witness.py)
    pool.start()
    if stdout is not None:
        stdout.write(f"worker pool {pool.process_id} running ({len(pool.executors)} threads); "
                     f"Ctrl-C to stop\n")
        stdout.flush()
    code, charge = 0, None
    while not stop.wait(CHECK_SECONDS):
        if supervised is None:
            continue
        supervised.beat.value = time.monotonic()
        if not supervised.alive():
            log.error("worker pool %s: its supervisor is gone; shutting down", pool.process_id)
            break
        if pool.spent():
            log.info("worker pool %s ran its %d jobs (--max-jobs-per-process): recycling",
                     pool.process_id, pool.max_jobs)
            code = EXIT_RECYCLED
            break
        limit = supervised.max_memory_bytes
        rss = rss_bytes() if limit else None
        if limit and rss is not None and rss > limit:
            log.warning("worker pool %s uses %d MiB, over --max-memory-per-process %d MiB: "
                        "recycling", pool.process_id, rss >> 20, limit >> 20)
            code = EXIT_RECYCLED
            charge = (f"the process passed --max-memory-per-process ({limit >> 20} MiB) while "
                      f"running this job ({rss >> 20} MiB when it was found over)")
            break
        overdue = pool.stuck.stuck()
        if overdue:
            _hard_timeout(pool, overdue)  # does not return
    pool.shutdown(charge=charge)
    exit_despite_stray_threads(code)
    return code


def _hard_timeout(pool: WorkerPool, overdue) -> None:
    for executor, held, past in overdue:
        log.error("hard timeout: job=%s type=%s attempt=%s has run %.1fs past its %ss timeout "
                  "(grace %ss) in thread %s; ending this process for the supervisor to replace",
                  held.job.id, held.job.type, held.job.attempt, past, held.job.timeout_seconds,
                  pool.stuck.grace_seconds, executor.worker_id)
    try:
        close_old_connections()
        with db.worker_connection():
            pool.stuck.run_once()  # noted on each job's timeline
            for _, held, _ in overdue:
                # Not yet failed by the renewer (a pass away): fail it as timed out now.
                if pool.held.discard(held.job.id, held.job.lease_token):
                    pool.renewer._fail_timed_out(held)
                held.ctx.request_stop("timeout")
    except CONNECTION_ERRORS as exc:
        log.error("hard timeout: could not record it (%s); the reaper requeues the job at "
                  "lease expiry", exc)
    pool.shutdown(grace=0)  # the others: released uncharged, or completed if they returned
    logging.shutdown()
    exit_now(EXIT_HARD_TIMEOUT)
