/** Batches: one batch's progress (polled while it runs) and its cancel. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Batch } from "./types";

export const batchKeys = {
  detail: (id: string) => ["batches", "detail", id] as const,
};

/** A batch's page: its members counted by outcome and what is left, its callbacks. */
export function batchOptions(id: string, intervalMs = 2000) {
  return queryOptions({
    queryKey: batchKeys.detail(id),
    queryFn: ({ signal }) => api.get<Batch>(`batches/${encodeURIComponent(id)}/`, { signal }),
    ...polling<Batch>(intervalMs),
  });
}

export const batchMutations = {
  /** Cancel the batch's pending members; the answer is the batch as it is now. */
  cancel: (queryClient: QueryClient) => ({
    mutationFn: (id: string) => api.post<Batch>(`batches/${encodeURIComponent(id)}/cancel/`),
    onSuccess: (batch: Batch) => {
      queryClient.setQueryData(batchKeys.detail(String(batch.id)), batch);
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ["batches"] });
      void queryClient.invalidateQueries({ queryKey: ["jobs"] });
    },
  }),
};
