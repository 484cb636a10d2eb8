/**
 * The queues page as its route (pages/QueuesPage.tsx) loaded it: every queue, by name, with
 * what it holds (runnable, due later, held while paused), what runs, its concurrency limit and
 * whether it is paused, each linked to its own page (cards on a phone).
 */
import type { QueueAction } from "../api/queues";
import type { Latency, Queue } from "../api/types";
import { QueuesPanel } from "../components/QueuesPanel";
import { LiveIndicator } from "../components/States";
import type { Loaded, Mutation } from "./types";

export function QueuesView({
  queues,
  toggle,
  latency,
}: {
  queues: Loaded<Queue[]>;
  /** Pause and resume (null: the user may not). */
  toggle: Mutation<QueueAction> | null;
  /** Each queue's percentiles over the last hour (by=queue), for the sparklines; none yet. */
  latency?: Latency;
}) {
  const count = queues.data?.length;
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Queues</h1>
          <p>Every queue: what it holds and runs, its concurrency limit, and whether it is paused.</p>
        </div>
        <LiveIndicator isError={queues.isError} error={queues.error} isFetching={queues.isFetching} />
      </div>
      <QueuesPanel
        queues={queues}
        toggle={toggle}
        maxDepth={null}
        allLimits
        sparklines={latency ? Object.fromEntries(latency.series.map((s) => [s.queue ?? "", s.points])) : undefined}
        title={count === undefined ? "Queues" : `${count.toLocaleString()} queue${count === 1 ? "" : "s"}`}
      />
    </>
  );
}
