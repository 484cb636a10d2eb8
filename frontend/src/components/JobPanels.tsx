/**
 * The job page's panels, each given the job as the detail poll last read it. A panel another
 * part of the page needs (retry policy, dependencies, ...) goes here or in its own file, and is
 * mounted with one line in views/JobDetailView.tsx.
 */
import type { ReactNode } from "react";
import { Link } from "react-router";
import type { JobDetail } from "../api/types";
import { leaseSummary } from "../lib/jobView";
import { formatDuration, formatRelative, formatTimestamp, useNow } from "../lib/time";
import { LeaseCountdown } from "./LeaseCountdown";
import { Attempts } from "./Progress";
import { Traceback } from "./Traceback";

/**
 * How long the job has run ("Running for", while it runs) or ran ("Ran for", once finished);
 * null for a job that is not running and has not finished: a queued job's `started_at` can be
 * left from a claim that was released (a prefetched job handed back), and it is not running.
 */
export function runTime(
  job: Pick<JobDetail, "status" | "started_at" | "finished_at">,
  now: number,
): { label: string; ms: number } | null {
  if (!job.started_at) return null;
  if (job.status === "running") return { label: "Running for", ms: now - Date.parse(job.started_at) };
  if (job.finished_at) return { label: "Ran for", ms: Date.parse(job.finished_at) - Date.parse(job.started_at) };
  return null;
}

export function RunFacts({ job }: { job: JobDetail }) {
  const now = useNow(1000);
  const ran = runTime(job, now);
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
          <dt>{ran.label}</dt>
          <dd data-testid="run-time">{formatDuration(ran.ms)}</dd>
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
      {job.unique_key && (
        <>
          <dt>Unique</dt>
          <dd data-testid="job-unique">
            <span className="mono">{job.unique_key}</span>
            <div className="sub">{uniqueSummary(job)}</div>
          </dd>
        </>
      )}
    </dl>
  );
}

/** What a unique job's key means for it now: a duplicate enqueue returns it, or no longer. */
export function uniqueSummary(job: Pick<JobDetail, "status" | "unique_states">): string {
  const states = Array.isArray(job.unique_states) ? (job.unique_states as string[]) : [];
  const among = states.includes(job.status);
  return among
    ? `While it is ${states.join(" or ")}, enqueuing a job with this key returns this job instead of a new one.`
    : `Held while ${states.join(" or ")}: now ${job.status}, an enqueue with this key makes a new job.`;
}

export function LeasePanel({ job }: { job: JobDetail }) {
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
      {(job.locked_by_state === "alive" || job.locked_by_state === "lost") && (
        <>
          <dt>Worker</dt>
          <dd data-testid="lease-owner-state" data-state={job.locked_by_state}>
            <span className={`badge ${job.locked_by_state === "lost" ? "badge-failed" : "badge-running"}`}>
              {job.locked_by_state}
            </span>{" "}
            {job.locked_by_state === "lost" && (
              <span className="sub">
                {job.locked_by_last_seen_at && (
                  <span title={formatTimestamp(job.locked_by_last_seen_at)}>
                    last seen {formatRelative(job.locked_by_last_seen_at, now)};{" "}
                  </span>
                )}
                requeued when its lease expires
              </span>
            )}
          </dd>
        </>
      )}
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

export function AttemptsPanel({ job }: { job: JobDetail }) {
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

export function AllFields({ job }: { job: JobDetail }) {
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
    ["request_fingerprint", job.request_fingerprint ?? "—"],
    ["concurrency_key", job.concurrency_key ?? "—"],
    ["concurrency_key_limit", job.concurrency_key_limit ?? "—"],
    ["fairness_key", job.fairness_key ?? "—"],
    ["fairness_wait", job.fairness_wait || "—"],
    ["rate_limit_wait", job.rate_limit_wait || "—"],
    ["batch", job.batch ? <Link to={`/batches/${job.batch}`}>batch #{job.batch}</Link> : "—"],
    ["unique_key", job.unique_key ?? "—"],
    ["unique_states", Array.isArray(job.unique_states) ? job.unique_states.join(", ") : "—"],
    ["idempotency_expires_at", formatTimestamp(job.idempotency_expires_at)],
    ["expires_at", formatTimestamp(job.expires_at)],
    ["debounce_key", job.debounce_key ?? "—"],
    ["retry_policy", job.retry_policy ? JSON.stringify(job.retry_policy) : "—"],
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

/** The last attempt's error and its traceback. */
export function LastErrorPanel({ job }: { job: JobDetail }) {
  return (
    <>
      {job.last_error && (
        <p className="mono" style={{ color: "var(--failed)", marginTop: 0, overflowWrap: "anywhere" }}>
          {job.last_error}
        </p>
      )}
      {job.last_traceback && (
        <details>
          <summary>Traceback</summary>
          <Traceback text={job.last_traceback} />
        </details>
      )}
    </>
  );
}
