import { Link } from "react-router";
import type { QueueAction } from "../api/queues";
import type { LatencyPoint, Queue } from "../api/types";
import { Sparkline } from "./LatencyChart";
import type { Loaded, Mutation } from "../views/types";
import { Empty, ErrorState, Loading } from "./States";

/** A queue with nothing queued or running and nothing set on it: its row is dimmed, not hidden. */
export const isIdle = (q: Queue) => q.queued === 0 && q.running === 0 && !q.paused && q.concurrency_limit === null;

/** By name: a row stays where it is as its queue fills and empties (busiest-first made it jump). */
export function sortQueues(queues: Queue[]): Queue[] {
  return [...queues].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Every queue with its load and limit, each linked to its page; operators pause and resume
 * them here (`toggle`; null: the user may not). Idle queues keep their rows (dimmed), so the
 * table does not jump as queues go idle. The route loads the list and runs the toggle.
 */
export function QueuesPanel({
  queues,
  toggle,
  maxDepth,
  title = "Queues",
  allLimits = false,
  sparklines,
}: {
  queues: Loaded<Queue[]>;
  toggle: Mutation<QueueAction> | null;
  maxDepth: number | null;
  title?: string;
  /** The limit column even when no queue has a limit (the queues page). */
  allLimits?: boolean;
  /** Each queue's percentiles per minute over the last hour (the queues page): a wait p95 column. */
  sparklines?: Record<string, LatencyPoint[]>;
}) {
  const all = sortQueues(queues.data ?? []);
  const shown = all;
  // The limit column only when some queue has one, unless asked for always.
  const limits = allLimits || shown.some((q) => q.concurrency_limit !== null);
  return (
    <section className="panel" aria-labelledby="queues-title">
      <header>
        <h2 id="queues-title">{title}</h2>
        {maxDepth !== null && <span className="faint">limit {maxDepth.toLocaleString()} queued</span>}
      </header>
      {toggle?.error && (
        <div className="notice error" role="alert">
          Could not {toggle.variables?.action} {toggle.variables?.name}: {toggle.error.message}
        </div>
      )}
      {queues.isPending ? (
        <Loading />
      ) : queues.isError && !queues.data ? (
        <ErrorState error={queues.error} onRetry={() => void queues.refetch()} />
      ) : all.length === 0 ? (
        <Empty title="No queues yet">A queue appears with its first job.</Empty>
      ) : (
        <>
          {
            <div className="table-wrap">
              <table data-testid="queues-table" className="cards">
                <thead>
                  <tr>
                    <th>Queue</th>
                    <th className="num">Runnable</th>
                    <th className="num">Running</th>
                    {limits && <th>Limit</th>}
                    {sparklines && <th>Wait p95, last hour</th>}
                    <th>State</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((q) => {
                    const busy = toggle?.isPending && toggle.variables?.name === q.name;
                    return (
                      <tr key={q.name} data-queue={q.name} data-idle={isIdle(q) || undefined}>
                        <td className="card-title queue-name">
                          <Link to={`/queues/${encodeURIComponent(q.name)}`} title={`Queue ${q.name}: its page`}>
                            {q.name}
                          </Link>
                        </td>
                        <td
                          className="num"
                          data-label="Runnable"
                          data-testid="queue-runnable"
                          title={
                            q.paused
                              ? `Paused: none of its ${q.queued} queued jobs is claimed until it is resumed`
                              : `${q.queued} queued in all, ${q.queued - q.runnable} due later`
                          }
                        >
                          {q.paused ? (
                            // Due, but not runnable while the queue is paused.
                            <span className="muted">0</span>
                          ) : (
                            q.runnable
                          )}
                          {q.paused
                            ? q.queued > 0 && <span className="sub"> {q.queued} held</span>
                            : q.queued > q.runnable && <span className="sub"> +{q.queued - q.runnable} later</span>}
                        </td>
                        <td className="num" data-label="Running">
                          {q.running}
                        </td>
                        {limits && (
                          <td className="nowrap" data-label="Limit">
                            {q.concurrency_limit === null ? (
                              <span className="faint">none</span>
                            ) : (
                              `${q.concurrency_limit} at once`
                            )}
                          </td>
                        )}
                        {sparklines && (
                          <td data-label="Wait p95, last hour" data-testid="queue-sparkline">
                            <Sparkline
                              points={sparklines[q.name] ?? []}
                              kind="wait"
                              pct="p95"
                              name={`Queue ${q.name}`}
                            />
                          </td>
                        )}
                        <td className="nowrap card-status">
                          <span className="actions" style={{ flexWrap: "nowrap" }}>
                            {q.paused ? (
                              <span className="badge badge-retrying">paused</span>
                            ) : (
                              <span className="muted">{isIdle(q) ? "idle" : "active"}</span>
                            )}
                            {toggle && (
                              <button
                                type="button"
                                className="small"
                                disabled={busy}
                                aria-label={`${q.paused ? "Resume" : "Pause"} queue ${q.name}`}
                                onClick={() => toggle.mutate({ name: q.name, action: q.paused ? "resume" : "pause" })}
                              >
                                {busy ? "…" : q.paused ? "Resume" : "Pause"}
                              </button>
                            )}
                          </span>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          }
        </>
      )}
    </section>
  );
}
