/**
 * The failed-jobs page as its route (pages/FailedJobsPage.tsx) loaded it: the jobs list's
 * filters (status fixed to failed), the same selection bar, one notice for the latest action,
 * and the table, cards on a phone (styles.css, `table.cards`) with the error in full.
 */
import { Link } from "react-router";
import type { Job, JobPage, User } from "../api/types";
import { BulkActions } from "../components/BulkActions";
import { type FilterValues, JobFilters } from "../components/JobFilters";
import { Notice } from "../components/Notice";
import { SelectAllHeader, SelectRowCell } from "../components/SelectionCells";
import { Attempts } from "../components/Progress";
import { Empty, LiveIndicator } from "../components/States";
import type { Notice as NoticeText } from "../lib/jobView";
import { formatRelative, useNow } from "../lib/time";
import type { Selection } from "../lib/useSelection";
import { JobListBody, type ListPlace, type ListTools } from "./JobsView";
import type { Loaded } from "./types";

export function FailedJobsView({
  jobs,
  place,
  tools,
  filters,
  refused,
  pastEnd,
  selection,
  user,
  notice,
  setNotice,
  retrying,
  onRetry,
}: {
  jobs: Loaded<JobPage>;
  place: ListPlace;
  tools: ListTools;
  /** The filters as sent: the address's, status failed. */
  filters: FilterValues;
  refused: { field: string }[] | null;
  pastEnd: boolean;
  selection: Selection;
  user: User;
  notice: NoticeText | null;
  setNotice: (notice: NoticeText) => void;
  /** The job whose row's Retry is on its way. */
  retrying: number | undefined;
  onRetry: (id: number) => void;
}) {
  const { values, setValues } = place;
  const rows = refused ? [] : (jobs.data?.results ?? []);
  const canBulk = user.can.retry || user.can.delete;
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Failed jobs</h1>
          <p>The dead letter: jobs that used every attempt or failed permanently. Retry puts them back in the queue.</p>
        </div>
        <LiveIndicator isError={jobs.isError} error={jobs.error} isFetching={jobs.isFetching} />
      </div>
      <Notice notice={notice} testId="action-outcome" />
      <section className="panel">
        <JobFilters
          values={values}
          onChange={setValues}
          choices={tools.choices}
          fixed={["status", "state"]}
          invalid={refused?.map((p) => p.field)}
        />
        {canBulk && jobs.data && !refused && (
          // Failed jobs cannot be cancelled: this bar retries and deletes.
          <BulkActions
            run={tools.bulk}
            rows={rows}
            selection={selection}
            matching={jobs.data.count}
            values={filters}
            can={{ cancel: false, retry: user.can.retry, delete: user.can.delete }}
            onOutcome={setNotice}
          />
        )}
        <JobListBody
          jobs={jobs}
          place={place}
          refused={refused}
          pastEnd={pastEnd}
          fixed={["status"]}
          empty={
            <Empty title={values.type ? `No failed ${values.type} jobs` : "No failed jobs"}>
              Nothing is waiting in the dead letter.
            </Empty>
          }
        >
          {(shown) => (
            <FailedTable
              rows={shown}
              selection={canBulk ? selection : undefined}
              canRetry={user.can.retry}
              retrying={retrying}
              onRetry={onRetry}
            />
          )}
        </JobListBody>
      </section>
    </>
  );
}

export function FailedTable({
  rows,
  selection,
  canRetry,
  retrying,
  onRetry,
}: {
  rows: Job[];
  selection?: Selection;
  canRetry: boolean;
  retrying: number | undefined;
  onRetry: (id: number) => void;
}) {
  const now = useNow(5000);
  return (
    <div className="table-wrap">
      <table data-testid="failed-table" className="cards">
        <thead>
          <tr>
            {selection && <SelectAllHeader selection={selection} />}
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
              {selection && <SelectRowCell selection={selection} id={job.id} />}
              <td className="nowrap card-title">
                <Link to={`/jobs/${job.id}`}>#{job.id}</Link> <span data-testid="job-type">{job.type}</span>
              </td>
              <td className="error-cell card-wide" data-label="Last error" title={job.last_error ?? undefined}>
                {job.last_error ?? <span className="faint">no message</span>}
              </td>
              <td className="num" data-label="Attempts">
                <Attempts attempts={job.attempts} max={job.max_attempts} status={job.status} />
              </td>
              <td data-label="Queue">{job.queue}</td>
              <td className="nowrap card-time" data-label="Failed" title={job.finished_at ?? undefined}>
                {formatRelative(job.finished_at, now)}
              </td>
              {canRetry && (
                <td className="card-action">
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
