/**
 * A batch's page's route: the id from the address, the batch (polled) and the cancel of its
 * pending members; views/BatchView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useParams } from "react-router";
import { batchMutations, batchOptions } from "../api/batches";
import { useUser } from "../lib/useUser";
import { BatchView } from "../views/BatchView";

export function BatchPage() {
  const { id = "" } = useParams();
  const user = useUser();
  const queryClient = useQueryClient();
  const batch = useQuery(batchOptions(id));
  const cancel = useMutation(batchMutations.cancel(queryClient));
  return (
    <BatchView
      id={id}
      batch={batch}
      canCancel={user.can.cancel}
      cancel={{
        mutate: () => cancel.mutate(id),
        isPending: cancel.isPending,
        error: cancel.isError ? (cancel.error as Error) : null,
      }}
    />
  );
}
