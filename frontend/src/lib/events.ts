/**
 * The live timeline is built by polling `events/?after=<last id>` and appending. Polls can
 * overlap (a refetch on focus while an interval poll is in flight) and the job detail also
 * carries its latest events, so the same event can arrive twice or out of order: merging keeps
 * exactly one copy of each id, ordered by id (ids only grow on the server).
 */
export type FeedEvent = { id: number; kind: string; created_at?: string | null };

export function mergeEvents<E extends FeedEvent>(existing: readonly E[], incoming: readonly E[]): E[] {
  const byId = new Map<number, E>();
  for (const e of existing) byId.set(e.id, e);
  let added = false;
  for (const e of incoming) {
    // Events never change once written: the first copy seen stays.
    if (!byId.has(e.id)) {
      byId.set(e.id, e);
      added = true;
    }
  }
  // Nothing new: the same array back, so React Query sees no change and nothing re-renders.
  if (!added && isSorted(existing)) return existing as E[];
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function isSorted(events: readonly FeedEvent[]): boolean {
  for (let i = 1; i < events.length; i++) if (events[i - 1].id >= events[i].id) return false;
  return true;
}

/** The cursor for the next poll: the highest id seen, or undefined for "from the start". */
export function lastEventId(events: readonly FeedEvent[]): number | undefined {
  let max: number | undefined;
  for (const e of events) if (max === undefined || e.id > max) max = e.id;
  return max;
}

/**
 * An event of the feed of every job (`events/`) is named by its database and its id: ids are
 * unique within one database only (with JOB_SHARDS, each shard counts its own).
 */
export const feedEventKey = (event: { shard: string; id: number }) => `${event.shard}:${event.id}`;

/**
 * The activity feed's events with a poll's appended: in the feed's order (every database's
 * merged by time, as the API gives them), each event once (polls can overlap, as above).
 */
export function appendFeedEvents<E extends { shard: string; id: number }>(
  existing: readonly E[],
  incoming: readonly E[],
): E[] {
  const known = new Set(existing.map(feedEventKey));
  const added = incoming.filter((e) => {
    const key = feedEventKey(e);
    if (known.has(key)) return false;
    known.add(key);
    return true;
  });
  return added.length ? [...existing, ...added] : (existing as E[]);
}

/** Event kinds that arrive in runs and would drown the timeline when shown one by one. */
export const COLLAPSIBLE_KINDS = new Set(["lease_renewed", "progress"]);

export type TimelineEntry<E extends FeedEvent> = { event: E; count: number; first: E };

/**
 * Consecutive events of a collapsible kind become one entry showing the newest of the run and
 * how many it stands for ("lease renewed ×12"). Anything else stays one entry per event.
 */
export function compactEvents<E extends FeedEvent>(events: readonly E[]): TimelineEntry<E>[] {
  const out: TimelineEntry<E>[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if (last && COLLAPSIBLE_KINDS.has(event.kind) && last.event.kind === event.kind) {
      out[out.length - 1] = { event, count: last.count + 1, first: last.first };
    } else {
      out.push({ event, count: 1, first: event });
    }
  }
  return out;
}

/**
 * The claim writes no event (history v2): an attempt's start is carried by the event that ended
 * it (`data.started_at`, `data.lease_token`, its `worker_id`), and the attempt running now is
 * on the job row (`started_at`, `locked_by`, `lease_token`). History written before keeps its
 * `claimed` events, which show as they are. A derived start is placed before its attempt's
 * first event (its progress, logs and cancel request come after it).
 */
export type AttemptStart = {
  attempt: number;
  worker_id: string | null;
  started_at: string;
  lease_token: string | null;
};

type StartEvent = FeedEvent & {
  attempt?: number | null;
  worker_id?: string | null;
  data?: unknown;
};

export type RunningJob = {
  status: string;
  attempts: number;
  started_at: string | null;
  locked_by: string | null;
  lease_token: string | null;
};

export type TimelineItem<E extends FeedEvent> =
  { type: "event"; entry: TimelineEntry<E> } | { type: "start"; key: string; start: AttemptStart };

/** Events that end an attempt (with its start since history v2, without it before). */
const ATTEMPT_ENDS = new Set([
  "succeeded",
  "failed",
  "retry_scheduled",
  "lease_expired",
  "released",
  "snoozed",
  "parked",
  "cancelled",
]);

/** Events an attempt's start precedes: those written while it ran. */
const DURING_ATTEMPT = new Set(["progress", "log", "lease_renewed", "lease_lost", "cancel_requested"]);

function startOf(event: StartEvent): AttemptStart | null {
  if (event.kind === "claimed") return null;
  const data = (event.data ?? {}) as Record<string, unknown>;
  if (typeof data.started_at !== "string") return null;
  return {
    attempt: event.attempt ?? 0,
    worker_id: event.worker_id ?? null,
    started_at: data.started_at,
    lease_token: typeof data.lease_token === "string" ? data.lease_token : null,
  };
}

/** Before index `end`: where the start of `attempt` goes (before that attempt's own events). */
function startPosition<E extends StartEvent>(
  items: TimelineItem<E>[],
  end: number,
  attempt: number,
  at: string,
): number {
  let pos = end;
  const startMs = Date.parse(at);
  while (pos > 0) {
    const prev = items[pos - 1];
    if (prev.type !== "event") break;
    const e = prev.entry.first;
    const created = e.created_at ? Date.parse(e.created_at) : NaN;
    if (!DURING_ATTEMPT.has(e.kind) || e.attempt !== attempt || !(created >= startMs)) break;
    pos--;
  }
  return pos;
}

/**
 * The timeline's rows: the events (runs of renewals and progress folded, compactEvents) with
 * each attempt's start shown as a row of its own, derived from the event that ended it or,
 * for the attempt running now, from the job row.
 */
export function timelineItems<E extends StartEvent>(events: readonly E[], job?: RunningJob | null): TimelineItem<E>[] {
  const items: TimelineItem<E>[] = [];
  const claimedTokens = new Set<string>();
  // The attempt of the latest `claimed` row not followed by an outcome carrying a start: an
  // attempt claimed before history v2 that may still run.
  let openClaim: number | null = null;
  for (const entry of compactEvents(events)) {
    const event = entry.event;
    if (event.kind === "claimed") {
      const token = ((event.data ?? {}) as Record<string, unknown>).lease_token;
      if (typeof token === "string") claimedTokens.add(token);
      openClaim = event.attempt ?? null;
    }
    const start = startOf(event);
    if (start || ATTEMPT_ENDS.has(event.kind)) openClaim = null;
    if (start && !(start.lease_token && claimedTokens.has(start.lease_token))) {
      const pos = startPosition(items, items.length, start.attempt, start.started_at);
      items.splice(pos, 0, { type: "start", key: `start-${event.id}`, start });
    }
    items.push({ type: "event", entry });
  }
  const claimedAlready = (job?.lease_token && claimedTokens.has(job.lease_token)) || openClaim === job?.attempts;
  if (job && job.status === "running" && job.started_at && !claimedAlready) {
    const start = {
      attempt: job.attempts,
      worker_id: job.locked_by,
      started_at: job.started_at,
      lease_token: job.lease_token,
    };
    const pos = startPosition(items, items.length, start.attempt, start.started_at);
    items.splice(pos, 0, { type: "start", key: "start-running", start });
  }
  return items;
}
