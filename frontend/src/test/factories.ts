/**
 * Whole API answers for component and page tests, with the fields a test cares about
 * overridden: a user and their permissions, jobs, events, queues, workers, metrics.
 */
import type {
  Job,
  JobEvent,
  LatencyPoint,
  Metrics,
  Queue,
  User,
  Worker,
  WorkerOverride,
  WorkerProcess,
} from "../api/types";
import type { Loaded } from "../views/types";

export function loaded<T>(data: T): Loaded<T> {
  return { data, isPending: false, isError: false, error: null, isFetching: false, refetch: () => undefined };
}

/** What a user may do: everything, unless a test takes something away. */
export const CAN_ALL: User["can"] = {
  view: true,
  create: true,
  cancel: true,
  retry: true,
  rerun: true,
  run_now: true,
  delete: true,
  change_queue: true,
  view_audit_log: true,
};

/** A user who may only look. */
export const CAN_VIEW: User["can"] = {
  view: true,
  create: false,
  cancel: false,
  retry: false,
  rerun: false,
  run_now: false,
  delete: false,
  change_queue: false,
  view_audit_log: false,
};

/** An operator who may do everything (not staff); `can` merges into CAN_ALL. */
export function user(extra: Omit<Partial<User>, "can"> & { can?: Partial<User["can"]> } = {}): User {
  const { can, ...rest } = extra;
  return {
    id: 1,
    username: "ops",
    is_staff: false,
    is_superuser: false,
    permissions: [],
    ...rest,
    can: { ...CAN_ALL, ...can },
  };
}

/** A job of the list as the API answers it: queued on default, never run. */
export function job(id: number, extra: Partial<Job> = {}): Job {
  return {
    id,
    type: "noop",
    queue: "default",
    status: "queued",
    priority: 0,
    attempts: 0,
    max_attempts: 3,
    available_at: "2026-01-01T00:00:00Z",
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    started_at: null,
    finished_at: null,
    locked_by: null,
    lease_expires_at: null,
    last_error: null,
    idempotency_key: null,
    progress_percent: null,
    ...extra,
  } as Job;
}

/** An event of job 1 (a running sleep), on worker host-1-0. */
export function jobEvent(id: number, kind: string, extra: Partial<JobEvent> = {}): JobEvent {
  return {
    id,
    job_id: 1,
    job_type: "sleep",
    job_status: "running",
    kind: kind as JobEvent["kind"],
    attempt: 1,
    worker_id: "host-1-0",
    message: "",
    data: {},
    created_at: "2026-01-01T12:00:00.250Z",
    ...extra,
  };
}

/** A queue with nothing in it and nothing set on it. */
export function queue(name: string, extra: Partial<Queue> = {}): Queue {
  return {
    name,
    paused: false,
    concurrency_limit: null,
    fair: false,
    aging_seconds: null,
    aging_max_priority: null,
    fairness_weights: {},
    queued: 0,
    runnable: 0,
    running: 0,
    ...extra,
  };
}

/** A bucket of GET metrics/latency/: `jobs` finished in it, each percentile as given (none: null). */
export function latencyPoint(at: string, jobs = 0, figures: Partial<LatencyPoint> = {}): LatencyPoint {
  const none = {
    wait_p50_seconds: null,
    wait_p95_seconds: null,
    wait_p99_seconds: null,
    run_p50_seconds: null,
    run_p95_seconds: null,
    run_p99_seconds: null,
  };
  return { at, jobs, ...none, ...figures };
}

/** A process of the workers page: alive, beating every 2 s, running job #42 on its thread 3. */
export function worker(extra: Partial<Worker> = {}): Worker {
  return {
    id: "vm-1-4242",
    hostname: "vm-1",
    pid: 4242,
    supervisor_pid: 4240,
    threads: 4,
    queues: ["*"],
    state: "alive",
    started_at: new Date(Date.now() - 600_000).toISOString(),
    heartbeat_at: new Date(Date.now() - 1_000).toISOString(),
    heartbeat_age_seconds: 1,
    heartbeat_interval_seconds: 2,
    lost_in_seconds: 3.2,
    rss_bytes: 70 * 2 ** 20,
    jobs_done: 1200,
    stuck_handlers: 0,
    running_jobs: [
      {
        id: 42,
        type: "send_email",
        queue: "default",
        worker_id: "vm-1-4242-3",
        started_at: null,
        progress_percent: null,
      },
    ],
    ...extra,
  };
}

/** A process as the overview's metrics list it. */
export function workerProcess(extra: Partial<WorkerProcess> = {}): WorkerProcess {
  return {
    id: "vm-4242",
    hostname: "vm",
    pid: 4242,
    threads: 4,
    queues: ["*"],
    state: "alive",
    started_at: new Date(Date.now() - 600_000).toISOString(),
    heartbeat_at: new Date(Date.now() - 1_000).toISOString(),
    running_jobs: [],
    ...extra,
  };
}

/** A host's override of a queue: vm-1 runs `reports` on one thread. */
export function workerOverride(extra: Partial<WorkerOverride> = {}): WorkerOverride {
  return {
    hostname: "vm-1",
    queue: "reports",
    threads: 1,
    stopped: false,
    actor: "ops",
    updated_at: "2026-01-01T02:10:00Z",
    ...extra,
  };
}

export function metrics(extra: Partial<Metrics> = {}): Metrics {
  const none = { succeeded: 0, failed: 0 };
  return {
    generated_at: new Date().toISOString(),
    counts_by_status: { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 },
    counts_by_state: {
      available: 0,
      scheduled: 0,
      retryable: 0,
      running: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
    },
    queued: { total: 0, runnable: 0, scheduled: 0, by_priority: [], by_queue: [], max_depth: null },
    oldest_runnable_age_seconds: null,
    finished: { last_1m: none, last_5m: none, last_15m: none },
    run_time_seconds: { mean: null, p95: null, sample_size: 0 },
    retry_rate: null,
    throughput: [],
    workers: { active: 0, lost: 0, threads: 0, busy_threads: 0, processes: [] },
    ...extra,
  };
}
