/** Named queues: list, pause, resume. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { Queue } from "./types";

export const queueKeys = { all: ["queues"] as const };

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
      queryClient.setQueryData<Queue[]>(queueKeys.all, (list) => list?.map((q) => (q.name === queue.name ? queue : q)));
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queueKeys.all });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
};
