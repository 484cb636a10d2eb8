import logging
import os
import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from django_pg_jobqueue import conf
from django_pg_jobqueue.logformat import configure_worker_logging
from django_pg_jobqueue.worker.pool import WorkerPool, exit_despite_stray_threads, parse_queues

log = logging.getLogger("django_pg_jobqueue.worker")


class Command(BaseCommand):
    help = ("Run a pool of worker threads that claim and execute jobs. SIGTERM/SIGINT: stop "
            "claiming, let running jobs finish within the grace period, release the rest; a "
            "second signal exits at once.")

    def add_arguments(self, parser):
        c = conf.get()
        parser.add_argument("--threads", type=int, default=c.WORKER_THREADS,
                            help=f"executor threads (default JOB_WORKER_THREADS={c.WORKER_THREADS})")
        parser.add_argument("--queues", default="",
                            help="queues to claim from: 'emails,reports' shares the threads, "
                                 "'emails=4,reports=1' gives each its own (default: all queues)")
        parser.add_argument("--lease-seconds", type=float, default=None,
                            help=f"lease length (default JOB_LEASE_SECONDS={c.LEASE_SECONDS})")
        parser.add_argument("--poll-interval", type=float, default=None,
                            help=f"idle poll interval in seconds (default "
                                 f"JOB_POLL_INTERVAL_SECONDS={c.POLL_INTERVAL_SECONDS})")
        parser.add_argument("--batch-size", type=int, default=None,
                            help=f"most jobs claimed per statement (default "
                                 f"JOB_CLAIM_BATCH_SIZE={c.CLAIM_BATCH_SIZE})")
        parser.add_argument("--prefetch", type=int, default=None,
                            help=f"most jobs each lane claims ahead of its idle threads while "
                                 f"there is a backlog (default JOB_PREFETCH={c.PREFETCH}; 0: off)")
        parser.add_argument("--shutdown-grace", type=float, default=None,
                            help=f"seconds running jobs get to finish on SIGTERM (default "
                                 f"JOB_SHUTDOWN_GRACE_SECONDS={c.SHUTDOWN_GRACE_SECONDS})")
        parser.add_argument("--no-reaper", action="store_true",
                            help="do not run the reaper in this process (default: run it)")
        parser.add_argument("--no-listen", action="store_true",
                            help="poll only; no LISTEN/NOTIFY (default: JOB_LISTEN_NOTIFY)")

    def handle(self, *args, **opts):
        if opts["threads"] < 1:
            raise CommandError("--threads must be at least 1")
        if opts["prefetch"] is not None and opts["prefetch"] < 0:
            raise CommandError("--prefetch must be at least 0")
        try:
            parse_queues(opts["queues"], opts["threads"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        c = conf.get()
        configure_worker_logging(c.WORKER_LOG_LEVEL, c.LOG_FORMAT)
        pool = WorkerPool(
            threads=opts["threads"], queues=opts["queues"], lease_seconds=opts["lease_seconds"],
            poll_interval=opts["poll_interval"], batch_size=opts["batch_size"],
            shutdown_grace=opts["shutdown_grace"], reaper=not opts["no_reaper"],
            prefetch=opts["prefetch"],
            listen=False if opts["no_listen"] else None,
        )
        stop = threading.Event()

        def on_signal(signum, frame):
            if stop.is_set():
                log.warning("second signal: exiting at once")
                os._exit(1)
            log.info("received %s: shutting down gracefully", signal.Signals(signum).name)
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        pool.start()
        self.stdout.write(f"worker pool {pool.process_id} running "
                          f"({len(pool.executors)} threads); Ctrl-C to stop", ending="\n")
        self.stdout.flush()
        while not stop.wait(0.5):
            pass
        pool.shutdown()
        exit_despite_stray_threads(0)  # a handler's non-daemon thread must not keep us alive
