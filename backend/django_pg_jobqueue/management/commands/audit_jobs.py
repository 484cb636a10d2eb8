import json

from django.core.management.base import BaseCommand, CommandError

from django_pg_jobqueue.audit import audit


class Command(BaseCommand):
    help = ("Check the jobs in the database against the state machine: events replay to each "
            "job's state, at most one success per job, no long-expired lease, attempts within "
            "max_attempts, no finished job holding a lock. Read-only; exits 1 on any violation.")

    def add_arguments(self, parser):
        parser.add_argument("--stale-after", type=float, default=60.0,
                            help="seconds past its lease deadline after which a running job "
                                 "counts as abandoned with no reaper running (default 60)")
        parser.add_argument("--job", type=int, action="append", dest="job_ids",
                            help="audit only this job id (repeatable; default: every job)")
        parser.add_argument("--limit", type=int, default=20,
                            help="violations listed per check (default 20)")
        parser.add_argument("--json", action="store_true",
                            help="print the report as JSON (default: text)")

    def handle(self, *args, **opts):
        report = audit(stale_after_seconds=opts["stale_after"], job_ids=opts["job_ids"])
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(report.format(limit=opts["limit"]))
        if not report.ok:
            raise CommandError(f"audit failed: {len(report.violations)} violation(s)")
