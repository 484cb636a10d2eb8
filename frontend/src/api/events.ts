/** The global event feed (`events/?cursor=`): the Overview's live activity stream, every database's. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import { appendFeedEvents } from "../lib/events";
import type { FeedEvent, FeedPage } from "./types";

export const eventKeys = { feed: ["events", "feed"] as const };

/** Keep the newest this many in memory. */
export const ACTIVITY_WINDOW = 50;

/**
 * Kinds the activity feed leaves out: a running job's progress, logs and lease renewals, which
 * would fill it (they stay in the job's own timeline). Outcomes and transitions remain.
 */
export const CHATTER_KINDS = new Set(["progress", "log", "lease_renewed"]);
export const isActivity = (event: Pick<FeedEvent, "kind">) => !CHATTER_KINDS.has(event.kind);

/**
 * The feed's events (transitions and outcomes only), each with its database (`shard`), and
 * the cursor after the last event read: every database's position, so that with shards no
 * event of any is skipped or shown twice.
 */
export type ActivityFeed = { events: FeedEvent[]; cursor: string | undefined };

export function activityFeedOptions(queryClient: QueryClient, intervalMs = 1500) {
  return queryOptions({
    queryKey: eventKeys.feed,
    queryFn: async ({ signal }): Promise<ActivityFeed> => {
      const known = queryClient.getQueryData<ActivityFeed>(eventKeys.feed);
      // The cursor follows every event read, shown or not, so that a flood of progress
      // events never holds it back. No cursor yet: the API starts from the latest events.
      const body = await api.get<FeedPage>("events/", {
        query: { cursor: known?.cursor, limit: ACTIVITY_WINDOW },
        signal,
      });
      const events = appendFeedEvents(known?.events ?? [], body.results.filter(isActivity)).slice(-ACTIVITY_WINDOW);
      return { events, cursor: body.next_cursor };
    },
    ...polling<ActivityFeed>(intervalMs),
  });
}
