import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Latency, LatencyParams, Metrics, Throughput, ThroughputParams } from "./types";

export const metricsKeys = {
  all: ["metrics"] as const,
  throughput: (params: ThroughputParams) => ["metrics", "throughput", params] as const,
  latency: (params: LatencyParams) => ["metrics", "latency", params] as const,
};

/** Wait and run time percentiles per bucket over a range: one series, or one per queue. */
export function latencyOptions(params: LatencyParams, intervalMs = 10_000) {
  const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v)) as LatencyParams;
  return queryOptions({
    queryKey: metricsKeys.latency(clean),
    queryFn: ({ signal }) => api.get<Latency>("metrics/latency/", { query: clean, signal }),
    placeholderData: (previous) => previous,
    ...polling<Latency>(intervalMs),
  });
}

/** Succeeded and failed per bucket over a range, for one queue or type if given. */
export function throughputOptions(params: ThroughputParams, intervalMs = 5000) {
  const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v)) as ThroughputParams;
  return queryOptions({
    queryKey: metricsKeys.throughput(clean),
    queryFn: ({ signal }) => api.get<Throughput>("metrics/throughput/", { query: clean, signal }),
    placeholderData: (previous) => previous,
    ...polling<Throughput>(intervalMs),
  });
}

export function metricsOptions(intervalMs = 2000) {
  return queryOptions({
    queryKey: metricsKeys.all,
    queryFn: ({ signal }) => api.get<Metrics>("metrics/", { signal }),
    ...polling<Metrics>(intervalMs),
  });
}
