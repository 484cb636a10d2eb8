/**
 * The queues page's route: every queue (polled) and its pause and resume; views/QueuesView.tsx
 * renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { queueMutations, queuesOptions } from "../api/queues";
import { useUser } from "../lib/useUser";
import { QueuesView } from "../views/QueuesView";

export function QueuesPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const queues = useQuery(queuesOptions(2000));
  const toggle = useMutation(queueMutations.toggle(queryClient));
  // Pause and resume need change_job (can.cancel), as on the overview.
  return <QueuesView queues={queues} toggle={user.can.cancel ? toggle : null} />;
}
