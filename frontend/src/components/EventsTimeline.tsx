import { useState } from "react";
import type { JobEvent } from "../api/types";
import { type RunningJob, timelineItems } from "../lib/events";
import { formatClock } from "../lib/time";
import { Traceback } from "./Traceback";

const KIND_LABEL: Record<string, string> = {
  created: "Created",
  claimed: "Claimed",
  started: "Started",
  lease_renewed: "Lease renewed",
  progress: "Progress",
  log: "Log",
  succeeded: "Succeeded",
  failed: "Failed",
  retry_scheduled: "Retry scheduled",
  lease_expired: "Lease expired",
  lease_lost: "Lease lost",
  timed_out: "Timed out",
  released: "Released",
  snoozed: "Snoozed",
  cancel_requested: "Cancel requested",
  cancelled: "Cancelled",
  retried: "Retried",
};

/** "Retry scheduled" for `retry_scheduled`: every kind capitalised, the ones named above and any
 * other (blocked, unblocked, stuck_handler ...) alike. */
export const kindLabel = (kind: string) => {
  const words = kind.replace(/_/g, " ");
  return KIND_LABEL[kind] ?? words.charAt(0).toUpperCase() + words.slice(1);
};

/** A one-line summary of an event's data (progress percent, retry delay, error). */
export function eventDetail(event: Pick<JobEvent, "kind" | "message" | "data">): string {
  const data = (event.data ?? {}) as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof data.percent === "number") parts.push(`${data.percent}%`);
  if (event.message) parts.push(event.message);
  if (typeof data.delay_seconds === "number") parts.push(`retry in ${data.delay_seconds.toFixed(1)} s`);
  if (typeof data.error === "string" && !event.message.includes(data.error)) parts.push(data.error);
  if (event.kind === "edited") parts.push(...editedChanges(data));
  return parts.join(" · ");
}

/** An `edited` event's changes, old and new: "priority 1 → 7", "run time 08:00 → now". */
function editedChanges(data: Record<string, unknown>): string[] {
  const pair = (value: unknown) => (Array.isArray(value) && value.length === 2 ? value : null);
  const out: string[] = [];
  const priority = pair(data.priority);
  if (priority) out.push(`priority ${String(priority[0])} → ${String(priority[1])}`);
  const at = pair(data.available_at);
  if (at) {
    const show = (v: unknown) => new Date(String(v)).toLocaleString();
    out.push(`run time ${show(at[0])} → ${show(at[1])}`);
  }
  return out;
}

/** The traceback a failure event keeps for its attempt (data.traceback), if any. */
export function eventTraceback(event: Pick<JobEvent, "data">): string | null {
  const tb = ((event.data ?? {}) as Record<string, unknown>).traceback;
  return typeof tb === "string" && tb ? tb : null;
}

/**
 * The job's events, oldest first, with each attempt's start: the claim writes no event, so the
 * start is read from the event that ended the attempt (`data.started_at`, its worker), or for
 * the attempt running now from the job row (`job`); old history shows its `claimed` events.
 * A failure event (retry scheduled, failed, cancelled) carries
 * its own attempt's traceback, folded under "Traceback", so every attempt's error can be read,
 * not only the last one's. Runs of lease renewals and progress reports fold into one
 * row (the newest, with a count), so that state changes stay readable while the job runs.
 * Rows that arrived since the last render flash briefly.
 */
export function EventsTimeline({ events, job }: { events: JobEvent[]; job?: RunningJob | null }) {
  // The newest event id of the previous list: rows after it are new since then.
  const lastId = events.length ? events[events.length - 1].id : null;
  const [seen, setSeen] = useState<{ lastId: number | null; previousMax: number | null }>({
    lastId,
    previousMax: null,
  });
  if (seen.lastId !== lastId) setSeen({ lastId, previousMax: seen.lastId });
  const previousMax = seen.previousMax;
  const items = timelineItems(events, job);
  if (items.length === 0) return <p className="muted">No events yet.</p>;
  return (
    <ol className="timeline" data-testid="events-timeline" aria-live="polite" aria-relevant="additions">
      {items.map((item) => {
        if (item.type === "start") {
          const { start } = item;
          return (
            <li key={item.key} className="k-claimed k-started" data-kind="started">
              <div className="ev-head">
                <span className="ev-kind">{kindLabel("started")}</span>
                <span className="ev-meta">
                  {formatClock(start.started_at)}
                  {start.attempt ? ` · attempt ${start.attempt}` : ""}
                  {start.worker_id ? ` · ${start.worker_id}` : ""}
                </span>
              </div>
            </li>
          );
        }
        const { event, count, first } = item.entry;
        const fresh = previousMax !== null && event.id > previousMax;
        const detail = eventDetail(event);
        const traceback = eventTraceback(event);
        return (
          <li
            key={first.id}
            className={`k-${event.kind}${fresh ? " fresh" : ""}`}
            data-kind={event.kind}
            data-event-id={event.id}
          >
            <div className="ev-head">
              <span className="ev-kind">{kindLabel(event.kind)}</span>
              {count > 1 && (
                <span className="ev-count" title={`${count} events`}>
                  ×{count}
                </span>
              )}
              <span className="ev-meta">
                {formatClock(event.created_at)}
                {event.attempt ? ` · attempt ${event.attempt}` : ""}
                {event.worker_id ? ` · ${event.worker_id}` : ""}
              </span>
            </div>
            {detail && <div className="ev-msg">{detail}</div>}
            {traceback && (
              <details className="ev-traceback" data-testid={`traceback-${event.id}`}>
                <summary>Traceback{event.attempt ? ` of attempt ${event.attempt}` : ""}</summary>
                <Traceback text={traceback} label={`Traceback of attempt ${event.attempt ?? ""}`.trim()} />
              </details>
            )}
          </li>
        );
      })}
    </ol>
  );
}
