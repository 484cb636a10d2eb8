"""Where a drained job's CPU goes: the worker processes against PostgreSQL, and what each part
of the schema's per-job writes costs.

    python bench/drain_profile.py [-n 100000] [--rounds 3] [--variants baseline,no_fk,...]
    python bench/drain_profile.py --py-spy profile.txt     # also sample one worker (py-spy)

Creates a scratch database on DATABASE_URL's server (else the embedded PostgreSQL), migrates
it, and for each variant, round after round (interleaved): empties the tables, changes the
schema as the variant says, fills N no-op jobs with `enqueue_many`, ANALYZEs, starts
`run_job_workers` at its defaults (2 processes x `--threads 16`, nothing else chosen) and
waits for the drain. From the first job's claim to the last one's completion it reads, from
/proc, the CPU the worker processes spent and the CPU every `postgres` process spent (so the
server must run on this machine: the script refuses another host), and the machine's busy
CPU; each divided by the jobs drained. The variants only exist to price the writes: they
drop what the queue needs (the history's guard, the listing's and the feed's indexes)
or put back what it replaced (a foreign key from `job_events` to `jobs` instead of the
guard), in the scratch database, and undo it after; they are not settings. The scratch database is dropped however the run ends.

With --py-spy FILE, a baseline round of its own (not counted in the table) runs its first
worker process under `py-spy record --gil` (install it with `pip install py-spy`); the
collapsed stacks go to FILE, and a summary by function of the worker threads' samples is
printed.
"""
import argparse
import collections
import glob
import os
import shutil
import signal
import statistics
import sys
import tempfile
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

from bench import ours  # noqa: E402
from bench.common import CpuSampler, analyze, create_db, drop_db, log, wait_until  # noqa: E402
from bench.run import server_url  # noqa: E402

PROCS, THREADS = 2, 16  # the defaults: only --threads chosen
FK = "job_events_job_id_e9646c53_fk_jobs_id"
FK_ADD = (f"ALTER TABLE job_events ADD CONSTRAINT {FK} FOREIGN KEY (job_id) REFERENCES jobs (id)"
          " DEFERRABLE INITIALLY DEFERRED")


def _guard_statements() -> list[str]:
    from django_pg_jobqueue import sql
    from django_pg_jobqueue.services import partitions

    with _cursor() as cur:
        names = partitions.partition_tables(cur)
    return [*sql.HISTORY_GUARD_FUNCTIONS, *sql.HISTORY_GUARD_TRIGGERS,
            *(sql.HISTORY_GUARD_EVENTS_TRIGGER.format(table=n) for n in names)]


def _guard_drop() -> list[str]:
    from django_pg_jobqueue import sql

    return list(sql.HISTORY_GUARD_DROP)


def _partial_listing(undo: bool = False) -> list[str]:
    """The listing's (queue, status) and (type, status) indexes without the succeeded jobs'
    entries (a completion's new row version then enters neither), or back as migrated."""
    out = []
    for column in ("queue", "type"):
        name = f"jobs_{column}_status_idx"
        where = "" if undo else " WHERE status <> 'succeeded'"
        out += [f"DROP INDEX {name}", f"CREATE INDEX {name} ON jobs ({column}, status){where}"]
    return out


# What each variant changes (undone after): (description, constraints and indexes it drops,
# and a function giving (statements that change the schema, statements that change it back)).
VARIANTS = {
    "baseline": ("the schema as migrated", [], [], None),
    "with_fk": ("with a foreign key job_events -> jobs instead of the history's guard", [], [],
                lambda: ([*_guard_drop(), FK_ADD],
                         [f"ALTER TABLE job_events DROP CONSTRAINT {FK}", *_guard_statements()])),
    "no_guard": ("without the history's guard (nor a foreign key)", [], [],
                 lambda: (_guard_drop(), _guard_statements())),
    "no_listing_indexes": ("without jobs' (queue, status), (type, status), (created_at) indexes",
                           [], ["jobs_queue_status_idx", "jobs_type_status_idx", "jobs_created_idx"],
                           None),
    "no_created_index": ("without jobs' (created_at) index alone", [],
                         ["jobs_created_idx"], None),
    "unfinished_listing_indexes": (
        "jobs' (queue, status) and (type, status) indexes partial: succeeded jobs left out", [],
        [], lambda: (_partial_listing(), _partial_listing(undo=True))),
    "no_feed_indexes": ("without job_events' (tx_id, id) and BRIN (created_at) indexes",
                        [], ["job_events_tx_order_idx", "job_events_created_brin"], None),
}


def _ticks(pid) -> float:
    """CPU seconds (user + system) process `pid` has spent, 0.0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _postgres_seconds() -> float:
    total = 0.0
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/comm") as f:
                if f.read().strip() != "postgres":
                    continue
        except OSError:
            continue
        total += _ticks(d.rsplit("/", 1)[1])
    return total


def _cursor():
    from django.db import connection

    return connection.cursor()


def _execute(sql: str, params=None):
    with _cursor() as cur:
        cur.execute(sql, params) if params else cur.execute(sql)
        return cur.fetchall() if cur.description else None


def _take_away(constraints: list[str], indexes: list[str]) -> list[str]:
    """Drop them; return the statements that put them back."""
    restore = []
    for name in constraints:
        ((table, definition),) = _execute(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conname = %s AND conparentid = 0", [name])
        _execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        restore.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for name in indexes:
        ((definition,),) = _execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indexrelid = %s::regclass", [name])
        _execute(f'DROP INDEX "{name}"')
        restore.append(definition)
    return restore


def drain_once(url: str, n: int, variant: str, logdir: str, spy: str | None) -> dict:
    _, constraints, indexes, swap = VARIANTS[variant]
    ours.reset()
    restore = _take_away(constraints, indexes)
    if swap:
        change, back = swap()
        for statement in change:
            _execute(statement)
        restore += back
    try:
        ours.enqueue_bulk(n)
        analyze(url)
        procs = ours.start_workers(url, PROCS, THREADS, None, logdir,
                                   wrap_first=spy and [_py_spy(), "record",
                                                      "--gil", "--subprocesses", "-r", "1000", "-f", "raw", "-o", spy,
                                                      "--"])
        try:
            # From the first claim: start-up (Django's set-up and checks) stays out.
            if not wait_until(lambda: ours.scalar(
                    "SELECT EXISTS (SELECT FROM jobs WHERE status <> 'queued')"), 60, interval=0.005):
                raise RuntimeError("no job was claimed within 60 s")
            pids = [p.pid for p in procs]
            if spy:  # py-spy's child is the worker: count the worker, not the sampler
                pids += [int(c) for p in procs for c in _children(p.pid)]
            w0, pg0 = sum(_ticks(p) for p in pids), _postgres_seconds()
            started = ours.scalar("SELECT count(*) FROM jobs WHERE status <> 'queued'")
            with CpuSampler() as cpu:
                if not ours.wait_drained(n, timeout=max(120, n / 100)):
                    raise RuntimeError("the drain did not finish")
            w1, pg1 = sum(_ticks(p) for p in pids), _postgres_seconds()
        finally:
            ours.stop_workers(procs, signal.SIGINT if spy else signal.SIGTERM)
        first, last = ours.drain_window()
        counted = n - started  # the jobs not yet claimed when the counters were read

        def per_job(seconds: float) -> float | None:
            return seconds / counted * 1e6 if counted > 0 else None

        return {"jobs_per_s": n / (last - first),
                "worker_us": None if spy else per_job(w1 - w0),
                "postgres_us": per_job(pg1 - pg0),
                "machine_us": cpu.us_per_job(first, last, n)}
    finally:
        ours.reset()
        for statement in restore:
            _execute(statement)


def _py_spy() -> str:
    """py-spy beside this interpreter (the virtualenv's), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    found = here if os.path.exists(here) else shutil.which("py-spy")
    if not found:
        sys.exit("--py-spy needs py-spy: pip install py-spy")
    return found


def _children(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def summarize_spy(path: str, top: int = 25) -> None:
    """Inclusive and own share of the GIL-holding samples of the worker's threads (the main
    thread's start-up, Django's set-up and checks, left out), by function."""
    inclusive, own, total = collections.Counter(), collections.Counter(), 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if "Thread._bootstrap_inner" not in stack:
                continue
            frames = [fr.split(":")[0] for fr in stack.split(";")]
            total += int(count)
            for fr in set(frames):
                inclusive[fr] += int(count)
            own[frames[-1]] += int(count)
    print(f"\npy-spy: {total} samples of a thread holding the GIL (first worker process)")
    for title, counter in (("inclusive", inclusive), ("own", own)):
        print(f"  {title}:")
        for frame, count in counter.most_common(top):
            print(f"    {100 * count / total:5.1f}%  {frame}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--py-spy", dest="spy", default=None)
    args = ap.parse_args()
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"--variants: unknown {unknown}; known: {', '.join(VARIANTS)}")
    server = server_url()
    if urlsplit(server).hostname not in ("127.0.0.1", "localhost", "::1", None, ""):
        sys.exit("drain_profile reads the server's CPU from /proc: run it against a server on "
                 "this machine (DATABASE_URL on 127.0.0.1, or unset for the embedded one)")
    name = f"drain_profile_{os.getpid()}"
    url = create_db(server, name)
    results = collections.defaultdict(list)
    try:
        ours.setup_django(url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        with tempfile.TemporaryDirectory() as logdir:
            if args.spy:  # a round of its own: the sampler slows the worker it samples
                drain_once(url, args.n, "baseline", logdir, args.spy)
                log(f"py-spy round done: {args.spy}")
            for r in range(args.rounds):
                for v in variants:
                    out = drain_once(url, args.n, v, logdir, None)
                    results[v].append(out)
                    log(f"round {r + 1} {v}: {out['jobs_per_s']:,.0f} jobs/s, "
                        + ", ".join(f"{k} {val:.1f}" for k, val in out.items()
                                    if k != "jobs_per_s" and val is not None))
    finally:
        from django.db import connections

        connections.close_all()
        drop_db(server, name)

    def med(v, key):
        vals = [o[key] for o in results[v] if o[key] is not None]
        return statistics.median(vals) if vals else None

    print(f"\n{args.n:,} no-op jobs, {PROCS} x run_job_workers --threads {THREADS} (defaults), "
          f"median of {args.rounds} rounds; CPU per job from the first claim to the last finish")
    print(f"{'variant':<20} {'jobs/s':>8} {'worker us':>10} {'postgres us':>12} {'machine us':>11}"
          f"  what it takes away")
    base_pg = med("baseline", "postgres_us") if "baseline" in results else None
    def us(value) -> str:
        return "-" if value is None else f"{value:.1f}"

    for v in variants:
        pg = med(v, "postgres_us")
        delta = (f" ({pg - base_pg:+.1f})" if None not in (pg, base_pg) and v != "baseline"
                 else "")
        print(f"{v:<20} {med(v, 'jobs_per_s'):>8,.0f} {us(med(v, 'worker_us')):>10} "
              f"{us(pg) + delta:>12} {us(med(v, 'machine_us')):>11}  {VARIANTS[v][0]}")
    if args.spy:
        summarize_spy(args.spy)


if __name__ == "__main__":
    main()
