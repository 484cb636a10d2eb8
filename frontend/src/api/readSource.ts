import { useSyncExternalStore } from "react";

/**
 * Where the API last read from, when the server reads from a streaming replica
 * (JOB_READ_DATABASE): every GET answer says so in headers, and the sidebar shows it.
 * `null` until an answer carries the headers (no replica configured: never).
 */
export type ReadSource = {
  from: "replica" | "primary";
  /** Seconds behind the primary, when the server knows. */
  lag: number | null;
  /** Why the replica was left aside, when it was. */
  fallback: string | null;
};

let current: ReadSource | null = null;
const listeners = new Set<() => void>();

export function noteReadSource(headers: Headers): void {
  const from = headers.get("X-Job-Read-From");
  if (from !== "replica" && from !== "primary") return;
  const lagText = headers.get("X-Job-Read-Lag");
  const lag = lagText === null || lagText === "" ? null : Number(lagText);
  const next: ReadSource = {
    from,
    lag: lag !== null && Number.isFinite(lag) ? lag : null,
    fallback: headers.get("X-Job-Read-Fallback"),
  };
  if (current && current.from === next.from && current.lag === next.lag && current.fallback === next.fallback) return;
  current = next;
  listeners.forEach((listener) => listener());
}

export function resetReadSource(): void {
  current = null;
  listeners.forEach((listener) => listener());
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function useReadSource(): ReadSource | null {
  return useSyncExternalStore(
    subscribe,
    () => current,
    () => null,
  );
}
