/**
 * Where each job a worker process holds is, for the overview and the workers page.
 *
 * With prefetch on (JOB_PREFETCH), a process claims jobs ahead of its threads under the worker
 * id `<host>-<pid>-prefetch`. A thread that takes one runs it under that id until the lease
 * renewer records the thread as its owner (within a renewal interval), so a job under the
 * prefetch id may already run. What is known: a job under a thread's id runs on that thread;
 * one that reported progress runs (only a handler reports progress); at most `threads` jobs
 * run, so the ones beyond the threads wait. The rest are placed only when their count says so.
 */
export const PREFETCH_SUFFIX = "-prefetch";

export function isPrefetched(workerId: string): boolean {
  return workerId.endsWith(PREFETCH_SUFFIX);
}

type HeldJob = { id: number; worker_id: string; progress_percent: number | null };

export type Placement = {
  /** Busy threads: the jobs that run, at most the process's threads. */
  busy: number;
  /** Jobs claimed ahead that wait for a thread (held beyond the threads). */
  waiting: number;
  /** Each job's place, by job id: "thread 3", "on a thread", "waiting for a thread", or
   * "on a thread or waiting" (claimed ahead; some of those run, the rest wait). */
  labels: Map<number, string>;
};

export function placeJobs(jobs: HeldJob[], threads: number): Placement {
  const busy = Math.min(jobs.length, threads);
  const waiting = jobs.length - busy;
  const known = jobs.filter((j) => !isPrefetched(j.worker_id) || j.progress_percent !== null).length;
  // Of the jobs under the prefetch id with no progress, this many run on a thread.
  const runningUnplaced = Math.max(0, busy - known);
  const unplaced =
    waiting === 0 ? "on a thread" : runningUnplaced === 0 ? "waiting for a thread" : "on a thread or waiting";
  const labels = new Map(
    jobs.map((j) => [
      j.id,
      !isPrefetched(j.worker_id)
        ? `thread ${j.worker_id.split("-").pop()}`
        : j.progress_percent !== null
          ? "on a thread"
          : unplaced,
    ]),
  );
  return { busy, waiting, labels };
}
