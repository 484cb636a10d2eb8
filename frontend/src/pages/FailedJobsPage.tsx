import { useEffect, useMemo, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { isApiError } from "../api/client";
import { jobListOptions, jobMutations, retryMatchingMutation } from "../api/jobs";
import type { Job, RetryMatching, RetryMatchingResult } from "../api/types";
import { BulkActions, toActionFilter } from "../components/BulkActions";
import { InlineConfirm } from "../components/Confirm";
import { FilterProblem, JobFilters, filterProblems } from "../components/JobFilters";
import { Pager } from "../components/Pager";
import { Attempts } from "../components/Progress";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { formatRelative, useNow } from "../lib/time";
import { toListParams, useFilterParams } from "../lib/useFilterParams";
import { useUser } from "../lib/useUser";

const PAGE_SIZE = 50;

/** "Retried 3 jobs." / "Retried 2 jobs; not retried: #12 (no longer failed or cancelled)." */
export function summarizeRetries(result: RetryMatchingResult): { tone: "success" | "error" | "warn"; text: string } {
  const plural = (n: number) => `${n} job${n === 1 ? "" : "s"}`;
  const refused = result.not_retried;
  if (refused.length === 0) {
    return result.retried === 0
      ? { tone: "warn", text: "No job matched: nothing was retried." }
      : { tone: "success", text: `Retried ${plural(result.retried)}: queued again.` };
  }
  const ids =
    refused
      .slice(0, 5)
      .map((id) => `#${id}`)
      .join(", ") + (refused.length > 5 ? ` and ${refused.length - 5} more` : "");
  return {
    tone: result.retried === 0 ? "error" : "warn",
    text: `Retried ${plural(result.retried)}; not retried: ${ids} (gone, or no longer failed or cancelled).`,
  };
}

/** What "retry all" may send for the current filters: the bulk endpoint filters by type only. */
export function retryAllBody(values: {
  type?: string;
  queue?: string;
  priority?: string;
  search?: string;
}): RetryMatching | null {
  if (values.queue || values.priority || values.search) return null;
  return values.type ? { type: values.type } : { all: true };
}

export function FailedJobsPage() {
  const user = useUser();
  const queryClient = useQueryClient();
  const { values, page, setValues, setPage } = useFilterParams({ ordering: "-finished_at" });
  const params = toListParams({ ...values, status: "failed" }, page, PAGE_SIZE);
  const jobs = useQuery(jobListOptions(params, 4000));
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const selectable = user.can.retry || user.can.delete;
  const retryOne = useMutation(jobMutations.retry(queryClient));
  const retryMany = useMutation(retryMatchingMutation(queryClient));
  const [confirmAll, setConfirmAll] = useState(false);
  const retryAllButton = useRef<HTMLButtonElement>(null);
  const allBody = retryAllBody(values);
  const refused = jobs.isError ? filterProblems(jobs.error, { ...values, status: "failed" }) : null;
  const isRefused = refused !== null;
  const rows = useMemo(() => (isRefused ? [] : (jobs.data?.results ?? [])), [jobs.data, isRefused]);

  // Drop selections of jobs that left the page (retried elsewhere, another page).
  useEffect(() => {
    setSelected((s) => {
      const visible = new Set(rows.map((j) => j.id));
      const next = new Set([...s].filter((id) => visible.has(id)));
      return next.size === s.size ? s : next;
    });
  }, [rows]);

  // A new filter starts a new selection.
  const filterKey = JSON.stringify(values);
  useEffect(() => setAllMatching(false), [filterKey]);

  const toggle = (id: number) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  const allSelected = rows.length > 0 && rows.every((j) => selected.has(j.id));
  const toggleAll = () => setSelected(allSelected ? new Set() : new Set(rows.map((j) => j.id)));

  const lastAction = retryMany.submittedAt >= retryOne.submittedAt ? "many" : "one";
  const outcome =
    lastAction === "many" && retryMany.data
      ? summarizeRetries(retryMany.data)
      : lastAction === "many" && retryMany.isError
        ? { tone: "error" as const, text: `Could not retry: ${(retryMany.error as Error).message}` }
        : lastAction === "one" && retryOne.isSuccess
          ? { tone: "success" as const, text: `Retried job #${retryOne.data.id}: queued again.` }
          : lastAction === "one" && retryOne.isError
            ? {
                tone: "error" as const,
                text: `Could not retry job #${retryOne.variables}: ${(retryOne.error as Error).message}`,
              }
            : null;
  const pastEnd = isApiError(jobs.error, 404) && page > 1;

  return (
    <>
      <div className="page-head">
        <div>
          <h1>Failed jobs</h1>
          <p>The dead letter: jobs that used every attempt or failed permanently. Retry puts them back in the queue.</p>
        </div>
        <LiveIndicator isError={jobs.isError} error={jobs.error} isFetching={jobs.isFetching} />
      </div>
      {outcome && (
        <div
          className={`notice ${outcome.tone}`}
          role={outcome.tone === "error" ? "alert" : "status"}
          data-testid="retry-outcome"
        >
          {outcome.text}
        </div>
      )}
      <section className="panel">
        <JobFilters
          values={values}
          onChange={(v) => setValues({ ...v, status: undefined })}
          fixed={["status"]}
          invalid={refused?.map((p) => p.field)}
        />
        {user.can.retry && rows.length > 0 && (
          <div className="selection-bar">
            <span>{selected.size ? `${selected.size} selected` : "Select jobs to retry them together."}</span>
            <button
              type="button"
              className="primary small"
              disabled={selected.size === 0 || retryMany.isPending}
              onClick={() => {
                setConfirmAll(false);
                retryMany.mutate({ ids: [...selected] }, { onSuccess: () => setSelected(new Set()) });
              }}
            >
              {retryMany.isPending ? "Retrying…" : `Retry selected${selected.size ? ` (${selected.size})` : ""}`}
            </button>
            <span style={{ marginLeft: "auto" }} className="actions">
              {allBody === null ? (
                <span className="hint">
                  Retry-all works by type; clear the queue, priority and search filters to use it.
                </span>
              ) : confirmAll ? (
                <InlineConfirm
                  question={`Retry ${values.type ? `every failed ${values.type} job` : "every failed job"} (${jobs.data!.count.toLocaleString()})?`}
                  confirmLabel="Yes, retry them"
                  keepLabel="Keep them"
                  busy={retryMany.isPending}
                  onConfirm={() => retryMany.mutate(allBody, { onSettled: () => setConfirmAll(false) })}
                  onKeep={() => setConfirmAll(false)}
                  returnFocus={retryAllButton}
                />
              ) : (
                <button
                  ref={retryAllButton}
                  type="button"
                  className="small"
                  disabled={retryMany.isPending}
                  onClick={() => setConfirmAll(true)}
                >
                  Retry all {jobs.data!.count.toLocaleString()}
                  {values.type ? ` ${values.type}` : ""}…
                </button>
              )}
            </span>
          </div>
        )}
        {user.can.delete && jobs.data && !refused && (
          // Retry has its bar above; failed jobs cannot be cancelled: this bar deletes.
          <BulkActions
            rows={rows}
            selected={selected}
            onSelect={setSelected}
            allMatching={allMatching}
            onAllMatching={setAllMatching}
            matching={jobs.data!.count}
            filter={toActionFilter({ ...values, status: "failed" })}
            can={{ cancel: false, retry: false, delete: true }}
          />
        )}
        {jobs.isPending ? (
          <Loading rows={6} />
        ) : pastEnd ? (
          <Empty title="This page is past the end of the list">
            <button type="button" onClick={() => setPage(1)}>
              Go to the first page
            </button>
          </Empty>
        ) : refused ? (
          <FilterProblem
            error={jobs.error}
            values={values}
            onChange={(v) => setValues({ ...v, status: undefined })}
            fixed={["status"]}
          />
        ) : jobs.isError && !jobs.data ? (
          <ErrorState error={jobs.error} onRetry={() => void jobs.refetch()} />
        ) : rows.length === 0 ? (
          <Empty title={values.type ? `No failed ${values.type} jobs` : "No failed jobs"}>
            Nothing is waiting in the dead letter.
          </Empty>
        ) : (
          <>
            <FailedTable
              rows={rows}
              selected={selected}
              toggle={toggle}
              allSelected={allSelected}
              toggleAll={toggleAll}
              selectable={selectable}
              canRetry={user.can.retry}
              retrying={retryOne.isPending ? retryOne.variables : undefined}
              onRetry={(id) => retryOne.mutate(id)}
            />
            <Pager page={page} count={jobs.data!.count} pageSize={PAGE_SIZE} onPage={setPage} />
          </>
        )}
      </section>
    </>
  );
}

function FailedTable({
  rows,
  selected,
  toggle,
  allSelected,
  toggleAll,
  selectable,
  canRetry,
  retrying,
  onRetry,
}: {
  rows: Job[];
  selected: Set<number>;
  toggle: (id: number) => void;
  allSelected: boolean;
  toggleAll: () => void;
  selectable: boolean;
  canRetry: boolean;
  retrying: number | undefined;
  onRetry: (id: number) => void;
}) {
  const now = useNow(5000);
  return (
    <div className="table-wrap">
      <table data-testid="failed-table">
        <thead>
          <tr>
            {selectable && (
              <th>
                <input
                  type="checkbox"
                  aria-label="Select every job on this page"
                  checked={allSelected}
                  onChange={toggleAll}
                />
              </th>
            )}
            <th>Job</th>
            <th>Last error</th>
            <th className="num">Attempts</th>
            <th>Queue</th>
            <th>Failed</th>
            {canRetry && (
              <th>
                <span className="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((job) => (
            <tr key={job.id} data-job-id={job.id}>
              {selectable && (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select job ${job.id}`}
                    checked={selected.has(job.id)}
                    onChange={() => toggle(job.id)}
                  />
                </td>
              )}
              <td className="nowrap">
                <Link to={`/jobs/${job.id}`}>#{job.id}</Link> {job.type}
              </td>
              <td className="error-cell" title={job.last_error ?? undefined}>
                {job.last_error ?? <span className="faint">no message</span>}
              </td>
              <td className="num">
                <Attempts attempts={job.attempts} max={job.max_attempts} status={job.status} />
              </td>
              <td>{job.queue}</td>
              <td className="nowrap" title={job.finished_at ?? undefined}>
                {formatRelative(job.finished_at, now)}
              </td>
              {canRetry && (
                <td>
                  <button
                    type="button"
                    className="small"
                    onClick={() => onRetry(job.id)}
                    disabled={retrying === job.id}
                    aria-label={`Retry job ${job.id}`}
                  >
                    {retrying === job.id ? "Retrying…" : "Retry"}
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
