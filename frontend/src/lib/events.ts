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
