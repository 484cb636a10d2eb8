/**
 * The overview's route: the metrics (polled every 2 s) and the activity feed;
 * views/OverviewView.tsx renders them. The throughput and queues panels load their own (they
 * serve the queue page too).
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { activityFeedOptions } from "../api/events";
import { metricsOptions } from "../api/metrics";
import { useUser } from "../lib/useUser";
import { OverviewView } from "../views/OverviewView";

export function OverviewPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const metrics = useQuery(metricsOptions(2000));
  const activity = useQuery(activityFeedOptions(queryClient));
  return <OverviewView metrics={metrics} activity={activity} canChangeQueues={user.can.cancel} />;
}
