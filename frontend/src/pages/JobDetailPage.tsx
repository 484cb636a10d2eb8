import { type ReactNode, useEffect, useMemo, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation, useNavigate, useParams } from "react-router";
import { isApiError } from "../api/client";
import {
  isFinished,
  jobDetailOptions,
  jobEventsOptions,
  jobKeys,
  jobMutations,
  loadEarlierEventsMutation,
} from "../api/jobs";
import type { JobDetail, JobEvent } from "../api/types";
import { ConcurrencyKey } from "../components/ConcurrencyKey";
import { InlineConfirm } from "../components/Confirm";
import { EventsTimeline } from "../components/EventsTimeline";
import { JobDependencies } from "../components/JobDependencies";
import { LeaseCountdown } from "../components/LeaseCountdown";
import { NextAttempt } from "../components/NextAttempt";
import { Attempts, ProgressBar } from "../components/Progress";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { StatusBadge } from "../components/StatusBadge";
import { mergeEvents } from "../lib/events";
import { type LastAction, actionNotice, createdNotice, leaseSummary, timelineAsOf } from "../lib/jobView";
import { formatDuration, formatRelative, formatTimestamp, useNow } from "../lib/time";
import { useUser } from "../lib/useUser";

export type CreatedState = { created?: boolean; replayed?: boolean };

export function JobDetailPage() {
  const params = useParams();
  const id = Number(params.id);
  if (!Number.isInteger(id) || id <= 0) {
    return (
      <div className="panel">
        <Empty title={`“${params.id}” is not a job id`}>
          <Link to="/jobs">All jobs</Link>
        </Empty>
      </div>
    );
  }
  return <JobDetailView key={id} id={id} />;
}

function JobDetailView({ id }: { id: number }) {
  const queryClient = useQueryClient();
  const location = useLocation();
  const created = (location.state ?? {}) as CreatedState;
  const job = useQuery(jobDetailOptions(id));
  const live = job.data ? !isFinished(job.data) : true;
  const events = useQuery(jobEventsOptions(queryClient, id, job.data?.events, live));
  // The detail (polled every second) also carries the latest events: show them at once rather
  // than at the feed's next poll. And when the status changes, poll the feed right away.
  const merged = useMemo(() => mergeEvents(events.data ?? [], job.data?.events ?? []), [events.data, job.data?.events]);
  // One source of truth: the timeline shows what the detail's snapshot knows (lib/jobView.ts).
  const { shown: timeline, heldBack } = useMemo(
    () => (job.data ? timelineAsOf(job.data, merged) : { shown: merged, heldBack: null }),
    [job.data, merged],
  );
  // The feed saw a change the detail does not show yet: read the detail now, not in a second.
  const heldBackId = heldBack?.id;
  const { refetch: refetchJob } = job;
  useEffect(() => {
    if (heldBackId !== undefined) void refetchJob();
  }, [heldBackId, refetchJob]);
  const earlier = useMutation(loadEarlierEventsMutation(queryClient, id));
  const status = job.data?.status;
  useEffect(() => {
    if (status) void queryClient.invalidateQueries({ queryKey: jobKeys.events(id) });
  }, [status, id, queryClient]);

  useEffect(() => {
    document.title = job.data ? `#${id} ${job.data.type} (${job.data.status}) · Job queue` : `Job #${id} · Job queue`;
    return () => {
      document.title = "Job queue";
    };
  }, [id, job.data]);

  if (job.isPending)
    return (
      <div className="panel">
        <Loading rows={8} label="Loading the job…" />
      </div>
    );
  if (job.isError && !job.data) {
    if (isApiError(job.error, 404)) {
      return (
        <div className="panel">
          <Empty title={`Job #${id} does not exist`}>
            <p>
              It may have been pruned. <Link to="/jobs">All jobs</Link>
            </p>
          </Empty>
        </div>
      );
    }
    return <ErrorState error={job.error} onRetry={() => void job.refetch()} />;
  }
  const j = job.data!;
  const progress = currentProgress(j, timeline);
  return (
    <>
      <JobHead
        job={j}
        created={created}
        live={<LiveIndicator isError={job.isError} error={job.error} isFetching={job.isFetching} paused={!live} />}
      />
      {job.isError && <ErrorState error={job.error} title="Showing the last known state; refreshing failed" />}
      <ConcurrencyKey job={j} />

      <div className="grid grid-3" style={{ marginBottom: 14 }}>
        <section className="panel" aria-labelledby="progress-title">
          <header>
            <h2 id="progress-title">Progress</h2>
          </header>
          <ProgressBar percent={progress.percent} status={j.status} label={`Job ${j.id} progress`} />
          <p className="muted" data-testid="progress-message" style={{ margin: "8px 0 0", minHeight: "1.4em" }}>
            {progress.message || (j.status === "queued" ? "Waiting for a worker." : "")}
          </p>
          <RunFacts job={j} />
        </section>
        <section className="panel" aria-labelledby="lease-title">
          <header>
            <h2 id="lease-title">Lease</h2>
          </header>
          <LeasePanel job={j} />
        </section>
        <section className="panel" aria-labelledby="attempts-title">
          <header>
            <h2 id="attempts-title">Attempts</h2>
          </header>
          <AttemptsPanel job={j} />
          <NextAttempt job={j} />
        </section>
      </div>

      <JobDependencies dependencies={j.dependencies} dependants={j.dependants} />

      <div className="grid grid-2">
        <section className="panel" aria-labelledby="timeline-title">
          <header>
            <h2 id="timeline-title">Events</h2>
            <LiveIndicator
              isError={events.isError}
              error={events.error}
              isFetching={events.isFetching}
              paused={!live}
            />
          </header>
          {timeline.length > 0 && timeline[0].kind !== "created" && (
            <div className="hint" style={{ marginBottom: 10 }}>
              Showing the latest events only.{" "}
              <button type="button" className="link" onClick={() => earlier.mutate()} disabled={earlier.isPending}>
                {earlier.isPending ? "Loading…" : "Load earlier events"}
              </button>
              {earlier.isError && <span className="field-error"> {(earlier.error as Error).message}</span>}
            </div>
          )}
          {events.isPending ? (
            <Loading />
          ) : events.isError && !events.data ? (
            <ErrorState error={events.error} onRetry={() => void events.refetch()} />
          ) : (
            <EventsTimeline events={timeline} />
          )}
        </section>
        <div className="grid" style={{ alignContent: "start" }}>
          {(j.last_error || j.last_traceback) && (
            <section className="panel" aria-labelledby="error-title">
              <header>
                <h2 id="error-title">Last error</h2>
              </header>
              {j.last_error && (
                <p className="mono" style={{ color: "var(--failed)", marginTop: 0, overflowWrap: "anywhere" }}>
                  {j.last_error}
                </p>
              )}
              {j.last_traceback && (
                <details>
                  <summary>Traceback</summary>
                  <pre className="traceback">{j.last_traceback}</pre>
                </details>
              )}
            </section>
          )}
          <section className="panel" aria-labelledby="payload-title">
            <header>
              <h2 id="payload-title">Payload</h2>
            </header>
            <pre className="json" data-testid="job-payload">
              {JSON.stringify(j.payload, null, 2)}
            </pre>
          </section>
          {j.result !== null && j.result !== undefined && (
            <section className="panel" aria-labelledby="result-title">
              <header>
                <h2 id="result-title">Result</h2>
              </header>
              <pre className="json">{JSON.stringify(j.result, null, 2)}</pre>
            </section>
          )}
          <section className="panel" aria-labelledby="fields-title">
            <header>
              <h2 id="fields-title">All fields</h2>
            </header>
            <AllFields job={j} />
          </section>
        </div>
      </div>
    </>
  );
}

/**
 * The job's progress, from whichever of the two polls saw it last: the detail, or a progress
 * event of the running attempt that the event feed brought in since.
 */
export function currentProgress(job: JobDetail, events: JobEvent[]): { percent: number | null; message: string } {
  const fromJob = { percent: job.progress.percent, message: job.progress.message };
  if (job.status !== "running") return fromJob;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.kind !== "progress" || e.attempt !== job.attempts) continue;
    const percent = (e.data as { percent?: unknown }).percent;
    if (typeof percent !== "number" || Date.parse(e.created_at) <= Date.parse(job.updated_at)) return fromJob;
    return { percent, message: e.message };
  }
  return fromJob;
}

/**
 * The title row (breadcrumb, title, badge, the live dot and the actions) and, under it, the
 * notices: the confirmation before cancelling a running job, the last action's outcome and
 * the creation notice, each read against the job as it is now (lib/jobView.ts), so a notice
 * goes once it no longer applies.
 */
function JobHead({ job, created, live }: { job: JobDetail; created: CreatedState; live: ReactNode }) {
  const user = useUser();
  const queryClient = useQueryClient();
  const cancel = useMutation(jobMutations.cancel(queryClient));
  const retry = useMutation(jobMutations.retry(queryClient));
  const [confirming, setConfirming] = useState(false);
  const cancelButton = useRef<HTMLButtonElement>(null);
  const remove = useMutation(jobMutations.delete(queryClient));
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const navigate = useNavigate();
  // Only a finished job can be deleted: a confirmation for one retried meanwhile no longer applies.
  const askToDelete = confirmingDelete && isFinished(job);
  const canCancel = !isFinished(job) && !job.cancel_requested_at;
  const canRetry = job.status === "failed" || job.status === "cancelled";
  // A confirmation for a job that has meanwhile finished no longer applies.
  const askToCancel = confirming && canCancel && job.status === "running";
  const last =
    cancel.submittedAt > retry.submittedAt
      ? { verb: "cancel" as const, m: cancel }
      : { verb: "retry" as const, m: retry };
  const action: LastAction | null =
    last.m.isIdle || last.m.isPending
      ? null
      : { verb: last.verb, answer: last.m.data, error: last.m.error ?? undefined };
  const outcome = actionNotice(action, job);
  const welcome = createdNotice(created, job);
  const doCancel = () => {
    setConfirming(false);
    retry.reset();
    cancel.mutate(job.id);
  };
  return (
    <>
      <div className="page-head">
        <div className="page-title">
          <div className="muted">
            <Link to="/jobs">Jobs</Link> / #{job.id}
          </div>
          <h1 className="title-with-badge">
            <span>
              #{job.id} {job.type}
            </span>{" "}
            <StatusBadge job={job} />
          </h1>
        </div>
        <div className="actions">
          {live}
          {user.can.cancel && (
            <button
              ref={cancelButton}
              type="button"
              className="danger"
              disabled={!canCancel || cancel.isPending || askToCancel}
              title={
                canCancel
                  ? "Stop this job"
                  : job.cancel_requested_at
                    ? "Cancel already requested"
                    : "The job has finished"
              }
              onClick={() => (job.status === "running" ? setConfirming(true) : doCancel())}
            >
              {cancel.isPending ? "Cancelling…" : "Cancel"}
            </button>
          )}
          {user.can.retry && (
            <button
              type="button"
              className="primary"
              disabled={!canRetry || retry.isPending}
              title={canRetry ? "Queue it again" : "Only failed or cancelled jobs can be retried"}
              onClick={() => {
                cancel.reset();
                retry.mutate(job.id);
              }}
            >
              {retry.isPending ? "Retrying…" : "Retry"}
            </button>
          )}
          {user.can.delete && isFinished(job) && (
            <button
              ref={deleteButton}
              type="button"
              className="danger"
              disabled={remove.isPending || askToDelete}
              title="Delete this job and its events"
              onClick={() => setConfirmingDelete(true)}
            >
              {remove.isPending ? "Deleting…" : "Delete"}
            </button>
          )}
        </div>
      </div>
      {askToDelete && (
        <div className="notice warn confirm-bar">
          <InlineConfirm
            testId="confirm-delete"
            tone="danger"
            question={`Delete job #${job.id} and its events? This cannot be undone.`}
            confirmLabel="Yes, delete it"
            keepLabel="Keep it"
            busy={remove.isPending}
            onConfirm={() =>
              remove.mutate(job.id, {
                onSuccess: () => void navigate("/jobs", { state: { deleted: job.id } }),
                onSettled: () => setConfirmingDelete(false),
              })
            }
            onKeep={() => setConfirmingDelete(false)}
            returnFocus={deleteButton}
          />
        </div>
      )}
      {remove.isError && (
        <div className="notice error" role="alert" data-testid="delete-outcome">
          Could not delete job #{job.id}: {(remove.error as Error).message}
        </div>
      )}
      {askToCancel && (
        <div className="notice warn confirm-bar">
          <InlineConfirm
            testId="confirm-cancel"
            tone="danger"
            question={`Cancel job #${job.id} while it runs? The worker stops the handler at its next check and the job ends cancelled.`}
            confirmLabel="Yes, cancel it"
            keepLabel="Keep it running"
            onConfirm={doCancel}
            onKeep={() => setConfirming(false)}
            returnFocus={cancelButton}
          />
        </div>
      )}
      {outcome && (
        <div
          className={`notice ${outcome.tone}`}
          role={outcome.tone === "error" ? "alert" : "status"}
          data-testid="action-outcome"
        >
          {outcome.text}
        </div>
      )}
      {welcome && (
        <div className={`notice ${welcome.tone}`} role="status" data-testid="created-notice">
          {welcome.text}
        </div>
      )}
    </>
  );
}

function RunFacts({ job }: { job: JobDetail }) {
  const now = useNow(1000);
  const ran = job.started_at
    ? (job.finished_at ? Date.parse(job.finished_at) : now) - Date.parse(job.started_at)
    : null;
  return (
    <dl className="kv" style={{ marginTop: 12 }}>
      <dt>Created</dt>
      <dd title={job.created_at}>{formatRelative(job.created_at, now)}</dd>
      {job.status === "queued" && (
        <>
          <dt>Runnable</dt>
          <dd title={job.available_at}>
            {Date.parse(job.available_at) > now ? formatRelative(job.available_at, now) : "now"}
          </dd>
        </>
      )}
      {ran !== null && (
        <>
          <dt>{job.finished_at ? "Ran for" : "Running for"}</dt>
          <dd>{formatDuration(ran)}</dd>
        </>
      )}
      {job.finished_at && (
        <>
          <dt>Finished</dt>
          <dd title={job.finished_at}>{formatRelative(job.finished_at, now)}</dd>
        </>
      )}
      <dt>Timeout</dt>
      <dd>{job.timeout_seconds ? `${job.timeout_seconds} s per attempt` : "none"}</dd>
    </dl>
  );
}

function LeasePanel({ job }: { job: JobDetail }) {
  const now = useNow(1000);
  if (!job.locked_by) {
    return (
      <p className="muted" style={{ margin: 0 }}>
        {leaseSummary(job, now)}
      </p>
    );
  }
  return (
    <dl className="kv">
      <dt>Owner</dt>
      <dd className="mono" data-testid="lease-owner">
        {job.locked_by}
      </dd>
      <dt>Expires</dt>
      <dd>
        <LeaseCountdown expiresAt={job.lease_expires_at} />
      </dd>
      <dt>Token</dt>
      <dd className="mono faint">{job.lease_token ?? "—"}</dd>
      {job.cancel_requested_at && (
        <>
          <dt>Cancel</dt>
          <dd className="lease-warn">requested {formatTimestamp(job.cancel_requested_at)}</dd>
        </>
      )}
    </dl>
  );
}

function AttemptsPanel({ job }: { job: JobDetail }) {
  const now = useNow(1000);
  const left = Math.max(0, job.max_attempts - job.attempts);
  const backoff = job.status === "queued" && job.attempts > 0 && Date.parse(job.available_at) > now;
  return (
    <dl className="kv">
      <dt>Used</dt>
      <dd>
        <Attempts attempts={job.attempts} max={job.max_attempts} status={job.status} />
      </dd>
      <dt>Left</dt>
      <dd>{left}</dd>
      {backoff && (
        <>
          <dt>Next try</dt>
          <dd className="lease-warn">{formatRelative(job.available_at, now)} (back-off)</dd>
        </>
      )}
      <dt>Priority</dt>
      <dd>{job.priority}</dd>
      <dt>Queue</dt>
      <dd>{job.queue}</dd>
    </dl>
  );
}

function AllFields({ job }: { job: JobDetail }) {
  const rows: [string, ReactNode][] = [
    ["id", job.id],
    ["type", job.type],
    ["queue", job.queue],
    ["status", job.status],
    ["priority", job.priority],
    ["attempts", job.attempts],
    ["max_attempts", job.max_attempts],
    ["available_at", formatTimestamp(job.available_at)],
    ["created_at", formatTimestamp(job.created_at)],
    ["updated_at", formatTimestamp(job.updated_at)],
    ["started_at", formatTimestamp(job.started_at)],
    ["finished_at", formatTimestamp(job.finished_at)],
    ["locked_by", job.locked_by ?? "—"],
    ["lease_expires_at", formatTimestamp(job.lease_expires_at)],
    ["lease_token", job.lease_token ?? "—"],
    ["timeout_seconds", job.timeout_seconds ?? "—"],
    ["progress_percent", job.progress_percent ?? "—"],
    ["progress_message", job.progress_message || "—"],
    ["idempotency_key", job.idempotency_key ?? "—"],
    ["concurrency_key", job.concurrency_key ?? "—"],
    ["concurrency_key_limit", job.concurrency_key_limit ?? "—"],
    ["request_fingerprint", job.request_fingerprint ?? "—"],
    ["cancel_requested_at", formatTimestamp(job.cancel_requested_at)],
    ["is_finished", String(job.is_finished)],
  ];
  return (
    <dl className="kv" data-testid="job-fields">
      {rows.map(([k, v]) => (
        <div key={k} style={{ display: "contents" }}>
          <dt className="mono">{k}</dt>
          <dd className={typeof v === "string" && v.length > 30 ? "mono" : undefined}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
