/**
 * A batch's page as its route (pages/BatchPage.tsx) loaded it: its members by outcome and what
 * is left (running, pending), a progress bar of the finished share, its callbacks (the job each
 * became once the batch finished) and the cancel of its pending members.
 */
import { Link } from "react-router";
import { isApiError } from "../api/client";
import type { Batch } from "../api/types";
import { ProgressBar } from "../components/Progress";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import type { Loaded } from "./types";

/** Where a batch's page is: `/batches/<id>`. */
export const batchPath = (id: number | string) => `/batches/${encodeURIComponent(String(id))}`;

/** The share of a batch's members that finished, in percent (an empty batch: 100). */
export function batchPercent(batch: Pick<Batch, "done" | "total">): number {
  return batch.total ? Math.floor((batch.done * 100) / batch.total) : 100;
}

/** Cancel the pending members, as the route's mutation runs it. */
export type BatchCancel = { mutate: () => void; isPending: boolean; error: Error | null };

const COUNTS = ["succeeded", "failed", "cancelled", "running", "pending"] as const;

export function BatchView({
  id,
  batch,
  canCancel,
  cancel,
}: {
  id: string;
  batch: Loaded<Batch>;
  canCancel: boolean;
  cancel: BatchCancel;
}) {
  return (
    <>
      <div className="page-head">
        <div>
          <h1>
            Batch <span className="mono">#{id}</span>
          </h1>
          <p>Its members by outcome, and the callbacks enqueued once every member finished.</p>
        </div>
        <LiveIndicator isError={batch.isError} error={batch.error} isFetching={batch.isFetching} />
      </div>
      {batch.isPending ? (
        <div className="panel">
          <Loading rows={4} />
        </div>
      ) : batch.isError && !batch.data ? (
        isApiError(batch.error, 404) ? (
          <section className="panel">
            <Empty title={`No batch #${id}`}>
              <p>
                <Link to="/jobs">Back to the jobs</Link>
              </p>
            </Empty>
          </section>
        ) : (
          <ErrorState error={batch.error} onRetry={() => void batch.refetch()} />
        )
      ) : (
        <BatchBody b={batch.data!} canCancel={canCancel} cancel={cancel} />
      )}
    </>
  );
}

function BatchBody({ b, canCancel, cancel }: { b: Batch; canCancel: boolean; cancel: BatchCancel }) {
  const status = b.finished ? (b.succeeded === b.total ? "succeeded" : "failed") : "running";
  return (
    <>
      <section className="panel" aria-label="The batch's progress">
        <ProgressBar percent={batchPercent(b)} status={status} label="Members finished" />
        <p data-testid="batch-summary">
          {b.done.toLocaleString()} of {b.total.toLocaleString()} finished
          {b.finished ? " — the batch finished" : ""}
          {b.cancelled_at ? " (cancelled)" : ""}
        </p>
        {canCancel && !b.finished && b.pending > 0 && (
          <button type="button" className="btn" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
            Cancel the pending members
          </button>
        )}
        {cancel.error && <p role="alert">{cancel.error.message}</p>}
      </section>
      <section className="stats" aria-label="The batch's members by outcome">
        {COUNTS.map((name) => (
          <div key={name} className={`stat tone-${name === "pending" ? "queued" : name}`} data-testid={`batch-${name}`}>
            <div className="label">{name[0].toUpperCase() + name.slice(1)}</div>
            <div className="value">{b[name].toLocaleString()}</div>
          </div>
        ))}
      </section>
      <section className="panel" aria-label="The batch's callbacks">
        <h2>Callbacks</h2>
        {b.callbacks.length === 0 ? (
          <p>None.</p>
        ) : (
          <ul>
            {b.callbacks.map((name) => {
              const jobId = b.callback_jobs[name];
              return (
                <li key={name} className="mono">
                  {name}:{" "}
                  {jobId !== undefined ? (
                    <Link to={`/jobs/${jobId}`}>job #{jobId}</Link>
                  ) : b.finished ? (
                    "not due"
                  ) : (
                    "when the batch finishes"
                  )}
                </li>
              );
            })}
          </ul>
        )}
      </section>
    </>
  );
}
