import type { JobDetail } from "../api/types";

type KeyFields = Pick<
  JobDetail,
  "status" | "concurrency_key" | "concurrency_key_limit" | "concurrency_key_running" | "concurrency_key_wait"
>;

/** A job's concurrency key: its limit, how many jobs of the key run now, and, for a queued job
 * whose key is full, why it waits (the API's `concurrency_key_wait`). Nothing without a key. */
export function ConcurrencyKey({ job }: { job: KeyFields }) {
  if (!job.concurrency_key) return null;
  const waiting = job.concurrency_key_wait !== "";
  return (
    <div
      className={waiting ? "notice warn" : "notice"}
      role="status"
      data-testid="concurrency-key"
      style={{ marginBottom: 14 }}
    >
      <strong>{waiting ? job.concurrency_key_wait : `Concurrency key ${job.concurrency_key}`}</strong>
      <span className="muted">
        {" "}
        · at most {job.concurrency_key_limit} at once · {job.concurrency_key_running ?? 0} running now
      </span>
    </div>
  );
}
