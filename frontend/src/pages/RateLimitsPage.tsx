/**
 * The rate limits page's route: the limits in force with their use (polled), and their set and
 * remove for users with change_queuesetting; views/RateLimitsView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { rateLimitMutations, rateLimitsOptions } from "../api/rateLimits";
import { useUser } from "../lib/useUser";
import { RateLimitsView } from "../views/RateLimitsView";

export function RateLimitsPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const limits = useQuery(rateLimitsOptions());
  const set = useMutation(rateLimitMutations.set(queryClient));
  const remove = useMutation(rateLimitMutations.remove(queryClient));
  const may = user.can.change_queue;
  return <RateLimitsView limits={limits} set={may ? set : null} remove={may ? remove : null} />;
}
