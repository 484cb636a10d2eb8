/**
 * A queue's page's route: the name from the address, the queue's detail (polled), pause and
 * resume, saving its limit, and its throughput panel; views/QueueView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useParams } from "react-router";
import { queueDetailOptions, queueMutations } from "../api/queues";
import { useUser } from "../lib/useUser";
import { ThroughputPanel } from "../panels/ThroughputPanel";
import { QueueView } from "../views/QueueView";

export function QueuePage() {
  const { name = "" } = useParams();
  const user = useUser();
  const queryClient = useQueryClient();
  const detail = useQuery(queueDetailOptions(name));
  // Its onSettled refetches every queue query, this page's too (["queues", "detail", name]).
  const toggle = useMutation(queueMutations.toggle(queryClient));
  const save = useMutation(queueMutations.setLimit(queryClient));
  return (
    <QueueView
      name={name}
      detail={detail}
      can={{ pause: user.can.cancel, changeLimit: user.can.change_queue }}
      toggle={{
        mutate: (action) => toggle.mutate({ name, action }),
        isPending: toggle.isPending,
        error: toggle.isError ? (toggle.error as Error) : null,
        action: toggle.variables?.action,
      }}
      limit={{
        mutate: (limit, done) => save.mutate({ name, limit }, { onSuccess: done }),
        isPending: save.isPending,
        error: save.isError ? (save.error as Error) : null,
      }}
      throughput={<ThroughputPanel queue={name} />}
    />
  );
}
