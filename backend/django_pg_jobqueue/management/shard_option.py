"""The `--shard ALIAS` option of the commands that work one database of the queue
(audit_jobs, queue_status; run_job_workers checks more): JOB_DATABASE's by default."""
from django.core.management.base import CommandError

from django_pg_jobqueue import conf, db


def add_shard_argument(parser, help_text: str) -> None:
    parser.add_argument("--shard", default=None, metavar="ALIAS", help=help_text)


def on_shard(shard: str | None):
    """The block run on `shard` (a --shard value; None: JOB_DATABASE); CommandError for a
    name JOB_SHARDS does not hold."""
    if shard is not None and shard not in conf.get().SHARDS:
        raise CommandError(f"--shard {shard!r} is not a shard of JOB_SHARDS ("
                           + (", ".join(repr(a) for a in conf.get().SHARDS) or "none") + ")")
    return db.on_database(shard)
