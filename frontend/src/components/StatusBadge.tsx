import { isStatus } from "../lib/statuses";
import { useNow } from "../lib/time";

/** The fields of a job that decide how its status reads (a structural subset of the API's Job). */
export type StatusFacts = {
  status: string;
  attempts?: number | null;
  max_attempts?: number | null;
  available_at?: string | null;
  cancel_requested_at?: string | null;
  lease_expires_at?: string | null;
};

export type StatusView = { status: string; label: string; tone: string; hint: string | null };

/**
 * The badge's text. Beyond the raw status it calls out what an operator needs at a glance:
 * a queued job waiting out a retry back-off, a delayed job, a running job whose lease has
 * run out (its worker is likely gone; the reaper will requeue it) or that is being cancelled.
 */
export function describeStatus(job: StatusFacts, now: number): StatusView {
  const attempts = job.attempts ?? 0;
  const max = job.max_attempts ?? null;
  const tries = max ? `attempt ${attempts}/${max}` : null;
  switch (job.status) {
    case "waiting":
      return { status: "waiting", label: "waiting", tone: "waiting", hint: "for the jobs it depends on" };
    case "queued": {
      const waiting = job.available_at ? Date.parse(job.available_at) > now : false;
      if (waiting && attempts > 0) {
        return { status: "queued", label: "retry scheduled", tone: "retrying", hint: `after ${tries}` };
      }
      if (waiting) return { status: "queued", label: "scheduled", tone: "scheduled", hint: null };
      if (attempts > 0) return { status: "queued", label: "queued (retry)", tone: "retrying", hint: `after ${tries}` };
      return { status: "queued", label: "queued", tone: "queued", hint: null };
    }
    case "running": {
      if (job.cancel_requested_at) return { status: "running", label: "cancelling", tone: "cancelling", hint: tries };
      if (job.lease_expires_at && Date.parse(job.lease_expires_at) < now) {
        return {
          status: "running",
          label: "lease expired",
          tone: "stale",
          hint: "the worker stopped renewing its lease",
        };
      }
      return { status: "running", label: "running", tone: "running", hint: tries };
    }
    case "succeeded":
      return { status: "succeeded", label: "succeeded", tone: "succeeded", hint: attempts > 1 ? `on ${tries}` : null };
    case "failed":
      return { status: "failed", label: "failed", tone: "failed", hint: tries };
    case "cancelled":
      return { status: "cancelled", label: "cancelled", tone: "cancelled", hint: null };
    default:
      return { status: job.status, label: job.status || "unknown", tone: "unknown", hint: null };
  }
}

export function StatusBadge({ job, now: fixedNow }: { job: StatusFacts; now?: number }) {
  const tickingNow = useNow(1000);
  const view = describeStatus(job, fixedNow ?? tickingNow);
  return (
    <span
      className={`badge badge-${view.tone}`}
      data-status={view.status}
      data-testid="status-badge"
      title={view.hint ?? undefined}
    >
      {view.label}
    </span>
  );
}

/** A plain status (filters, metrics): no job facts to refine it. */
export function StatusPill({ status }: { status: string }) {
  return (
    <span className={`badge badge-${isStatus(status) ? status : "unknown"}`} data-status={status}>
      {status}
    </span>
  );
}
