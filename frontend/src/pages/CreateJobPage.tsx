/**
 * The create-job page's route: the job types, and the create mutation, which opens the new
 * job's page saying it was created (or replayed); views/CreateJobView.tsx renders the form.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router";
import { jobMutations } from "../api/jobs";
import { jobTypesOptions } from "../api/jobTypes";
import { useUser } from "../lib/useUser";
import { CreateJobView } from "../views/CreateJobView";

export function CreateJobPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const types = useQuery({ ...jobTypesOptions(), enabled: user.can.create });
  const create = useMutation({
    ...jobMutations.create(queryClient),
    onSuccess: (outcome) => {
      jobMutations.create(queryClient).onSuccess(outcome);
      void navigate(`/jobs/${outcome.job.id}`, { state: { created: true, replayed: outcome.replayed } });
    },
  });
  return (
    <CreateJobView
      canCreate={user.can.create}
      types={types}
      create={{ mutate: (body) => create.mutate(body), isPending: create.isPending, error: create.error }}
    />
  );
}
