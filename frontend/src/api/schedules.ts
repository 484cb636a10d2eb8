/** Periodic jobs (`schedules/`): every JOB_PERIODIC and @periodic entry, with its runs. */
import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Schedule } from "./types";

export const scheduleKeys = { all: ["schedules"] as const };

export function schedulesOptions(intervalMs = 5000) {
  return queryOptions({
    queryKey: scheduleKeys.all,
    queryFn: ({ signal }) => api.get<Schedule[]>("schedules/", { signal }),
    ...polling<Schedule[]>(intervalMs),
  });
}
