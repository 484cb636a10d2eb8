import type { ReactNode } from "react";
import { isApiError } from "../api/client";
import { isFinalFailure, useRefreshSettings } from "../api/polling";

export function Loading({ label = "Loading…", rows = 3 }: { label?: string; rows?: number }) {
  return (
    <div role="status" aria-live="polite" aria-busy="true">
      <span className="sr-only">{label}</span>
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} className="skeleton" style={{ width: `${90 - i * 12}%` }} />
      ))}
    </div>
  );
}

export function ErrorState({
  error,
  onRetry,
  title = "Could not load this",
}: {
  error: unknown;
  onRetry?: () => void;
  title?: string;
}) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="notice error" role="alert">
      <strong>{title}.</strong> {message}
      {isApiError(error, 403) && <div className="hint">Your account lacks the permission this needs.</div>}
      {onRetry && (
        <div style={{ marginTop: 8 }}>
          <button type="button" className="small" onClick={onRetry}>
            Try again
          </button>
        </div>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state">
      <strong>{title}</strong>
      {children}
    </div>
  );
}

export type LiveView = { tone: "live" | "paused" | "error" | "stopped"; text: string };

/**
 * What the live dot says. A failure that asking again can fix (no answer, 5xx, 429) is a
 * connection problem being retried; a refusal (a 4xx: a bad filter, a missing job) is not
 * retried and says so, next to the page's own explanation.
 */
export function describeLive({
  isError,
  error,
  isFetching,
  paused,
  refreshPaused,
}: {
  isError: boolean;
  error?: unknown;
  isFetching?: boolean;
  paused?: boolean;
  refreshPaused?: boolean;
}): LiveView {
  if (isError && isApiError(error) && isFinalFailure(error.status)) {
    return { tone: "stopped", text: "Not refreshing: the request was refused" };
  }
  if (isError) return { tone: "error", text: "Connection problem — retrying" };
  if (refreshPaused) return { tone: "paused", text: "Paused" };
  if (paused) return { tone: "paused", text: "Not refreshing" };
  return { tone: "live", text: isFetching ? "Live · updating" : "Live" };
}

/** "Live" while polling succeeds; says so when the last poll failed (data may be stale). */
export function LiveIndicator(props: { isError: boolean; error?: unknown; isFetching?: boolean; paused?: boolean }) {
  const { paused: refreshPaused } = useRefreshSettings();
  const view = describeLive({ ...props, refreshPaused });
  return (
    <span className={view.tone === "live" ? "live" : `live ${view.tone}`} aria-live="polite" data-testid="live">
      {view.text}
    </span>
  );
}
