/** The filter bar's suggestions: distinct queues, types or concurrency keys by prefix. */
import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import type { JobSuggestions, JobSuggestionsParams } from "./types";

export type SuggestionField = JobSuggestionsParams["field"];

export const suggestionKeys = {
  all: ["job-suggestions"] as const,
  list: (field: SuggestionField, prefix: string, limit: number) =>
    [...suggestionKeys.all, field, prefix, limit] as const,
};

/**
 * The values of `field` starting with `prefix` (at most `limit`). Asked as the user types, so
 * each prefix is kept a while and the previous answer shows until the next arrives.
 */
export function jobSuggestionsOptions(field: SuggestionField, prefix: string, limit = 10) {
  return queryOptions({
    queryKey: suggestionKeys.list(field, prefix, limit),
    queryFn: ({ signal }) => api.get<JobSuggestions>("jobs/suggestions/", { query: { field, prefix, limit }, signal }),
    staleTime: 30_000,
    placeholderData: (previous) => previous,
    retry: false,
  });
}
