/**
 * The jobs list as its route (pages/JobsPage.tsx) loaded it: the filters, the selection bar, the
 * table and the pager. On a phone each row is a card (styles.css, `table.cards`): the id, type,
 * status and time first, the other columns folded under them with their names.
 */
import type { ReactNode } from "react";
import { Link } from "react-router";
import type { Job, JobPage, User } from "../api/types";
import { BulkActions, type BulkRun } from "../components/BulkActions";
import { type FilterChoices, FilterProblem, type FilterValues, JobFilters } from "../components/JobFilters";
import { LeaseCountdown } from "../components/LeaseCountdown";
import { Pager } from "../components/Pager";
import { CursorPager, ShardFilter, ShardsDownNotice } from "../components/Shards";
import { SelectAllHeader, SelectRowCell } from "../components/SelectionCells";
import { Attempts, MiniProgress } from "../components/Progress";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { StatusBadge } from "../components/StatusBadge";
import { nextCursor } from "../lib/cursor";
import { formatRelative, useNow } from "../lib/time";
import type { Selection } from "../lib/useSelection";
import type { Loaded } from "./types";

/** The list's place in the address: its filters and page, and how to change them. */
export type ListPlace = {
  values: FilterValues;
  setValues: (values: FilterValues) => void;
  page: number;
  pageSize: number;
  setPage: (page: number) => void;
  setPageSize: (size: number) => void;
  /** With shards, the merged list's cursor (undefined: its first page) and how to move it. */
  cursor?: string;
  setCursor?: (cursor: string | undefined) => void;
};

/** What the route hands a job list beside its rows: the filters' choices and the bulk actions. */
export type ListTools = { choices: FilterChoices; bulk: BulkRun };

export function JobsView({
  jobs,
  place,
  tools,
  refused,
  pastEnd,
  selection,
  user,
  deleted,
  shards = [],
}: {
  jobs: Loaded<JobPage>;
  place: ListPlace;
  tools: ListTools;
  /** With shards (JOB_SHARDS): their aliases, for the shard filter; empty without. */
  shards?: readonly string[];
  /** The filters the API refused (?status=bogus), or null. */
  refused: { field: string }[] | null;
  /** A page past the end of the list was asked for. */
  pastEnd: boolean;
  selection: Selection;
  user: User;
  /** The job just deleted from its page, which came back here. */
  deleted?: number;
}) {
  const { values, setValues } = place;
  const canBulk = user.can.cancel || user.can.retry || user.can.delete;
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Jobs</h1>
          <p>Every job, newest first; filter by status, type, queue or priority.</p>
        </div>
        <div className="actions">
          <LiveIndicator isError={jobs.isError} error={jobs.error} isFetching={jobs.isFetching} />
          {user.can.create && (
            <Link className="button primary" to="/jobs/new">
              Create job
            </Link>
          )}
        </div>
      </div>
      {deleted && (
        <div className="notice success" role="status" data-testid="deleted-notice">
          Job #{deleted} deleted, with its events.
        </div>
      )}
      <ShardsDownNotice shards={jobs.data?.shards} />
      <section className="panel">
        <ShardFilter aliases={shards} value={values.shard} onChange={(shard) => setValues({ ...values, shard })} />
        <JobFilters
          values={values}
          onChange={setValues}
          choices={tools.choices}
          invalid={refused?.map((p) => p.field)}
        />
        {values.schedule && (
          <div className="notice" role="status" data-testid="schedule-filter">
            Jobs enqueued by the periodic schedule <strong>{values.schedule}</strong>.{" "}
            <button type="button" className="link" onClick={() => setValues({ ...values, schedule: undefined })}>
              Show every job
            </button>
          </div>
        )}
        {canBulk && !refused && jobs.data && (
          <BulkActions
            run={tools.bulk}
            rows={jobs.data!.results}
            selection={selection}
            matching={jobs.data!.count}
            values={values}
            can={user.can}
          />
        )}
        <JobListBody
          jobs={jobs}
          place={place}
          refused={refused}
          pastEnd={pastEnd}
          empty={
            <Empty title="No jobs match">
              Change or clear the filters
              {user.can.create ? (
                <>
                  , or <Link to="/jobs/new">create a job</Link>
                </>
              ) : null}
              .
            </Empty>
          }
        >
          {(rows) => <JobTable jobs={rows} selection={canBulk ? selection : undefined} />}
        </JobListBody>
      </section>
    </>
  );
}

/**
 * A job list's body under its filters: loading, a page past the end, the filters the API
 * refused (with a way out; `fixed` ones are kept), an error, nothing matching (`empty`), or the
 * rows (`children`) and the pager.
 */
export function JobListBody({
  jobs,
  place: { values, setValues, page, pageSize, setPage, setPageSize, cursor, setCursor },
  refused,
  pastEnd,
  fixed,
  empty,
  children,
}: {
  jobs: Loaded<JobPage>;
  place: ListPlace;
  refused: { field: string }[] | null;
  pastEnd: boolean;
  fixed?: (keyof FilterValues)[];
  empty: ReactNode;
  children: (rows: Job[]) => ReactNode;
}) {
  if (jobs.isPending) return <Loading rows={6} />;
  if (pastEnd) {
    return (
      <Empty title="This page is past the end of the list">
        <button type="button" onClick={() => setPage(1)}>
          Go to the first page
        </button>
      </Empty>
    );
  }
  if (refused) return <FilterProblem error={jobs.error} values={values} onChange={setValues} fixed={fixed} />;
  if (jobs.isError && !jobs.data) return <ErrorState error={jobs.error} onRetry={() => void jobs.refetch()} />;
  const { results, count, next, shards } = jobs.data!;
  if (results.length === 0 && !cursor) return empty;
  return (
    <>
      {children(results)}
      {shards && setCursor ? (
        <CursorPager
          count={count}
          shown={results.length}
          atStart={!cursor}
          hasNext={Boolean(next)}
          onNext={() => setCursor(nextCursor(next))}
          onFirst={() => setCursor(undefined)}
        />
      ) : (
        <Pager page={page} count={count} pageSize={pageSize} onPage={setPage} onPageSize={setPageSize} />
      )}
    </>
  );
}

export function JobTable({ jobs, selection }: { jobs: Job[]; selection?: Selection }) {
  const now = useNow(1000);
  return (
    <div className="table-wrap">
      <table data-testid="jobs-table" className="cards">
        <thead>
          <tr>
            {selection && <SelectAllHeader selection={selection} />}
            <th>Job</th>
            <th>Status</th>
            <th>Queue</th>
            <th className="num">Priority</th>
            <th className="num">Attempts</th>
            <th>Lease owner</th>
            <th>Created</th>
            <th>Last error</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id} data-job-id={job.id}>
              {selection && <SelectRowCell selection={selection} id={job.id} />}
              <td className="nowrap card-title">
                <Link to={`/jobs/${job.id}`}>#{job.id}</Link> <span data-testid="job-type">{job.type}</span>
                {job.idempotency_key && (
                  <div className="sub truncate" title={job.idempotency_key}>
                    key {job.idempotency_key}
                  </div>
                )}
              </td>
              <td className="card-status">
                <StatusBadge job={job} now={now} />
                {job.status === "running" && job.progress_percent !== null && (
                  <MiniProgress id={job.id} percent={job.progress_percent} />
                )}
                {job.status === "queued" && Date.parse(job.available_at) > now && (
                  <div className="sub">runs {formatRelative(job.available_at, now)}</div>
                )}
              </td>
              <td className="nowrap" data-label="Queue">
                <Link to={`/queues/${encodeURIComponent(job.queue)}`} title={`Queue ${job.queue}: its page`}>
                  {job.queue}
                </Link>
              </td>
              <td className="num" data-label="Priority">
                {job.priority}
              </td>
              <td className="num" data-label="Attempts">
                <Attempts attempts={job.attempts} max={job.max_attempts} status={job.status} />
              </td>
              <td data-label="Lease owner" className={job.locked_by ? undefined : "card-empty"}>
                {job.locked_by ? (
                  <>
                    <div className="mono truncate" title={job.locked_by}>
                      {job.locked_by}
                    </div>
                    <LeaseCountdown expiresAt={job.lease_expires_at} tickMs={1000} />
                  </>
                ) : (
                  <span className="faint">—</span>
                )}
              </td>
              <td className="nowrap card-time" data-label="Created" title={job.created_at}>
                {formatRelative(job.created_at, now)}
              </td>
              <ErrorCell job={job} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The list's "Last error": red while it says why the job is failed, cancelled or retrying; a
 * succeeded job's error is an earlier attempt's, shown muted as such (it was red, as if the job
 * had failed).
 */
export function listedError(job: Pick<Job, "status" | "last_error">): { text: string; earlier: boolean } | null {
  if (!job.last_error) return null;
  if (job.status === "succeeded") return { text: `earlier attempt: ${job.last_error}`, earlier: true };
  return { text: job.last_error, earlier: false };
}

function ErrorCell({ job }: { job: Job }) {
  const shown = listedError(job);
  return (
    <td
      className={`card-wide ${shown ? "" : "card-empty "}${shown?.earlier ? "truncate faint" : "error-cell"}`}
      data-label="Last error"
      title={job.last_error ?? undefined}
      data-testid={`last-error-${job.id}`}
    >
      {shown?.text ?? ""}
    </td>
  );
}
