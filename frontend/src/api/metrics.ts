import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Metrics } from "./types";

export const metricsKeys = { all: ["metrics"] as const };

export function metricsOptions(intervalMs = 2000) {
  return queryOptions({
    queryKey: metricsKeys.all,
    queryFn: ({ signal }) => api.get<Metrics>("metrics/", { signal }),
    ...polling<Metrics>(intervalMs),
  });
}
