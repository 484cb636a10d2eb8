/**
 * The failed-jobs page's route (the dead letter): its filters from the address with the status
 * fixed to failed, the list query, the selection, a row's Retry and the one notice saying how
 * the latest action went; views/FailedJobsView.tsx renders them.
 */
import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useLocation } from "react-router";
import { isApiError } from "../api/client";
import { jobActionsMutation, jobListOptions, jobMutations } from "../api/jobs";
import type { Job } from "../api/types";
import { filterProblems } from "../components/JobFilters";
import type { Notice as NoticeText } from "../lib/jobView";
import { toListParams, useFilterParams } from "../lib/useFilterParams";
import { useSelection } from "../lib/useSelection";
import { useUser } from "../lib/useUser";
import { FailedJobsView } from "../views/FailedJobsView";
import { useFilterChoices } from "./useFilterChoices";

const PAGE_SIZE = 50;

export function FailedJobsPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const {
    values,
    page,
    cursor,
    pageSize: asked,
    setValues,
    setPage,
    setCursor,
    setPageSize,
  } = useFilterParams({ ordering: "-finished_at" });
  const pageSize = asked ?? PAGE_SIZE;
  const filters = { ...values, status: "failed" };
  const jobs = useQuery(jobListOptions(toListParams(filters, page, pageSize, cursor), 4000));
  const refused = jobs.isError ? filterProblems(jobs.error, filters) : null;
  const selection = useSelection(refused ? [] : (jobs.data?.results ?? []), values);
  // A job deleted from its page comes back here saying so.
  const deleted = (useLocation().state as { deleted?: number } | null)?.deleted;
  const [notice, setNotice] = useState<NoticeText | null>(
    deleted ? { tone: "success", text: `Job #${deleted} deleted, with its events.` } : null,
  );
  const retryOne = useMutation({
    ...jobMutations.retry(queryClient),
    onSuccess: (job: Job) => {
      jobMutations.retry(queryClient).onSuccess(job);
      setNotice({ tone: "success", text: `Retried job #${job.id}: queued again.` });
    },
    onError: (error: Error, id: number) =>
      setNotice({ tone: "error", text: `Could not retry job #${id}: ${error.message}` }),
  });
  const pastEnd = isApiError(jobs.error, 404) && page > 1;
  const choices = useFilterChoices();
  const bulk = useMutation(jobActionsMutation(queryClient));
  // The status is the page's, never the address's.
  const setFilters = (v: typeof values) => setValues({ ...v, status: undefined });
  return (
    <FailedJobsView
      jobs={jobs}
      tools={{ choices, bulk }}
      place={{ values, setValues: setFilters, page, pageSize, setPage, setPageSize, cursor, setCursor }}
      filters={filters}
      refused={refused}
      pastEnd={pastEnd}
      selection={selection}
      user={user}
      notice={notice}
      setNotice={setNotice}
      retrying={retryOne.isPending ? retryOne.variables : undefined}
      onRetry={(id) => retryOne.mutate(id)}
    />
  );
}
