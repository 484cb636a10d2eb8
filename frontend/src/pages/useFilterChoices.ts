/** What the job lists' filters offer to choose from: the registered job types and the queues. */
import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { jobTypesOptions } from "../api/jobTypes";
import { queuesOptions } from "../api/queues";
import type { FilterChoices } from "../components/JobFilters";

export function useFilterChoices(): FilterChoices {
  const types = useQuery(jobTypesOptions());
  // Every queue, as the navigation lists them (same query, same key).
  const queues = useQuery({ ...queuesOptions(15_000), retry: false });
  return useMemo(
    () => ({
      types: (types.data ?? []).map((t) => t.name),
      queues: (Array.isArray(queues.data) ? queues.data : []).map((q) => q.name),
    }),
    [types.data, queues.data],
  );
}
