/**
 * The one polling helper, and the one place that decides when the dashboard polls at all.
 * Resource modules spread it into their query options:
 *
 *     queryOptions({ queryKey, queryFn, ...polling(2000) })
 *     queryOptions({ queryKey, queryFn, ...polling(1000, { stopWhen: (job) => isFinished(job) }) })
 *
 * - It polls every `intervalMs` (the view's own rate), or at the rate the person chose in the
 *   refresh control (`setRefreshSettings({ everyMs })`, remembered in localStorage).
 * - Nothing polls while the tab is hidden or while the person paused refreshing: both make
 *   TanStack's focus state "unfocused" (connectPolling below), so interval ticks fetch nothing
 *   and retries wait; becoming visible or resuming refetches what went stale meanwhile.
 * - It backs off exponentially while the server keeps failing (so a down API is not hammered
 *   by every open dashboard), and stops on an answer that asking again cannot change (a 4xx
 *   such as a bad filter: 400, or 403, 404), except 408 and 429.
 * - It slows to `settledIntervalMs` once `stopWhen` says the data will not change any more (a
 *   finished job), or stops entirely when that is `false`.
 */
import { focusManager, type Query, type QueryClient } from "@tanstack/react-query";
import { useSyncExternalStore } from "react";
import { ApiError } from "./client";

export type PollingOptions<T> = {
  /** Data that will not change again: poll at `settledIntervalMs` instead (default: stop). */
  stopWhen?: (data: T) => boolean;
  settledIntervalMs?: number | false;
  /** Upper bound of the error back-off. */
  maxBackoffMs?: number;
};

export type PollState<T> = {
  data: T | undefined;
  errorCount: number;
  /** The HTTP status of the last failure (0: no answer), when the last poll failed. */
  errorStatus?: number | null;
};

// ---- the person's choice: how often, or not at all --------------------------------------------

export type RefreshSettings = {
  /** Poll every this many milliseconds everywhere; null: each view's own rate ("Auto"). */
  everyMs: number | null;
  /** No polling at all until resumed (a page still loads once when opened). */
  paused: boolean;
};

export const REFRESH_CHOICES: readonly { everyMs: number | null; label: string }[] = [
  { everyMs: null, label: "Auto" },
  { everyMs: 2_000, label: "2 s" },
  { everyMs: 5_000, label: "5 s" },
  { everyMs: 15_000, label: "15 s" },
  { everyMs: 60_000, label: "1 min" },
];

export const REFRESH_STORAGE_KEY = "jobqueue.refresh";
const DEFAULT_SETTINGS: RefreshSettings = { everyMs: null, paused: false };

function loadSettings(): RefreshSettings {
  try {
    const raw = JSON.parse(globalThis.localStorage?.getItem(REFRESH_STORAGE_KEY) ?? "null") as unknown;
    if (!raw || typeof raw !== "object") return { ...DEFAULT_SETTINGS };
    const { everyMs, paused } = raw as Record<string, unknown>;
    return {
      everyMs: REFRESH_CHOICES.some((c) => c.everyMs === everyMs) ? (everyMs as number | null) : null,
      paused: paused === true,
    };
  } catch {
    return { ...DEFAULT_SETTINGS };
  }
}

let settings: RefreshSettings = loadSettings();
const listeners = new Set<() => void>();

export function getRefreshSettings(): RefreshSettings {
  return settings;
}

export function setRefreshSettings(patch: Partial<RefreshSettings>): void {
  const next = { ...settings, ...patch };
  if (next.everyMs === settings.everyMs && next.paused === settings.paused) return;
  settings = next;
  try {
    globalThis.localStorage?.setItem(REFRESH_STORAGE_KEY, JSON.stringify(settings));
  } catch {
    /* private mode, quota: the choice lasts for this page only */
  }
  for (const listener of [...listeners]) listener();
}

export function subscribeRefreshSettings(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Tests: read the stored choice again (or the default). */
export function resetRefreshSettings(): void {
  settings = loadSettings();
  for (const listener of [...listeners]) listener();
}

export function useRefreshSettings(): RefreshSettings {
  return useSyncExternalStore(subscribeRefreshSettings, getRefreshSettings);
}

/** Polling is allowed while the tab is visible and the person has not paused it. */
export function pollingAllowed(doc: Document | undefined = globalThis.document): boolean {
  const visible = !doc || doc.visibilityState !== "hidden";
  return visible && !settings.paused;
}

/**
 * Wire the rules into TanStack Query (once, at start-up; the returned function undoes it).
 * Its focus state becomes "the tab is visible and refreshing is not paused": while it is
 * false, interval ticks fetch nothing; when it turns true, queries that went stale refetch.
 * Choosing another rate refetches the active queries at once, which restarts their timers at
 * the new rate.
 */
export function connectPolling(queryClient: QueryClient): () => void {
  focusManager.setEventListener((setFocused) => {
    const update = () => setFocused(pollingAllowed());
    document.addEventListener("visibilitychange", update);
    const unsubscribe = subscribeRefreshSettings(update);
    update();
    return () => {
      document.removeEventListener("visibilitychange", update);
      unsubscribe();
    };
  });
  let every = settings.everyMs;
  const unsubscribe = subscribeRefreshSettings(() => {
    if (settings.everyMs === every) return;
    every = settings.everyMs;
    if (pollingAllowed()) void queryClient.refetchQueries({ type: "active" });
  });
  return () => {
    unsubscribe();
    // Back to TanStack's own listener (the tab's visibility).
    focusManager.setEventListener((onFocus) => {
      const listener = () => onFocus();
      window.addEventListener("visibilitychange", listener, false);
      return () => window.removeEventListener("visibilitychange", listener);
    });
    focusManager.setFocused(undefined);
  };
}

// ---- the interval ------------------------------------------------------------------------------

/** A failure that asking again will not change (the filter is bad, the job does not exist). */
export function isFinalFailure(status: number | null | undefined): boolean {
  return typeof status === "number" && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/**
 * Milliseconds until the next poll, or `false` for none. Pure: the tests drive it directly.
 * `everyMs` is the person's chosen rate (null: the view's own `intervalMs`).
 */
export function nextPollInterval<T>(
  intervalMs: number,
  state: PollState<T>,
  { stopWhen, settledIntervalMs = false, maxBackoffMs = 30_000 }: PollingOptions<T> = {},
  everyMs: number | null = null,
): number | false {
  const base = everyMs ?? intervalMs;
  if (state.errorCount > 0) {
    if (isFinalFailure(state.errorStatus)) return false;
    return Math.min(Math.max(maxBackoffMs, base), base * 2 ** Math.min(state.errorCount, 10));
  }
  if (state.data !== undefined && stopWhen?.(state.data)) {
    return settledIntervalMs === false ? false : Math.max(settledIntervalMs, base);
  }
  return base;
}

/** Each query's error count at its last success: the failed polls since are the streak. */
const errorsAtLastSuccess = new WeakMap<object, number>();

/** How many polls in a row failed (TanStack's fetchFailureCount restarts with every fetch). */
function failureStreak(query: { state: { status: string; errorUpdateCount: number } }): number {
  const { status, errorUpdateCount } = query.state;
  if (status === "success") errorsAtLastSuccess.set(query, errorUpdateCount);
  // "pending": a query without data goes back to it at each fetch; the answer decides.
  if (status !== "error") return 0;
  return Math.max(1, errorUpdateCount - (errorsAtLastSuccess.get(query) ?? 0));
}

export function polling<T>(intervalMs: number, options: PollingOptions<T> = {}) {
  return {
    refetchInterval: (query: Query<T, Error, T, readonly unknown[]>) => {
      const errorCount = failureStreak(query);
      const error = query.state.error;
      return nextPollInterval(
        intervalMs,
        {
          data: query.state.data,
          errorCount,
          errorStatus: errorCount > 0 && error instanceof ApiError ? error.status : null,
        },
        options,
        settings.everyMs,
      );
    },
    refetchIntervalInBackground: false,
    // Data younger than one interval is fresh enough for a remount not to refetch at once.
    staleTime: Math.max(0, intervalMs - 250),
  } as const;
}
