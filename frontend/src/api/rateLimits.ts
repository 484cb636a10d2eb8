/** Rate limits: those in force with their use now (GET rate-limits/), set one, remove one. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { RateLimit, RateLimitSet } from "./types";

export const rateLimitKeys = { all: ["rate-limits"] as const };

/** Polled: the use of a one-second window changes all the time. */
export function rateLimitsOptions(intervalMs = 2000) {
  return queryOptions({
    queryKey: rateLimitKeys.all,
    queryFn: ({ signal }) => api.get<RateLimit[]>("rate-limits/", { signal }),
    ...polling<RateLimit[]>(intervalMs),
  });
}

/** A scope as the API names it: exactly one of queue, type, key. */
export type RateScope = { kind: RateLimit["kind"]; name: string };

export const scopeBody = ({ kind, name }: RateScope) => ({ [kind]: name });

export const rateLimitMutations = {
  /** Set (or replace) a scope's limit; needs change_queuesetting. */
  set: (queryClient: QueryClient) => ({
    mutationFn: ({
      kind,
      name,
      max_starts,
      period_seconds,
    }: RateScope & Pick<RateLimitSet, "max_starts" | "period_seconds">) =>
      api.post<RateLimit>("rate-limits/", { ...scopeBody({ kind, name }), max_starts, period_seconds }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: rateLimitKeys.all }),
  }),
  /** Remove a limit set at run time (a declared one then holds again). */
  remove: (queryClient: QueryClient) => ({
    mutationFn: (scope: RateScope) => api.post<{ removed: boolean }>("rate-limits/remove/", scopeBody(scope)),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: rateLimitKeys.all }),
  }),
};
