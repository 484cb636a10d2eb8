import { Link } from "react-router";
import type { JobDetail } from "../api/types";

type KeyFields = Pick<
  JobDetail,
  | "id"
  | "status"
  | "concurrency_key"
  | "concurrency_key_limit"
  | "concurrency_key_running"
  | "concurrency_key_wait"
  | "concurrency_key_holders"
>;

/** A job's concurrency key: its limit and the jobs of the key that run now (each linked, this
 * one as "this job"); for a queued job whose key is full (the API's `concurrency_key_wait`),
 * that it waits for them. Each figure is said once. Nothing without a key. */
export function ConcurrencyKey({ job }: { job: KeyFields }) {
  if (!job.concurrency_key) return null;
  const waiting = job.concurrency_key_wait !== "";
  const running = job.concurrency_key_running ?? 0;
  const holders = job.concurrency_key_holders;
  const unnamed = running - holders.length;
  const names = (
    <>
      {holders.map((id, i) => (
        <span key={id}>
          {i > 0 && ", "}
          {id === job.id ? "this job" : <Link to={`/jobs/${id}`}>#{id}</Link>}
        </span>
      ))}
      {unnamed > 0 && ` and ${unnamed} more`}
    </>
  );
  return (
    <div
      className={waiting ? "notice warn" : "notice"}
      role="status"
      data-testid="concurrency-key"
      style={{ marginBottom: 14 }}
    >
      <strong>
        {waiting ? "Waiting for concurrency key" : "Concurrency key"} {job.concurrency_key}
      </strong>
      <span className={waiting ? undefined : "muted"} data-testid="concurrency-key-holders">
        {" "}
        · at most {job.concurrency_key_limit} at once
        {waiting ? (
          <>
            , held by {holders.length > 0 ? names : `${running} running jobs`}: it runs when{" "}
            {running === 1 ? "that job finishes" : "one of them finishes"}
          </>
        ) : (
          <>
            {" "}
            · {running} running now{holders.length > 0 && ": "}
            {holders.length > 0 && names}
          </>
        )}
      </span>
    </div>
  );
}
