/** Worker processes (`workers/`): alive or lost, with what each thread runs. */
import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Worker } from "./types";

export const workerKeys = { all: ["workers"] as const };

export function workersOptions(intervalMs = 2000) {
  return queryOptions({
    queryKey: workerKeys.all,
    queryFn: ({ signal }) => api.get<Worker[]>("workers/", { signal }),
    ...polling<Worker[]>(intervalMs),
  });
}
