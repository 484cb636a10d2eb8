import { useState } from "react";
import { formatDuration, useNow } from "../lib/time";

export type LeaseState = { tone: "ok" | "warn" | "expired"; text: string; remainingMs: number };

/** Below this many milliseconds left a lease shows as at risk (until its length is known). */
export const LEASE_WARN_MS = 5_000;
/** Once the lease length is known: at risk below this share of it. A healthy worker renews
 * well before (the engine renews every third of the lease, at least every 2 s), so reaching it
 * means renewals are being missed. */
export const LEASE_WARN_SHARE = 0.4;

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
  // The lease length is not in the job, so learn it: the most time left ever seen (right after
  // a claim or renewal) approximates it, and the warning threshold scales with it.
  const [longest, setLongest] = useState(0);
  const remaining = expiresAt ? Date.parse(expiresAt) - now : 0;
  if (remaining > longest) setLongest(remaining);
  if (!expiresAt) return <span className="muted">no lease</span>;
  const warnMs = longest >= 2_000 ? longest * LEASE_WARN_SHARE : LEASE_WARN_MS;
  const state = leaseState(expiresAt, now, warnMs);
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
