import type { JobDetail } from "../api/types";
import { formatClock, formatRelative, useNow } from "../lib/time";

type Props = {
  job: Pick<JobDetail, "type" | "next_attempt" | "waiting_for_handler" | "unknown_type_at">;
};

/** The first line of an error, as the attempt's cause. */
function firstLine(error: string): string {
  const line = error.split("\n", 1)[0];
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

/**
 * When and why a queued job that already ran runs again ("attempt 2 of 5 at 12:03:10, after
 * ValueError: ...; policy: delays [1, 5, 30]"), and whether it waits for a worker that has a
 * handler for its type (a rolling deploy). Renders nothing for any other job.
 */
export function NextAttempt({ job }: Props) {
  const now = useNow(1000);
  const next = job.next_attempt;
  if (!next && !job.waiting_for_handler) return null;
  return (
    <div className="next-attempt" data-testid="next-attempt" role="status">
      {job.waiting_for_handler && (
        <p className="lease-warn" style={{ margin: "8px 0 0" }}>
          Waiting for a worker that has a handler for <code>{job.type}</code>: a worker without one gave it back
          {job.unknown_type_at ? ` at ${formatClock(job.unknown_type_at)}` : ""}, without charging an attempt.
        </p>
      )}
      {next && (
        <p className="muted" style={{ margin: "8px 0 0" }}>
          Attempt {next.attempt} of {next.max_attempts} at{" "}
          <time dateTime={next.at} title={next.at}>
            {formatClock(next.at)}
          </time>{" "}
          ({formatRelative(next.at, now)}){next.after_error ? `, after ${firstLine(next.after_error)}` : ""}; policy:{" "}
          {next.policy}
        </p>
      )}
    </div>
  );
}
