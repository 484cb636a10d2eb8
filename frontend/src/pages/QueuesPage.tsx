/**
 * The queues page's route: every queue (polled), its pause and resume, and each queue's
 * wait percentiles over the last hour (the sparklines); views/QueuesView.tsx
 * renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { latencyOptions } from "../api/metrics";
import { queueMutations, queuesOptions } from "../api/queues";
import { useUser } from "../lib/useUser";
import { QueuesView } from "../views/QueuesView";

export function QueuesPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const queues = useQuery(queuesOptions(2000));
  const toggle = useMutation(queueMutations.toggle(queryClient));
  // Each queue's wait p95 over the last hour, per minute: the sparklines.
  const latency = useQuery({ ...latencyOptions({ range: "1h", by: "queue" }, 30_000), retry: false });
  // Pause and resume need change_job (can.cancel), as on the overview.
  return <QueuesView queues={queues} toggle={user.can.cancel ? toggle : null} latency={latency.data} />;
}
