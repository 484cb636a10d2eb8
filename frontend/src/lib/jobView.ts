/**
 * What the job page shows, from one source of truth: the job as the detail poll last read it.
 *
 * The page has two polls: the detail (the job's row and its latest events, read together) and
 * the job's event feed. The feed can be a poll ahead: it may already hold the `cancelled`
 * event while the detail still says `running`. Showing both would make the timeline say
 * "Cancelled" next to a "cancelling" badge and a `running` status field. So the timeline
 * shows what the detail's snapshot knows, plus the feed's later events that change nothing
 * the page shows elsewhere (progress, logs, lease renewals); it stops before the first later
 * event that does, and the page refetches the detail at once, which brings the rest.
 */
import type { Job, JobDetail, JobEvent } from "../api/types";
import { lastEventId } from "./events";
import { formatRelative, formatTimestamp } from "./time";

/** Events that change nothing but the progress bar and the lease countdown. */
const NEUTRAL_KINDS = new Set(["progress", "log", "lease_renewed"]);

export type TimelineView = {
  /** The events to show, oldest first. */
  shown: JobEvent[];
  /** The first event held back because the detail does not reflect it yet (refetch it). */
  heldBack: JobEvent | null;
};

/**
 * `events` (merged, oldest first) as of the detail's snapshot. An event is part of that
 * snapshot when the detail carried it, or when it was written no later than the job's last
 * update (a transition writes both in one transaction, with one timestamp).
 */
export function timelineAsOf(job: Pick<JobDetail, "events" | "updated_at">, events: JobEvent[]): TimelineView {
  const boundary = lastEventId(job.events ?? []) ?? 0;
  const updated = Date.parse(job.updated_at);
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.id <= boundary || NEUTRAL_KINDS.has(e.kind)) continue;
    if (Date.parse(e.created_at) <= updated) continue;
    return { shown: events.slice(0, i), heldBack: e };
  }
  return { shown: events, heldBack: null };
}

export type Notice = { tone: "success" | "error" | "warn" | "info"; text: string };

export type LastAction = { verb: "cancel" | "retry"; answer?: Job; error?: unknown };

/**
 * The outcome of the operator's last action, as it reads against the job now: a notice that
 * no longer applies (the cancel that was requested has happened; the retried job has been
 * picked up) goes; errors stay until the next action.
 */
export function actionNotice(
  action: LastAction | null,
  job: Pick<Job, "status" | "cancel_requested_at" | "attempts" | "max_attempts">,
): Notice | null {
  if (!action) return null;
  if (action.error !== undefined && action.error !== null) {
    const reason = action.error instanceof Error ? action.error.message : String(action.error);
    return { tone: "error", text: `Could not ${action.verb}: ${reason}` };
  }
  if (action.verb === "cancel") {
    if (job.status === "running" && job.cancel_requested_at) {
      return {
        tone: "info",
        text: "Cancel requested: the worker stops the handler at its next check, then the job ends cancelled.",
      };
    }
    if (job.status === "cancelled")
      return { tone: "success", text: "Cancelled: no worker will run it. Retry puts it back in the queue." };
    if (job.status === "succeeded" || job.status === "failed") {
      return { tone: "warn", text: `The job ${job.status} before the cancel took effect.` };
    }
    return null;
  }
  if (job.status === "queued") {
    return {
      tone: "success",
      text: `Retried: the job is queued again (attempt ${job.attempts + 1} of ${job.max_attempts} next).`,
    };
  }
  if (job.status === "waiting") {
    return {
      tone: "success",
      text: "Retried: the job waits again for the jobs it depends on, and runs once they have all succeeded.",
    };
  }
  return null;
}

/** The notice after creating the job: while it has not finished (then its outcome speaks). */
export function createdNotice(
  created: { created?: boolean; replayed?: boolean },
  job: Pick<Job, "status" | "available_at">,
  now: number,
): Notice | null {
  if (!created.created) return null;
  if (created.replayed) {
    return {
      tone: "info",
      text: "This idempotency key was used before with the same request: this is the job it created.",
    };
  }
  if (job.status === "queued") {
    // Created with a delay (or run_at): say when it becomes runnable, not "when a worker is free".
    if (Date.parse(job.available_at) - now >= 1000)
      return {
        tone: "success",
        text: `Job created. It waits until ${formatTimestamp(job.available_at)} (${formatRelative(job.available_at, now)}), then runs when a worker is free.`,
      };
    return { tone: "success", text: "Job created. It runs when a worker is free." };
  }
  if (job.status === "running") return { tone: "success", text: "Job created." };
  return null;
}

/** What the Lease card says when no worker holds the job, true to its status. */
export function leaseSummary(job: Pick<Job, "status" | "attempts" | "available_at">, now: number): string {
  switch (job.status) {
    case "queued":
      if (job.attempts === 0) return "Not claimed yet: no worker holds it.";
      return Date.parse(job.available_at) > now
        ? "Waiting out its retry back-off: no worker holds it until then."
        : "Waiting for a worker to claim its next attempt.";
    case "running":
      return "No worker holds a lease on it right now.";
    case "succeeded":
      return "None: the job succeeded and its worker let go.";
    case "failed":
      return "None: the job failed; no worker holds it.";
    case "cancelled":
      return "None: the job was cancelled; no worker holds it.";
    default:
      return "No worker holds it.";
  }
}

/**
 * The job's progress, from whichever of the two polls saw it last: the detail, or a progress
 * event of the running attempt that the event feed brought in since.
 */
export function currentProgress(job: JobDetail, events: JobEvent[]): { percent: number | null; message: string } {
  const fromJob = { percent: job.progress.percent, message: job.progress.message };
  if (job.status !== "running") return fromJob;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.kind !== "progress" || e.attempt !== job.attempts) continue;
    const percent = (e.data as { percent?: unknown }).percent;
    if (typeof percent !== "number" || Date.parse(e.created_at) <= Date.parse(job.updated_at)) return fromJob;
    return { percent, message: e.message };
  }
  return fromJob;
}
