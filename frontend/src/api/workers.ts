/**
 * Worker processes (`workers/`): alive or lost, with what each thread runs; and each host's
 * overrides of its queues (`workers/overrides/`), set and removed per host and queue.
 */
import { type Query, type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { LostWorker, Worker, WorkerOverride, WorkerOverrideSet } from "./types";
import { withRow } from "./rows";

export const workerKeys = {
  all: ["workers"] as const,
  lost: ["workers", "lost"] as const,
  overrides: ["workers", "overrides"] as const,
};

// Asked again this long after a live process would turn lost (the server's `lost_in_seconds`):
// the request then lands just after the server calls it lost, not up to a refresh later.
const AFTER_LOST_MS = 100;
const MIN_POLL_MS = 250;

/**
 * Milliseconds until the next poll: the usual rate (`base`, from the polling helper: the
 * person's choice, paused, back-off), or sooner when a live process would be lost by then if
 * it beat no more, so that a dead worker shows as lost as soon as the server says so. Pure.
 */
export function nextWorkersPoll(base: number | false, rows: Worker[] | undefined): number | false {
  if (base === false || !rows) return base;
  const soonest = Math.min(
    ...rows.filter((w) => w.state === "alive").map((w) => w.lost_in_seconds * 1000 + AFTER_LOST_MS),
  );
  return Number.isFinite(soonest) ? Math.max(MIN_POLL_MS, Math.min(base, soonest)) : base;
}

export function workersOptions(intervalMs = 2000) {
  const poll = polling<Worker[]>(intervalMs);
  return queryOptions({
    queryKey: workerKeys.all,
    queryFn: ({ signal }) => api.get<Worker[]>("workers/", { signal }),
    ...poll,
    refetchInterval: (query: Query<Worker[], Error, Worker[], readonly unknown[]>) =>
      nextWorkersPoll(poll.refetchInterval(query), query.state.error ? undefined : query.state.data),
  });
}

/** Processes lost in the last day, forgotten once the reaper took their jobs back (`workers/lost/`). */
export function lostWorkersOptions(intervalMs = 10_000) {
  return queryOptions({
    queryKey: workerKeys.lost,
    queryFn: ({ signal }) => api.get<LostWorker[]>("workers/lost/", { signal }),
    ...polling<LostWorker[]>(intervalMs),
  });
}

/** Every host's overrides of its queues: threads, stopped, who set them (`workers/overrides/`). */
export function workerOverridesOptions(intervalMs = 5000) {
  return queryOptions({
    queryKey: workerKeys.overrides,
    queryFn: ({ signal }) => api.get<WorkerOverride[]>("workers/overrides/", { signal }),
    ...polling<WorkerOverride[]>(intervalMs),
  });
}

/** One host's override of one queue, as a mutation takes it. */
export type HostQueue = { hostname: string; queue: string };
export type OverrideInput = HostQueue & WorkerOverrideSet;

const overridePath = ({ hostname, queue }: HostQueue) =>
  `workers/hosts/${encodeURIComponent(hostname)}/queues/${encodeURIComponent(queue)}/`;

const sameTarget = (target: HostQueue) => (o: WorkerOverride) =>
  o.hostname === target.hostname && o.queue === target.queue;

export const workerOverrideMutations = {
  /** Set (or replace) a host's override of a queue; needs change_queuesetting. */
  set: (queryClient: QueryClient) => ({
    mutationFn: ({ hostname, queue, threads, stopped }: OverrideInput) =>
      api.put<WorkerOverride>(overridePath({ hostname, queue }), { threads: threads ?? null, stopped: !!stopped }),
    onSuccess: (saved: WorkerOverride, target: OverrideInput) =>
      queryClient.setQueryData(workerKeys.overrides, withRow(sameTarget(target), saved)),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: workerKeys.overrides }),
  }),
  /** Remove it: the host runs the queue as its command line says again. */
  remove: (queryClient: QueryClient) => ({
    mutationFn: (target: HostQueue) => api.delete(overridePath(target)),
    onSuccess: (_: unknown, target: HostQueue) =>
      queryClient.setQueryData(workerKeys.overrides, withRow(sameTarget(target), null)),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: workerKeys.overrides }),
  }),
};
