"""Worker processes' own rows and the maintenance leader (services/workers.py): heartbeats,
stopped and lost workers, the leader's lease, and the stager that wakes the queues whose
delayed jobs became due.
"""
from .enqueue import NOTIFY_CHANNEL

# --- heartbeat: a worker process's row in job_workers (worker/renewer.py) -----------------
# Upserted after each renewal pass: the first creates the row, the next ones move heartbeat_at
# (metrics and audit_jobs read it to tell live processes from dead ones).
# With it, what the workers page shows of the process: its memory (RSS, bytes), jobs run,
# handlers stuck past their timeout now, its own heartbeat interval (a row silent for two of
# them is shown as lost) and the supervisor that started it (NULL: none).
# A row beaten again: its beat and its figures (the first beat's started_at stays).
_HEARTBEAT_UPDATE = """
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), threads = EXCLUDED.threads,
                               queues = EXCLUDED.queues, rss_bytes = EXCLUDED.rss_bytes,
                               jobs_done = EXCLUDED.jobs_done,
                               stuck_handlers = EXCLUDED.stuck_handlers,
                               heartbeat_interval_seconds = EXCLUDED.heartbeat_interval_seconds,
                               supervisor_pid = EXCLUDED.supervisor_pid
"""
HEARTBEAT = """
INSERT INTO job_workers (id, hostname, pid, threads, queues, started_at, heartbeat_at,
                         rss_bytes, jobs_done, stuck_handlers, heartbeat_interval_seconds,
                         supervisor_pid)
VALUES (%(id)s, %(hostname)s, %(pid)s, %(threads)s, %(queues)s::jsonb, now(), now(),
        %(rss_bytes)s, %(jobs_done)s, %(stuck_handlers)s, %(heartbeat_interval_seconds)s,
        %(supervisor_pid)s)
""" + _HEARTBEAT_UPDATE

# One statement beats for every live child of a supervisor (`run_job_workers --processes N`,
# worker/hostbeat.py): the supervisor upserts each child's row from the figures the child
# wrote into memory it shares with the supervisor after its own renewal pass, so a host of N
# idle children costs one heartbeat transaction per interval, not N. Each row keeps its own
# figures and its own id (`<host>-<child pid>`); a child the supervisor found dead, or whose
# figures went stale (frozen), is simply left out, and its row turns lost like any silent one.
# The arrays are parallel, one element per child; the supervisor's pid is the same for all.
HEARTBEAT_MANY = """
INSERT INTO job_workers (id, hostname, pid, threads, queues, started_at, heartbeat_at,
                         rss_bytes, jobs_done, stuck_handlers, heartbeat_interval_seconds,
                         supervisor_pid)
SELECT u.id, u.hostname, u.pid, u.threads, u.queues::jsonb, now(), now(), u.rss_bytes,
       u.jobs_done, u.stuck_handlers, u.heartbeat_interval_seconds, %(supervisor_pid)s
FROM unnest(%(ids)s::text[], %(hostnames)s::text[], %(pids)s::int[], %(threads)s::int[],
            %(queues)s::text[], %(rss_bytes)s::bigint[], %(jobs_done)s::bigint[],
            %(stuck_handlers)s::int[], %(heartbeat_interval_seconds)s::float8[])
     AS u(id, hostname, pid, threads, queues, rss_bytes, jobs_done, stuck_handlers,
          heartbeat_interval_seconds)
""" + _HEARTBEAT_UPDATE

# The rows of worker processes that stopped gracefully (a lone process removes its own at its
# stop; a supervisor removes its children's once they have exited, after its last beat for
# them, so that no beat of its can bring a stopped child's row back).
REMOVE_STOPPED_WORKERS = "DELETE FROM job_workers WHERE id = ANY(%(ids)s::text[])"

# A worker process's row is kept while it is lost (silent, shown as lost with what it held)
# and forgotten once it has been silent longer than %(silent_seconds)s and no running job names
# one of its threads any longer (the reaper requeued them). Run by the reaper. The row moves
# to job_lost_workers (the workers page's recently lost), with what the reaper did with its
# jobs, in the same statement; entries forgotten more than %(kept_seconds)s ago go.
# Returns how many rows were forgotten.
FORGET_LOST_WORKERS = """
WITH gone AS (
    DELETE FROM job_workers w
    WHERE w.heartbeat_at < now() - make_interval(secs => %(silent_seconds)s)
      AND NOT EXISTS (SELECT 1 FROM jobs j
                      WHERE j.status = 'running' AND j.locked_by LIKE w.id || '-%%')
    RETURNING w.*
),
kept AS (
    INSERT INTO job_lost_workers (worker_id, hostname, pid, supervisor_pid, threads,
                                  started_at, last_heartbeat_at, forgotten_at, jobs_done,
                                  jobs_requeued, jobs_failed)
    SELECT id, hostname, pid, supervisor_pid, threads, started_at, heartbeat_at, now(),
           jobs_done, jobs_requeued, jobs_failed
    FROM gone
),
pruned AS (
    DELETE FROM job_lost_workers
    WHERE forgotten_at < now() - make_interval(secs => %(kept_seconds)s)
)
SELECT count(*) FROM gone
"""

# What the reaper (services.reap: leases expired) or a supervisor (settle_dead_process: a
# child died) did with the jobs of each process: counted on the process's row, so that its
# lost-worker entry says how many jobs were requeued and failed. A process whose row is gone
# already is not counted.
COUNT_REAPED_BY_PROCESS = """
UPDATE job_workers w
SET jobs_requeued = w.jobs_requeued + c.requeued, jobs_failed = w.jobs_failed + c.failed
FROM unnest(%(ids)s::text[], %(requeued)s::int[], %(failed)s::int[]) AS c(id, requeued, failed)
WHERE w.id = c.id
"""

# --- the maintenance leader: one lease row per role (worker/leader.py) -----------------------
# Take the lease, or keep it: the row is updated only when this process holds it already or
# its lease has expired on the database clock, so two processes can never both hold it (the
# second UPDATE waits for the first's row lock, then re-checks the condition on the new row
# and matches nothing). A process that does not hold it locks nothing: the UPDATE's WHERE
# fails before any row is locked. The INSERT makes the row the first time (or after a test
# truncated the table); ON CONFLICT DO NOTHING leaves it to the UPDATE's next turn when two
# processes both found no row. Returns the holder's id when this process holds the lease.
TAKE_LEADERSHIP_IF_FREE_OR_MINE = """
WITH renewed AS (
    UPDATE job_leader
       SET holder = %(holder)s,
           elected_at = CASE WHEN holder = %(holder)s THEN elected_at ELSE now() END,
           expires_at = now() + make_interval(secs => %(lease_seconds)s)
     WHERE role = %(role)s AND (holder = %(holder)s OR expires_at < now())
    RETURNING holder
), created AS (
    INSERT INTO job_leader (role, holder, elected_at, expires_at)
    SELECT %(role)s, %(holder)s, now(), now() + make_interval(secs => %(lease_seconds)s)
     WHERE NOT EXISTS (SELECT 1 FROM job_leader WHERE role = %(role)s)
    ON CONFLICT (role) DO NOTHING
    RETURNING holder
)
SELECT holder FROM renewed UNION ALL SELECT holder FROM created
"""

# Give the lease up (a graceful stop): another process takes it at its next heartbeat.
RESIGN_LEADERSHIP = """
UPDATE job_leader SET expires_at = '-infinity' WHERE role = %(role)s AND holder = %(holder)s
"""

# --- the stager: wake the workers of queues whose jobs became due (worker/stager.py) ----------
# Delayed jobs and retries become runnable at `available_at` with no NOTIFY of their own;
# idle workers back off their polling (JOB_POLL_INTERVAL_MAX_SECONDS), so the maintenance
# leader notifies, once per queue, the queues with jobs that became due since its last pass
# (`since`, the last pass's database clock, returned as `now`). Only jobs that were not
# runnable when written count (`available_at > created_at`): a job enqueued to run at once
# sent its own NOTIFY. Those rows alone are in jobs_due_later_idx, by available_at, so a pass
# reads the entries of the jobs that fell due since the last one. (On the claim index, which
# orders the queued rows by priority first, it read every queued row's entry, and under a
# snapshot held open elsewhere every job's claimed since: 28 ms a pass 3 minutes into the
# pressure cell's hold, bench/pressure.py.)
DATABASE_NOW = "SELECT now()"  # the stager's first `since`: the database clock, not the host's

NOTIFY_QUEUES_WITH_NEWLY_DUE_JOBS = f"""
SELECT now(), count(pg_notify('{NOTIFY_CHANNEL}', queue))
  FROM (SELECT DISTINCT queue FROM (
          SELECT queue FROM jobs
           WHERE status = 'queued' AND available_at > created_at
             AND available_at > %(since)s AND available_at <= now()
          OFFSET 0) AS newly_due) due  -- OFFSET 0: the queues' order from no other index
"""

# --- a host's overrides of its queues (services/worker_overrides.py) ----------------------
# What each worker process of a host reads on its renewal pass (worker/overrides.py): the
# host's rows of job_worker_overrides, (queue, threads or NULL, stopped). A handful of rows
# by the table's unique (hostname, queue) index; written by the service through the ORM.
WORKER_OVERRIDES_OF_HOST = """
SELECT queue, threads, stopped FROM job_worker_overrides WHERE hostname = %(hostname)s
"""
