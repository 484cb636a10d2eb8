/** The global event feed (`events/?after=`): the Overview's live activity stream. */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import { lastEventId, mergeEvents } from "../lib/events";
import type { EventPage, JobEvent } from "./types";

export const eventKeys = { feed: ["events", "feed"] as const };

/** Keep the newest this many in memory. */
export const ACTIVITY_WINDOW = 50;

export function activityFeedOptions(queryClient: QueryClient, intervalMs = 1500) {
  return queryOptions({
    queryKey: eventKeys.feed,
    queryFn: async ({ signal }) => {
      const known = queryClient.getQueryData<JobEvent[]>(eventKeys.feed) ?? [];
      const after = lastEventId(known);
      // No cursor yet: the API starts from the latest events.
      const body = await api.get<EventPage>("events/", {
        query: { after, limit: ACTIVITY_WINDOW },
        signal,
      });
      return mergeEvents(known, body.results).slice(-ACTIVITY_WINDOW);
    },
    ...polling<JobEvent[]>(intervalMs),
  });
}
