/** Periodic jobs (`schedules/`): every JOB_PERIODIC and @periodic entry, with its runs. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { jobKeys } from "./jobs";
import { polling } from "./polling";
import type { Job, Schedule, ScheduleTick } from "./types";
import { withRow } from "./rows";

export const scheduleKeys = {
  all: ["schedules"] as const,
  list: () => [...scheduleKeys.all, "list"] as const,
  ticks: (name: string, limit: number) => [...scheduleKeys.all, "ticks", name, limit] as const,
};

const path = (name: string, rest: string) => `schedules/${encodeURIComponent(name)}/${rest}`;

export function schedulesOptions(intervalMs = 5000) {
  return queryOptions({
    queryKey: scheduleKeys.list(),
    queryFn: ({ signal }) => api.get<Schedule[]>("schedules/", { signal }),
    ...polling<Schedule[]>(intervalMs),
  });
}

/** A schedule's jobs, newest first: each tick's time (null for a run-now job) and its job. */
export function scheduleTicksOptions(name: string, limit = 50, intervalMs = 5000) {
  return queryOptions({
    queryKey: scheduleKeys.ticks(name, limit),
    queryFn: ({ signal }) => api.get<ScheduleTick[]>(path(name, "ticks/"), { query: { limit }, signal }),
    ...polling<ScheduleTick[]>(intervalMs),
  });
}

/** Pause and resume answer with the row: it replaces the list's at once, then all is refetched. */
function applyRow(queryClient: QueryClient, row: Schedule) {
  queryClient.setQueryData<Schedule[]>(
    scheduleKeys.list(),
    withRow((r) => r.name === row.name, row),
  );
}

export const scheduleMutations = {
  /** POST schedules/{name}/run/: the schedule's job, enqueued at once (201, the job). */
  run: (queryClient: QueryClient) => ({
    mutationFn: (name: string) => api.post<Job>(path(name, "run/")),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: scheduleKeys.all });
      void queryClient.invalidateQueries({ queryKey: jobKeys.lists() });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
  pause: (queryClient: QueryClient) => ({
    mutationFn: (name: string) => api.post<Schedule>(path(name, "pause/")),
    onSuccess: (row: Schedule) => applyRow(queryClient, row),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: scheduleKeys.all }),
  }),
  resume: (queryClient: QueryClient) => ({
    mutationFn: (name: string) => api.post<Schedule>(path(name, "resume/")),
    onSuccess: (row: Schedule) => applyRow(queryClient, row),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: scheduleKeys.all }),
  }),
};
