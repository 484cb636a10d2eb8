"""The ceiling of this design on this machine: our own statements (jobs.sql.CLAIM,
COMPLETE_MANY and the enqueue INSERT), on our schema, driven by bare psycopg from one process
with threads: no Django, no executor, no completer. What is left between this and the engine
is Python overhead. Runs in the project venv against the (migrated) database of `ours`."""
import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "backend")]

import psycopg  # noqa: E402

from bench.common import analyze, conninfo, emit, log, summary  # noqa: E402


def statements(url):
    """Migrate the (fresh) database, and take the engine's own statement texts."""
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django_pg_jobqueue import sql

    return (sql.CLAIM.format(queue_filter=""), sql.COMPLETE_MANY,
            sql.ENQUEUE_ONE[False, True], sql.ENQUEUE_MANY[False, True])


def insert_one_params(_=1):
    """sql.ENQUEUE_ONE's parameters for a no-op job: type, queue, payload, priority,
    max_attempts, timeout, run_at, delay, idempotency key, fingerprint, key expiry, unique key,
    unique states, retry policy, concurrency key and its limit, fairness key, expiry (at, in
    seconds), trace carrier."""
    return ("noop", "default", "{}", 0, 3, 600, None, 0.0, None, None, None, None, None, None,
            None, None, None, None, None, "{}")


def insert_many_params(k):
    """sql.ENQUEUE_MANY's parameters for k no-op jobs: an array per column the jobs set, the
    others NULL (as services/inserting.py sends them)."""
    from django_pg_jobqueue import sql

    params = dict.fromkeys(sql.ENQUEUE_MANY_COLUMNS)
    params.update(type=["noop"] * k, queue=["default"] * k, payload=["{}"] * k,
                  priority=[0] * k, max_attempts=[3] * k, timeout_seconds=[600] * k,
                  trace="{}")
    return params


def batch_json(rows):
    """COMPLETE_MANY's one parameter: [[id, lease token, worker id, result], ...]."""
    return json.dumps([[r[0], str(r[7]), r[13], {"ok": True}] for r in rows])


def reset(url):
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        c.execute("TRUNCATE jobs, job_events, job_search_text, job_workers RESTART IDENTITY CASCADE")
        # No ANALYZE of the empty tables: see ours.reset().


def inserts(url, statement, params, n, chunk):
    """Insert n jobs, `chunk` per call of `statement` with `params(chunk size)`."""
    reset(url)
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        t0 = time.perf_counter()
        for start in range(0, n, chunk):
            c.execute(statement, params(min(chunk, n - start)), prepare=True).fetchall()
        return n / (time.perf_counter() - t0)


def drain(url, claim, complete, insert_many, n, threads, batch, per_job_complete):
    reset(url)
    with psycopg.connect(conninfo(url), autocommit=True) as c:
        for start in range(0, n, 1000):
            c.execute(insert_many, insert_many_params(min(1000, n - start)))
    analyze(url)  # as the drains of the systems do (see bench.common.analyze)
    done = [0] * threads

    def work(t):
        ids = [f"raw-{t}-{i}" for i in range(batch)]
        with psycopg.connect(conninfo(url), autocommit=True) as c:
            while True:
                rows = c.execute(claim, {"limit": batch, "worker_ids": json.dumps(ids),
                                         "lease_seconds": 30.0, "queues": []}).fetchall()
                if not rows:
                    return
                if per_job_complete:
                    for r in rows:
                        c.execute(complete, {"batch": batch_json([r])}).fetchall()
                else:
                    c.execute(complete, {"batch": batch_json(rows)}).fetchall()
                done[t] += len(rows)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    assert sum(done) == n, (sum(done), n)
    return n / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    claim, complete, insert_one, insert_many = statements(args.url)
    modes = {
        "claim1_complete1": dict(batch=1, per_job_complete=True),
        "claim50_complete_each": dict(batch=50, per_job_complete=True),
        "claim50_complete50": dict(batch=50, per_job_complete=False),
    }
    result = {"system": "raw-sql", "threads": args.threads, "n": args.n}
    small_n = max(200, args.n // 4)  # the per-job modes are slow; a quarter is plenty
    for name, m in modes.items():
        n = args.n if name == "claim50_complete50" else small_n
        runs = [drain(args.url, claim, complete, insert_many, n, args.threads, **m)
                for _ in range(args.runs)]
        result[name] = {**summary(runs), "n": n}
        log(f"raw {name}: {[round(r) for r in runs]}")
    result["insert_single"] = {**summary([inserts(args.url, insert_one, insert_one_params,
                                                  small_n, 1)
                                          for _ in range(args.runs)]), "n": small_n}
    result["insert_bulk"] = {**summary([inserts(args.url, insert_many, insert_many_params,
                                                args.n, 1000)
                                        for _ in range(args.runs)]), "chunk": 1000}
    log(f"raw inserts: single {result['insert_single']['runs']} bulk {result['insert_bulk']['runs']}")
    reset(args.url)
    emit(result)


if __name__ == "__main__":
    main()
