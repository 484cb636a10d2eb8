/** Whole API answers for component tests, with the fields a test cares about overridden. */
import type { Metrics, WorkerProcess } from "../api/types";
import type { Loaded } from "../views/types";

export function loaded<T>(data: T): Loaded<T> {
  return { data, isPending: false, isError: false, error: null, isFetching: false, refetch: () => undefined };
}

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
