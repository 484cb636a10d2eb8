from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from django_pg_jobqueue import selectors, sql
from django_pg_jobqueue.db import queue_connection
from django_pg_jobqueue.management.shard_option import add_shard_argument, on_shard
from django_pg_jobqueue.metrics import OUTCOMES, snapshot
from django_pg_jobqueue.registry import registry
from django_pg_jobqueue.states import Status


class Command(BaseCommand):
    help = ("Print a summary of the queue for people without Prometheus: jobs by status and "
            "queue, depth, oldest runnable age, throughput over 1/5/15 minutes, live workers "
            "and what they run, paused queues, concurrency and rate limits, fair shares (with "
            "weights) and priority aging. Figures come from the database, as GET /metrics's "
            "do.")

    def add_arguments(self, parser):
        parser.add_argument("--running", type=int, default=5, metavar="N",
                            help="running jobs listed per worker process (default: 5)")
        add_shard_argument(parser, "report on this shard of JOB_SHARDS (default: JOB_DATABASE)")

    def handle(self, *args, **opts):
        try:
            with on_shard(opts["shard"]):
                self.report(opts["running"])
        except DatabaseError as exc:
            raise CommandError(f"database unavailable: {exc}") from exc

    def report(self, show_running: int) -> None:
        snap = snapshot()
        out = self.stdout.write
        statuses = [s.value for s in Status]
        queues = sorted({q for q, _ in snap.jobs} | {q for q, *_ in snap.queue_settings})
        settings = {q: (paused, limit) for q, paused, limit in snap.queue_settings}

        out("Jobs by queue and status")
        width = max([len("queue"), *map(len, queues)]) + 2
        out("  " + "queue".ljust(width) + "".join(s.rjust(11) for s in statuses)
            + "   runnable  oldest runnable  flow")
        for q in queues:
            paused, limit = settings.get(q, (False, None))
            flow = ", ".join(x for x in ("PAUSED" if paused else "",
                                         f"limit {limit}" if limit else "") if x) or "-"
            age = snap.oldest_age.get(q, 0.0)
            out("  " + q.ljust(width)
                + "".join(str(snap.jobs.get((q, s), 0)).rjust(11) for s in statuses)
                + str(snap.runnable.get(q, 0)).rjust(11)
                + (_age(age) if snap.runnable.get(q) else "-").rjust(17) + "  " + flow)
        total = {s: sum(n for (_, st), n in snap.jobs.items() if st == s) for s in statuses}
        out("  " + "total".ljust(width) + "".join(str(total[s]).rjust(11) for s in statuses))
        depth = sum(snap.depth.values())
        limit = snap.max_queue_depth
        out(f"Queued depth: {depth}" + (f" of JOB_MAX_QUEUE_DEPTH={limit}" if limit else
                                        " (JOB_MAX_QUEUE_DEPTH off)"))

        out("")
        out("Throughput (attempts ended)      last 1m    last 5m   last 15m")
        with queue_connection().cursor() as cur:
            for kind in OUTCOMES:
                cur.execute(sql.QUEUE_STATUS_EVENTS_RECENT, [kind])
                one, five, fifteen = cur.fetchone()
                out(f"  {kind:<30}{one:>9}{five:>11}{fifteen:>11}")
            cur.execute(sql.QUEUE_STATUS_RUNNING_BY_PROCESS)
            running: dict[str, list] = {}
            for worker, job_id, job_type, seconds in cur.fetchall():
                running.setdefault(worker, []).append((job_id, job_type, seconds))

        out("")
        alive = snap.workers_alive
        out(f"Workers alive: {len(alive)} process(es), {sum(w.threads for w in alive)} thread(s)")
        for w in snap.workers:
            jobs = running.get(w.id, [])
            state = "alive" if w.alive else f"SILENT {_age(w.heartbeat_age_seconds)}"
            queues_ = ",".join(w.queues) if w.queues else "*"
            out(f"  {w.id}  {state}  threads {w.threads}  queues {queues_}  "
                f"up {_age(w.uptime_seconds)}  running {len(jobs)}")
            for job_id, job_type, seconds in jobs[:show_running]:
                out(f"      job {job_id} {job_type} for {_age(float(seconds or 0))}")
            if len(jobs) > show_running:
                out(f"      ... and {len(jobs) - show_running} more")
        paused = [q for q, p, _ in snap.queue_settings if p]
        out("")
        out("Paused queues: " + (", ".join(paused) if paused else "none"))
        limits = [f"{q}={lim}" for q, _, lim in snap.queue_settings if lim]
        out("Queue concurrency limits: " + (", ".join(limits) if limits else "none"))
        type_limits = _type_limits()
        out("Type concurrency limits: " + (", ".join(type_limits) if type_limits else "none"))
        rates = [f"{r['kind']}:{r['name']}={r['max_starts']}/{r['period_seconds']:g}s "
                 f"(used {r['used']})" for r in selectors.rate_limits()]
        out("Rate limits: " + (", ".join(rates) if rates else "none"))
        orders = selectors.queue_orders()
        out("Claim order (fair shares, aging): " + ("" if orders else "plain for every queue"))
        for q in orders:
            out(f"  {q['name']}  {_claim_order(q)}")


def _claim_order(q: dict) -> str:
    """A queue's claim order as the dashboard's queue page words it."""
    parts = ["turns by fairness key" if q["fair"] else "priority, then oldest first"]
    if q["fairness_weights"]:
        parts.append("weights " + ", ".join(f"{k}={w}" for k, w in
                                            sorted(q["fairness_weights"].items()))
                     + ("" if q["fair"] else " (unused: not fair)"))
    if q["aging_seconds"] is not None:
        cap = 100 if q["aging_max_priority"] is None else q["aging_max_priority"]
        parts.append(f"aging +1 priority per {q['aging_seconds']:g} s waited, up to {cap}")
    return "; ".join(parts)


def _type_limits() -> list[str]:
    """@handler(concurrency=N) and @task_options(concurrency=N), when the registry knows them
    (the engine's per-type limits)."""
    return [f"{name}={n}" for name, n in sorted(registry.type_limits().items())]


def _age(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"
