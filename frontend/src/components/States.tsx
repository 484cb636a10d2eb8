import type { ReactNode } from "react";
import { isApiError } from "../api/client";

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

/** "Live" while polling succeeds; says so when the last poll failed (data may be stale). */
export function LiveIndicator({
  isError,
  isFetching,
  paused,
}: {
  isError: boolean;
  isFetching?: boolean;
  paused?: boolean;
}) {
  const cls = isError ? "live error" : paused ? "live paused" : "live";
  const text = isError
    ? "Connection problem — retrying"
    : paused
      ? "Not refreshing"
      : isFetching
        ? "Live · updating"
        : "Live";
  return (
    <span className={cls} aria-live="polite">
      {text}
    </span>
  );
}
