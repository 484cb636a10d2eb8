/**
 * The job statuses, from the generated schema's `JobStatusEnum` (`JobStatus`): the compiler
 * checks that the table below names every status of the API and no other, so a status added
 * to the backend (and `make schema`) fails the build until the dashboard knows it.
 */
import type { JobListParams, JobStatus } from "../api/types";

const FACTS: Record<JobStatus, { order: number; finished: boolean }> = {
  waiting: { order: 0, finished: false },
  queued: { order: 1, finished: false },
  running: { order: 2, finished: false },
  succeeded: { order: 3, finished: true },
  failed: { order: 4, finished: true },
  cancelled: { order: 5, finished: true },
};

/** Every status, in the order of a job's life. */
export const STATUSES: readonly JobStatus[] = (Object.keys(FACTS) as JobStatus[]).sort(
  (a, b) => FACTS[a].order - FACTS[b].order,
);

export const isStatus = (s: string): s is JobStatus => Object.hasOwn(FACTS, s);

/**
 * The list's `state` filter: finer than the status for queued jobs (available now, scheduled
 * for later, or retryable after a back-off), in the order of a job's life. The compiler checks
 * each against the list endpoint's enum.
 */
export const JOB_STATES = [
  "available",
  "scheduled",
  "retryable",
  "running",
  "succeeded",
  "failed",
  "cancelled",
] as const satisfies readonly NonNullable<JobListParams["state"]>[number][];

export type JobState = (typeof JOB_STATES)[number];

/** A finished job changes no more, unless an operator retries it. */
export const isFinishedStatus = (s: string) => isStatus(s) && FACTS[s].finished;
