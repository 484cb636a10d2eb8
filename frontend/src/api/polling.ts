/**
 * The one polling helper. Resource modules spread it into their query options:
 *
 *     queryOptions({ queryKey, queryFn, ...polling(2000) })
 *     queryOptions({ queryKey, queryFn, ...polling(1000, { stopWhen: (job) => isFinished(job) }) })
 *
 * It polls every `intervalMs` while the tab is visible (TanStack pauses interval refetches in
 * hidden tabs), backs off exponentially while the server keeps failing (so a down API is not
 * hammered by every open dashboard), and slows to `settledIntervalMs` once `stopWhen` says the
 * data will not change any more (a finished job) — or stops entirely when that is `false`.
 */
import type { Query } from "@tanstack/react-query";

export type PollingOptions<T> = {
  /** Data that will not change again: poll at `settledIntervalMs` instead (default: stop). */
  stopWhen?: (data: T) => boolean;
  settledIntervalMs?: number | false;
  /** Upper bound of the error back-off. */
  maxBackoffMs?: number;
};

export type PollState<T> = { data: T | undefined; errorCount: number };

/** Milliseconds until the next poll, or `false` for none. Pure: the tests drive it directly. */
export function nextPollInterval<T>(
  intervalMs: number,
  state: PollState<T>,
  { stopWhen, settledIntervalMs = false, maxBackoffMs = 30_000 }: PollingOptions<T> = {},
): number | false {
  if (state.errorCount > 0) {
    return Math.min(maxBackoffMs, intervalMs * 2 ** Math.min(state.errorCount, 10));
  }
  if (state.data !== undefined && stopWhen?.(state.data)) return settledIntervalMs;
  return intervalMs;
}

export function polling<T>(intervalMs: number, options: PollingOptions<T> = {}) {
  return {
    refetchInterval: (query: Query<T, Error, T, readonly unknown[]>) =>
      nextPollInterval(
        intervalMs,
        {
          data: query.state.data,
          // fetchFailureCount is reset on success, so it counts consecutive failures.
          errorCount: query.state.status === "error" ? Math.max(1, query.state.fetchFailureCount) : 0,
        },
        options,
      ),
    refetchIntervalInBackground: false,
    // Data younger than one interval is fresh enough for a remount not to refetch at once.
    staleTime: Math.max(0, intervalMs - 250),
  } as const;
}
