/**
 * The workers page's route: every worker process, polled, those lost in the last day, and each
 * host's overrides of its queues, set and removed by users with change_queuesetting;
 * views/WorkersView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { lostWorkersOptions, workerOverrideMutations, workerOverridesOptions, workersOptions } from "../api/workers";
import { useUser } from "../lib/useUser";
import { WorkersView } from "../views/WorkersView";

export function WorkersPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const workers = useQuery(workersOptions());
  const lost = useQuery(lostWorkersOptions());
  const overrides = useQuery(workerOverridesOptions());
  const set = useMutation(workerOverrideMutations.set(queryClient));
  const remove = useMutation(workerOverrideMutations.remove(queryClient));
  const may = user.can.change_queue;
  return (
    <WorkersView
      workers={workers}
      lost={lost}
      overrides={overrides}
      setOverride={may ? set : null}
      removeOverride={may ? remove : null}
    />
  );
}
