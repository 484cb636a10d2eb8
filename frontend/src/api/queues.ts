/** Named queues: list, one queue's page, pause, resume, the concurrency limit. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Queue, QueueDetail } from "./types";
import { withRow } from "./rows";

export const queueKeys = {
  all: ["queues"] as const,
  detail: (name: string) => ["queues", "detail", name] as const,
};

/** The queue's own page: counts by status and its workers. */
export function queueDetailOptions(name: string, intervalMs = 2000) {
  return queryOptions({
    queryKey: queueKeys.detail(name),
    queryFn: ({ signal }) => api.get<QueueDetail>(`queues/${encodeURIComponent(name)}/`, { signal }),
    ...polling<QueueDetail>(intervalMs),
  });
}

export function queuesOptions(intervalMs = 3000) {
  return queryOptions({
    queryKey: queueKeys.all,
    queryFn: ({ signal }) => api.get<Queue[]>("queues/", { signal }),
    ...polling<Queue[]>(intervalMs),
  });
}

export type QueueAction = { name: string; action: "pause" | "resume" };

export const queueMutations = {
  /** Pause or resume; the answer (the queue as it is now) goes straight into the list. */
  toggle: (queryClient: QueryClient) => ({
    mutationFn: ({ name, action }: QueueAction) => api.post<Queue>(`queues/${encodeURIComponent(name)}/${action}/`),
    onSuccess: (queue: Queue) => {
      queryClient.setQueryData<Queue[]>(
        queueKeys.all,
        withRow((q) => q.name === queue.name, queue),
      );
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queueKeys.all });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
  /** Set the concurrency limit (null: none); needs change_queuesetting. Refetches every queue
   * query: the list and each queue's page. */
  setLimit: (queryClient: QueryClient) => ({
    mutationFn: ({ name, limit }: { name: string; limit: number | null }) =>
      api.patch<Queue>(`queues/${encodeURIComponent(name)}/`, { concurrency_limit: limit }),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queueKeys.all });
    },
  }),
};
