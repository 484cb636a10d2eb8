import sys

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from django_pg_jobqueue import conf, db
from django_pg_jobqueue.arguments import check_hostname
from django_pg_jobqueue.exceptions import InvalidJobArgument
from django_pg_jobqueue.logformat import configure_worker_logging
from django_pg_jobqueue.management.shard_option import add_shard_argument, on_shard
from django_pg_jobqueue.services.shards import check_ids
from django_pg_jobqueue.worker.pool import parse_queues
from django_pg_jobqueue.worker.process import run_worker_process
from django_pg_jobqueue.worker.supervisor import Supervisor


class Command(BaseCommand):
    help = ("Run a pool of worker threads that claim and execute jobs (with --processes, a "
            "supervisor and that many such processes). SIGTERM/SIGINT: stop claiming, let "
            "running jobs finish within the grace period, release the rest; a second signal "
            "exits at once.")

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
        add_shard_argument(parser, "work this shard of JOB_SHARDS: its queues, in its "
                                   "database, with its own maintenance leader and listener "
                                   "(default: JOB_DATABASE's queues)")
        parser.add_argument("--hostname", default=None,
                            help="the host name this worker reports (the workers page) and "
                                 "whose queue overrides it applies (docs/how-to/queues.md); "
                                 "two workers on one machine may act as two hosts (default: "
                                 "the machine's host name)")
        parser.add_argument("--processes", type=int, default=None,
                            help="run a supervisor and this many worker processes, each with "
                                 "--threads threads, restarted when one exits or is killed; "
                                 "adds hard timeouts (default: none, one unsupervised process)")
        parser.add_argument("--max-jobs-per-process", type=int, default=None,
                            help="recycle a worker process after it ran this many jobs "
                                 "(implies the supervisor; default: never)")
        parser.add_argument("--max-memory-per-process", type=int, default=None, metavar="MIB",
                            help="recycle a worker process whose resident memory exceeds this "
                                 "many MiB (implies the supervisor; default: never)")

    def handle(self, *args, **opts):
        if opts["threads"] < 1:
            raise CommandError("--threads must be at least 1")
        if opts["prefetch"] is not None and opts["prefetch"] < 0:
            raise CommandError("--prefetch must be at least 0")
        for flag in ("processes", "max_jobs_per_process", "max_memory_per_process"):
            if opts[flag] is not None and opts[flag] < 1:
                raise CommandError(f"--{flag.replace('_', '-')} must be at least 1")
        try:
            parse_queues(opts["queues"], opts["threads"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if opts["hostname"] is not None:
            try:
                check_hostname(opts["hostname"], "--hostname")
            except InvalidJobArgument as exc:
                raise CommandError(f"--hostname {exc.detail}") from exc
        c = conf.get()
        shard = opts["shard"]
        if shard is not None:
            on_shard(shard)  # refuses a name JOB_SHARDS does not hold
            try:
                check_ids(shard)
            except ImproperlyConfigured as exc:
                raise CommandError(str(exc)) from exc
            db.serve_shard(shard)  # this process (a supervisor too): its listener, its beats
        # What the start-up opened on this (the main) thread: the system checks' (the cache
        # table's, on its database) and the shard's ids check. Nothing on this thread uses
        # them again, and a connection kept would sit idle for the process's life, outside
        # its budget (JOB_WORKER_POOL_SIZE and the listener): the pool opens its own.
        connections.close_all()
        configure_worker_logging(c.WORKER_LOG_LEVEL, c.LOG_FORMAT)
        pool_options = dict(
            threads=opts["threads"], queues=opts["queues"], lease_seconds=opts["lease_seconds"],
            poll_interval=opts["poll_interval"], batch_size=opts["batch_size"],
            shutdown_grace=opts["shutdown_grace"], reaper=not opts["no_reaper"],
            prefetch=opts["prefetch"],
            listen=False if opts["no_listen"] else None,
        )
        if shard is not None:
            pool_options["shard"] = shard
        if opts["hostname"] is not None:
            pool_options["hostname"] = opts["hostname"]
        max_jobs, max_memory = opts["max_jobs_per_process"], opts["max_memory_per_process"]
        if opts["processes"] is None and max_jobs is None and max_memory is None:
            run_worker_process(pool_options, stdout=self.stdout)  # today's single process
            return
        supervisor = Supervisor(
            processes=opts["processes"] or 1, pool_options=pool_options,
            shutdown_grace=(c.SHUTDOWN_GRACE_SECONDS if opts["shutdown_grace"] is None
                            else opts["shutdown_grace"]),
            max_jobs=max_jobs, max_memory_bytes=max_memory << 20 if max_memory else None,
            log_settings=(c.WORKER_LOG_LEVEL, c.LOG_FORMAT), stdout=self.stdout)
        code = supervisor.run()
        if code:
            sys.exit(code)
