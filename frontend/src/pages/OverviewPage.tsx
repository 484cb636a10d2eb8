/**
 * The overview's route: the metrics (polled every 2 s), the activity feed, the queues (polled
 * with the metrics, so both show the same moment) with their pause and resume, and the
 * throughput and latency panels; views/OverviewView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { activityFeedOptions } from "../api/events";
import { metricsOptions } from "../api/metrics";
import { queueMutations, queuesOptions } from "../api/queues";
import { useUser } from "../lib/useUser";
import { LatencyPanel } from "../panels/LatencyPanel";
import { ThroughputPanel } from "../panels/ThroughputPanel";
import { OverviewView } from "../views/OverviewView";

export function OverviewPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const metrics = useQuery(metricsOptions(2000));
  const activity = useQuery(activityFeedOptions(queryClient));
  const queues = useQuery(queuesOptions(2000));
  const toggle = useMutation(queueMutations.toggle(queryClient));
  return (
    <OverviewView
      metrics={metrics}
      activity={activity}
      // Pause and resume need change_job (can.cancel).
      queues={{ list: queues, toggle: user.can.cancel ? toggle : null }}
      throughput={<ThroughputPanel />}
      latency={<LatencyPanel />}
    />
  );
}
