"""Every hand-written SQL statement of the package, each named and commented (tests/contracts/test_layout.py
finds any written elsewhere, migrations aside), in one module per aggregate:

- claim: the claim statements (plain, fair, under queue and type limits, by concurrency key), the
  planner settings they run under and the probes that choose between them;
- lifecycle: what a worker writes about the jobs it holds (complete, fail, release, snooze,
  renew, progress, log, a refused write's trace, adoption of a prefetched job) and the reaper's
  requeue of expired leases;
- enqueue: new jobs with their events, keys given up by jobs that no longer count, the
  job-creation throttle's counter;
- dependencies: jobs enqueued after others (block, settle, sweep);
- batches: batches of jobs (members, the finish that enqueues the callbacks, sweep, cancel);
- operator: an operator's writes (retry, delete, schedules' pause and resume, a queue's
  wake-up) and the test helpers' shortcuts;
- reads: read models (the job list's search, a job's links, the event feed, schedules' jobs,
  throughput, metrics, the dashboard, queue_status, the health check);
- audit: audit_jobs' invariant checks; audit_log: the operator actions' log;
- workers: worker processes' rows (heartbeat, stopped and lost workers), the maintenance
  leader's lease and the stager;
- waits: durable waits (a running job parked until a time or a signal) and signals sent;
- rates: a rate limit checked or acquired from Python, its old starts pruned, its use read,
  what a queued job waits for (the claim counts its starts itself, in claim);
- shards: a shard's range of job ids (JOB_SHARDS);
- maintenance: pruning, job_events' partitions, the history's guard, connection sessions'
  set-up and reset.

Callers use the package as one module (`from django_pg_jobqueue import sql`, `sql.CLAIM`):
it re-exports every public name of its modules (tests/contracts/test_layout.py checks that no two of
them define the same name).

Every statement that moves a job is a single statement: a guarded UPDATE and the INSERT of
its event, joined by a CTE, so the state change and its record commit together in one
round trip. The claim alone writes no event: an attempt's start stays on the job row while
it runs and is written into the event of its outcome (lifecycle.attempt_start), one history
row per attempt. Worker writes are fenced: they match `status = 'running' AND lease_token = <the
token this claim stamped>`, never the status alone, because after a lease expires the reaper
may requeue the job and another worker claim it: the row is `running` again, under a new
token. All times come from the database clock, `now()`.
"""
# ruff: noqa: F403 (each module's public names are the package's)
from .audit import *
from .audit_log import *
from .batches import *
from .claim import *
from .dependencies import *
from .enqueue import *
from .lifecycle import *
from .maintenance import *
from .operations import *
from .rates import *
from .reads import *
from .shards import *
from .waits import *
from .workers import *
from .workflows import *
