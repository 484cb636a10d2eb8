/**
 * The job page as the route (pages/JobDetailPage.tsx) loaded it: the title row and its actions
 * (panels/JobHead.tsx, which the route renders: its actions are mutations), then one panel per
 * concern. Each panel is a component of its own; adding one is one line here.
 */
import type { ReactNode } from "react";
import type { JobDetail, JobEvent } from "../api/types";
import { ConcurrencyKey } from "../components/ConcurrencyKey";
import { EventsTimeline } from "../components/EventsTimeline";
import { JobDependencies } from "../components/JobDependencies";
import { JobWorkflow } from "../components/JobWorkflow";
import { AllFields, AttemptsPanel, LastErrorPanel, LeasePanel, RunFacts } from "../components/JobPanels";
import { NextAttempt } from "../components/NextAttempt";
import { ProgressBar } from "../components/Progress";
import { ErrorState, Loading } from "../components/States";
import { currentProgress } from "../lib/jobView";

/** The event feed's state, as the route's query and its "load earlier" mutation give it. */
export type TimelineState = {
  events: JobEvent[];
  isPending: boolean;
  /** The feed failed and holds nothing to show. */
  error: unknown;
  onRetry: () => void;
  /** The feed's live dot. */
  live: ReactNode;
  earlier: { load: () => void; isPending: boolean; error: Error | null };
};

export function JobDetailView({
  job,
  head,
  refreshError,
  timeline,
}: {
  job: JobDetail;
  /** The title row, its actions and their outcomes. */
  head: ReactNode;
  /** The last refresh failed: the page shows the last known state. */
  refreshError: unknown;
  timeline: TimelineState;
}) {
  const progress = currentProgress(job, timeline.events);
  return (
    <>
      {head}
      {refreshError ? (
        <ErrorState error={refreshError} title="Showing the last known state; refreshing failed" />
      ) : null}
      <ConcurrencyKey job={job} />

      <div className="grid grid-3" style={{ marginBottom: 14 }}>
        <Panel id="progress" title="Progress">
          <ProgressBar percent={progress.percent} status={job.status} label={`Job ${job.id} progress`} />
          <p className="muted" data-testid="progress-message" style={{ margin: "8px 0 0", minHeight: "1.4em" }}>
            {progress.message || queuedMessage(job)}
          </p>
          <RunFacts job={job} />
        </Panel>
        <Panel id="lease" title="Lease">
          <LeasePanel job={job} />
        </Panel>
        <Panel id="attempts" title="Attempts">
          <AttemptsPanel job={job} />
          <NextAttempt job={job} />
        </Panel>
      </div>

      <JobWorkflow job={job} />
      <JobDependencies dependencies={job.dependencies} dependants={job.dependants} />

      <div className="grid grid-2">
        <Panel id="timeline" title="Events" extra={timeline.live}>
          <Timeline state={timeline} job={job} />
        </Panel>
        <div className="grid job-side" style={{ alignContent: "start" }}>
          {(job.last_error || job.last_traceback) && (
            <Panel id="error" title="Last error" className="job-error">
              <LastErrorPanel job={job} />
            </Panel>
          )}
          <Panel id="payload" title="Payload">
            {/* Focusable: a long payload scrolls, and a keyboard must reach it too (WCAG 2.1.1). */}
            <pre className="json" data-testid="job-payload" tabIndex={0} aria-label="The payload, as JSON">
              {JSON.stringify(job.payload, null, 2)}
            </pre>
          </Panel>
          {job.result !== null && job.result !== undefined && (
            <Panel id="result" title="Result">
              <pre className="json" tabIndex={0} aria-label="The result, as JSON">
                {JSON.stringify(job.result, null, 2)}
              </pre>
            </Panel>
          )}
          <Panel id="fields" title="All fields">
            <AllFields job={job} />
          </Panel>
        </div>
      </div>
    </>
  );
}

/** What the Progress card says of a job that has not started: what it waits for. */
function queuedMessage(job: JobDetail): string {
  if (job.status !== "queued") return "";
  if (job.concurrency_key_wait) {
    const holders = job.concurrency_key_holders.map((id) => `#${id}`).join(", ");
    return `Waiting for its concurrency key${holders ? ` (held by ${holders})` : ""}, not for a worker.`;
  }
  if (job.rate_limit_wait) return `Waiting for its rate limit, not for a worker: ${job.rate_limit_wait}.`;
  if (job.fairness_wait) return `Waiting for a worker, in turn: ${job.fairness_wait}.`;
  return "Waiting for a worker.";
}

function Panel({
  id,
  title,
  extra,
  className,
  children,
}: {
  id: string;
  title: string;
  extra?: ReactNode;
  className?: string;
  children: ReactNode;
}) {
  return (
    <section className={className ? `panel ${className}` : "panel"} aria-labelledby={`${id}-title`}>
      <header>
        <h2 id={`${id}-title`}>{title}</h2>
        {extra}
      </header>
      {children}
    </section>
  );
}

function Timeline({ state, job }: { state: TimelineState; job: JobDetail }) {
  const { events, earlier } = state;
  return (
    <>
      {events.length > 0 && events[0].kind !== "created" && (
        <div className="hint" style={{ marginBottom: 10 }}>
          Showing the latest events only.{" "}
          <button type="button" className="link" onClick={earlier.load} disabled={earlier.isPending}>
            {earlier.isPending ? "Loading…" : "Load earlier events"}
          </button>
          {earlier.error && <span className="field-error"> {earlier.error.message}</span>}
        </div>
      )}
      {state.isPending ? (
        <Loading />
      ) : state.error ? (
        <ErrorState error={state.error} onRetry={state.onRetry} />
      ) : (
        <EventsTimeline events={events} job={job} />
      )}
    </>
  );
}
