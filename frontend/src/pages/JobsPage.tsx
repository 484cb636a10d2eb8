/**
 * The jobs list's route: its filters and page from the address, the list query, the selection;
 * views/JobsView.tsx renders them.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useLocation } from "react-router";
import { isApiError } from "../api/client";
import { jobActionsMutation, jobListOptions, knownShards } from "../api/jobs";
import { filterProblems } from "../components/JobFilters";
import { toListParams, useFilterParams } from "../lib/useFilterParams";
import { useSelection } from "../lib/useSelection";
import { useUser } from "../lib/useUser";
import { JobsView } from "../views/JobsView";
import { useFilterChoices } from "./useFilterChoices";

const PAGE_SIZE = 25;

export function JobsPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const { values, page, cursor, pageSize: asked, setValues, setPage, setCursor, setPageSize } = useFilterParams();
  const pageSize = asked ?? PAGE_SIZE;
  const jobs = useQuery(jobListOptions(toListParams(values, page, pageSize, cursor)));
  // With shards: the aliases the merged list names (a list of one shard names none).
  const shards = jobs.data?.shards?.map((s) => s.alias) ?? knownShards(queryClient);
  const pastEnd = isApiError(jobs.error, 404) && page > 1;
  const choices = useFilterChoices();
  const bulk = useMutation(jobActionsMutation(queryClient));
  // A filter the API refused (?status=bogus): say which, rather than showing stale rows.
  const refused = jobs.isError ? filterProblems(jobs.error, values) : null;
  const selection = useSelection(refused ? [] : (jobs.data?.results ?? []), values);
  const deleted = (useLocation().state as { deleted?: number } | null)?.deleted;
  return (
    <JobsView
      jobs={jobs}
      tools={{ choices, bulk }}
      place={{ values, setValues, page, pageSize, setPage, setPageSize, cursor, setCursor }}
      refused={refused}
      pastEnd={pastEnd}
      selection={selection}
      user={user}
      deleted={deleted}
      shards={shards}
    />
  );
}
