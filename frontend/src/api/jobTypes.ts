import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import type { JobType } from "./types";

export const jobTypeKeys = { all: ["job-types"] as const };

/** Registered handler types change only on deploy: fetched once per session. */
export function jobTypesOptions() {
  return queryOptions({
    queryKey: jobTypeKeys.all,
    queryFn: async ({ signal }) => {
      const body = await api.get<JobType[] | { results: JobType[] }>("job-types/", { signal });
      return Array.isArray(body) ? body : body.results;
    },
    staleTime: 5 * 60_000,
  });
}
