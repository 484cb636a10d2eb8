/** The global event feed (`events/?after=`): the Overview's live activity stream. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import { lastEventId, mergeEvents } from "../lib/events";
import type { EventPage, JobEvent } from "./types";

export const eventKeys = { feed: ["events", "feed"] as const };

/** Keep the newest this many in memory. */
export const ACTIVITY_WINDOW = 50;

/**
 * Kinds the activity feed leaves out: a running job's progress, logs and lease renewals, which
 * would fill it (they stay in the job's own timeline). Outcomes and transitions remain.
 */
export const CHATTER_KINDS = new Set(["progress", "log", "lease_renewed"]);
export const isActivity = (event: Pick<JobEvent, "kind">) => !CHATTER_KINDS.has(event.kind);

/** The feed's events (transitions and outcomes only) and the cursor of the last event read. */
export type ActivityFeed = { events: JobEvent[]; after: number | undefined };

export function activityFeedOptions(queryClient: QueryClient, intervalMs = 1500) {
  return queryOptions({
    queryKey: eventKeys.feed,
    queryFn: async ({ signal }): Promise<ActivityFeed> => {
      const known = queryClient.getQueryData<ActivityFeed>(eventKeys.feed);
      // The cursor follows every event read, shown or not, so that a flood of progress
      // events never holds it back. No cursor yet: the API starts from the latest events.
      const body = await api.get<EventPage>("events/", {
        query: { after: known?.after, limit: ACTIVITY_WINDOW },
        signal,
      });
      const events = mergeEvents(known?.events ?? [], body.results.filter(isActivity)).slice(-ACTIVITY_WINDOW);
      const after = lastEventId(body.results) ?? known?.after ?? undefined;
      return { events, after: body.next_after ?? after };
    },
    ...polling<ActivityFeed>(intervalMs),
  });
}
