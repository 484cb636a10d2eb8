/**
 * What the job lists' filters offer to choose from: the job types (registered, and those the
 * jobs kept carry), the queues, and the concurrency keys that start with what is typed.
 */
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { jobTypesOptions } from "../api/jobTypes";
import { queuesOptions } from "../api/queues";
import { jobSuggestionsOptions } from "../api/suggestions";
import type { FilterChoices } from "../components/JobFilters";

/** How long typing must pause before the keys starting with it are asked for. */
export const SUGGEST_DELAY_MS = 250;

/** The values of a suggestions answer (none while it loads, or when it failed). */
const valuesOf = (answer: { values?: unknown } | undefined): string[] =>
  Array.isArray(answer?.values) ? (answer.values as string[]) : [];

export function useFilterChoices(): FilterChoices {
  const types = useQuery(jobTypesOptions());
  // Types no longer registered that jobs still carry (a rolling deploy, a removed handler).
  const keptTypes = useQuery(jobSuggestionsOptions("type", "", 50));
  // Every queue, as the navigation lists them (same query, same key).
  const queues = useQuery({ ...queuesOptions(15_000), retry: false });
  const [typed, setTyped] = useState<string | null>(null);
  const [prefix, setPrefix] = useState<string | null>(null);
  useEffect(() => {
    if (typed === null) return;
    const timer = setTimeout(() => setPrefix(typed.trim()), SUGGEST_DELAY_MS);
    return () => clearTimeout(timer);
  }, [typed]);
  // Asked once the key field is used, not on every list's first load.
  const keys = useQuery({ ...jobSuggestionsOptions("concurrency_key", prefix ?? ""), enabled: prefix !== null });
  return useMemo(
    () => ({
      types: [...new Set([...(types.data ?? []).map((t) => t.name), ...valuesOf(keptTypes.data)])].sort(),
      queues: (Array.isArray(queues.data) ? queues.data : []).map((q) => q.name),
      concurrencyKeys: valuesOf(keys.data),
      suggestKeys: setTyped,
    }),
    [types.data, keptTypes.data, queues.data, keys.data],
  );
}
