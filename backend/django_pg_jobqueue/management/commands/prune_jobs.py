from django.core.management.base import BaseCommand, CommandError

from django_pg_jobqueue import conf
from django_pg_jobqueue.services.pruning import parse_statuses, prune, prune_by_retention

STATUSES = "succeeded,failed,cancelled"


class Command(BaseCommand):
    help = ("Delete finished jobs and their events, in batches of short transactions. Without "
            "--older-than, each status keeps its own retention (JOB_RETENTION_SUCCEEDED, "
            "_FAILED, _CANCELLED). Queued and running jobs are never deleted.")

    def add_arguments(self, parser):
        c = conf.get()
        parser.add_argument("--older-than", default=None, metavar="DURATION",
                            help="delete jobs that finished longer ago than this: 90s, 15m, 12h, "
                                 "7d, 2w (default: the per-status JOB_RETENTION_* settings)")
        parser.add_argument("--status", default=STATUSES, metavar="LIST",
                            help=f"comma-separated final statuses to prune (default: {STATUSES})")
        parser.add_argument("--batch-size", type=int, default=c.PRUNE_BATCH_SIZE,
                            help=f"jobs deleted per transaction (default "
                                 f"JOB_PRUNE_BATCH_SIZE={c.PRUNE_BATCH_SIZE})")
        parser.add_argument("--dry-run", action="store_true",
                            help="count what would be deleted; delete nothing")

    def handle(self, *args, **opts):
        if opts["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            statuses = parse_statuses(s for s in opts["status"].split(",") if s.strip())
            if opts["older_than"] is not None:
                counts = prune(opts["older_than"], statuses, batch_size=opts["batch_size"],
                               dry_run=opts["dry_run"])
            else:
                c = conf.get()
                for s in statuses:
                    if c.retention(s) is None:
                        self.stdout.write(f"{s}: kept forever (JOB_RETENTION_{s.upper()} is off)")
                counts = prune_by_retention(statuses, batch_size=opts["batch_size"],
                                            dry_run=opts["dry_run"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        verb = "would delete" if opts["dry_run"] else "deleted"
        jobs = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "events") or "no"
        self.stdout.write(f"{verb}: {jobs} job(s), {counts.get('events', 0)} event(s)")
