/**
 * How the overview shows a worker process's running jobs.
 *
 * With prefetch on (JOB_PREFETCH), a process holds jobs claimed ahead of its threads under the
 * worker id `<host>-<pid>-prefetch`; a thread that takes one runs it under that id (the row
 * is not written again). So a process can hold more running jobs than it has threads, and
 * such a job may be waiting or running: it is labelled "prefetched", and busy threads are
 * counted at most up to the process's threads.
 */
export const PREFETCH_SUFFIX = "-prefetch";

export function isPrefetched(workerId: string): boolean {
  return workerId.endsWith(PREFETCH_SUFFIX);
}

/** "thread 3" for `<host>-<pid>-3`, "prefetched" for `<host>-<pid>-prefetch`. */
export function workerLabel(workerId: string): string {
  return isPrefetched(workerId) ? "prefetched" : `thread ${workerId.split("-").pop()}`;
}

/** Busy threads of a process (at most its threads) and the held jobs beyond them. */
export function threadUse(runningJobs: number, threads: number): { busy: number; beyond: number } {
  return { busy: Math.min(runningJobs, threads), beyond: Math.max(0, runningJobs - threads) };
}
