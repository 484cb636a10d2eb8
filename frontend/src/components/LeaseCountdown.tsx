import { formatDuration, useNow } from "../lib/time";

export type LeaseState = { tone: "ok" | "warn" | "expired"; text: string; remainingMs: number };

/** Below this many milliseconds left a lease shows as at risk. */
export const LEASE_WARN_MS = 5_000;

/**
 * How a lease deadline reads at `now`. A renewed lease moves its deadline forward, so a healthy
 * worker keeps this "ok"; a stuck or dead one lets it run into "warn" then "expired" (the reaper
 * will requeue the job).
 */
export function leaseState(expiresAt: string, now: number, warnMs = LEASE_WARN_MS): LeaseState {
  const remainingMs = Date.parse(expiresAt) - now;
  if (Number.isNaN(remainingMs)) return { tone: "expired", text: "unknown", remainingMs: 0 };
  if (remainingMs <= 0) {
    return { tone: "expired", text: `expired ${formatDuration(remainingMs)} ago`, remainingMs };
  }
  return { tone: remainingMs < warnMs ? "warn" : "ok", text: `expires in ${formatDuration(remainingMs)}`, remainingMs };
}

export function LeaseCountdown({ expiresAt, tickMs = 250 }: { expiresAt: string | null | undefined; tickMs?: number }) {
  const now = useNow(tickMs);
  if (!expiresAt) return <span className="muted">no lease</span>;
  const state = leaseState(expiresAt, now);
  return (
    <span
      className={`lease lease-${state.tone}`}
      data-testid="lease-countdown"
      title={`Lease deadline ${new Date(expiresAt).toISOString()}`}
    >
      <span className="lease-dot" aria-hidden="true" />
      {state.text}
    </span>
  );
}
