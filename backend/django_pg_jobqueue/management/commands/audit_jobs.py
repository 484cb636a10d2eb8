import json

from django.core.management.base import BaseCommand, CommandError

from django_pg_jobqueue.audit import audit
from django_pg_jobqueue.management.shard_option import add_shard_argument, on_shard


class Command(BaseCommand):
    help = ("Check the jobs in the database against the state machine: events replay to each "
            "job's state, at most one success per job, no long-expired lease, attempts within "
            "max_attempts, no finished job holding a lock, no attempt charged by the reaper that "
            "never started; and it notes two attempts of a job under way at once. Read-only; "
            "exits 1 on any violation (with --strict, on any notice too).")

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
        add_shard_argument(parser, "audit the jobs of this shard of JOB_SHARDS (default: "
                                   "JOB_DATABASE's)")
        parser.add_argument("--strict", action="store_true",
                            help="exit 1 on notices too (two attempts of a job under way at "
                                 "once), not only on violations (default: off)")

    def handle(self, *args, **opts):
        with on_shard(opts["shard"]):
            report = audit(stale_after_seconds=opts["stale_after"], job_ids=opts["job_ids"])
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(report.format(limit=opts["limit"]))
        if not report.ok or (opts["strict"] and report.notices):
            notices = len(report.notices)
            raise CommandError(f"audit failed: {len(report.violations) - notices} violation(s)"
                               + (f", {notices} notice(s)" if notices else ""))
