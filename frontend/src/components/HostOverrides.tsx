/**
 * One host's overrides of its queues, on the workers page: for each queue the host runs (or has
 * an override of), how many of its threads may run the queue's jobs (the command line's, or the
 * override's cap) and whether the queue is stopped on this host; for users with
 * change_queuesetting, a threads box, a stop/start button and a clear button per queue, and a
 * form for a queue not listed yet. Data and mutations come from the page, as props.
 */
import { type FormEvent, useState } from "react";
import { Link } from "react-router";
import { ApiError } from "../api/client";
import type { HostQueue, OverrideInput } from "../api/workers";
import type { WorkerOverride } from "../api/types";
import type { Mutation } from "../views/types";

export type HostOverridesProps = {
  hostname: string;
  /** The queues its live processes name (none: they serve every queue). */
  queues: string[];
  /** Its processes' threads, each (what the command line gives a queue at most). */
  threads: number[];
  overrides: WorkerOverride[];
  /** Null: the user may not (change_queuesetting). */
  set: Mutation<OverrideInput> | null;
  remove: Mutation<HostQueue> | null;
};

/** "4 (command line)", "1 of 4", "stopped": what a queue may use on the host now. */
export function describeThreads(override: WorkerOverride | undefined, threads: number[]): string {
  const most = threads.length ? Math.max(...threads) : 0;
  const perProcess = threads.length > 1 ? " per process" : "";
  if (override?.stopped) return "stopped";
  if (override?.threads !== null && override?.threads !== undefined)
    return `${Math.min(override.threads, most || override.threads)} of ${most}${perProcess}`;
  return `${most}${perProcess} (command line)`;
}

function QueueRow({
  hostname,
  queue,
  override,
  threads,
  set,
  remove,
}: {
  hostname: string;
  queue: string;
  override: WorkerOverride | undefined;
  threads: number[];
  set: Mutation<OverrideInput> | null;
  remove: Mutation<HostQueue> | null;
}) {
  const [value, setValue] = useState(override?.threads?.toString() ?? "");
  const busy =
    (set?.isPending && set.variables?.queue === queue) || (remove?.isPending && remove.variables?.queue === queue);
  const stopped = !!override?.stopped;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set?.mutate({ hostname, queue, threads: value === "" ? null : Number(value), stopped });
  };
  const toggle = () => {
    const keepThreads = override?.threads ?? null;
    if (stopped && keepThreads === null) remove?.mutate({ hostname, queue });
    else set?.mutate({ hostname, queue, threads: keepThreads, stopped: !stopped });
  };
  return (
    <tr data-override-queue={queue} data-stopped={stopped}>
      <td className="card-title">
        <Link to={`/queues/${encodeURIComponent(queue)}`}>{queue}</Link>
      </td>
      <td data-label="Threads it may use" data-testid="override-threads">
        {describeThreads(override, threads)}
        {override && <div className="sub">set by {override.actor || "code"}</div>}
      </td>
      {(set || remove) && (
        <td className="card-wide" data-label="Change on this host">
          <form className="inline-form" onSubmit={submit} aria-label={`Threads for ${queue} on ${hostname}`}>
            <input
              type="number"
              min={0}
              step={1}
              inputMode="numeric"
              aria-label={`Threads for ${queue} on ${hostname}`}
              placeholder="threads"
              value={value}
              onChange={(e) => setValue(e.target.value)}
              style={{ width: "7em" }}
            />
            <button type="submit" disabled={busy || value === ""}>
              Set threads
            </button>
            <button type="button" className={stopped ? "primary" : "danger"} disabled={busy} onClick={toggle}>
              {stopped ? "Start here" : "Stop here"}
            </button>
            {override && (
              <button type="button" disabled={busy} onClick={() => remove?.mutate({ hostname, queue })}>
                Clear
              </button>
            )}
          </form>
        </td>
      )}
    </tr>
  );
}

/** What the form for another queue applies: a cap of the threads typed, or (none typed) a stop. */
export function addLabel(threads: string): string {
  return threads === "" ? "Stop here" : `Set threads to ${threads}`;
}

function AddQueue({ hostname, set }: { hostname: string; set: Mutation<OverrideInput> }) {
  const [queue, setQueue] = useState("");
  const [threads, setThreads] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set.mutate({
      hostname,
      queue: queue.trim(),
      threads: threads === "" ? null : Number(threads),
      stopped: threads === "",
    });
  };
  return (
    <form className="inline-form" onSubmit={submit} aria-label={`Override another queue on ${hostname}`}>
      <span className="faint">Another queue:</span>
      <input
        aria-label={`Queue on ${hostname}`}
        placeholder="queue"
        value={queue}
        onChange={(e) => setQueue(e.target.value)}
        required
        style={{ width: "12em" }}
      />
      <input
        type="number"
        min={0}
        step={1}
        aria-label={`Threads for the queue on ${hostname}`}
        placeholder="threads"
        value={threads}
        onChange={(e) => setThreads(e.target.value)}
        style={{ width: "10em" }}
      />
      <button type="submit" disabled={set.isPending}>
        {addLabel(threads)}
      </button>
    </form>
  );
}

export function HostOverrides({ hostname, queues, threads, overrides, set, remove }: HostOverridesProps) {
  const byQueue = new Map(overrides.map((o) => [o.queue, o]));
  const listed = [...new Set([...queues, ...byQueue.keys()])].sort((a, b) => a.localeCompare(b));
  const failed = [set, remove].find((m) => m?.error && m.variables && m.variables.hostname === hostname);
  const fieldErrors = failed?.error instanceof ApiError ? failed.error.fieldErrors : {};
  return (
    <div className="table-wrap" data-testid="host-overrides" data-host={hostname} style={{ marginBottom: 14 }}>
      <h2 className="sub">Queues on {hostname}</h2>
      {failed?.error && (
        <div className="notice error" role="alert">
          Could not change {failed.variables?.queue} on {hostname}:{" "}
          {Object.values(fieldErrors).flat().join(" ") || failed.error.message}
        </div>
      )}
      {listed.length === 0 ? (
        <p className="faint">
          It serves every queue with its command line's threads; give one a cap or stop it here below.
        </p>
      ) : (
        <table className="cards">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Threads it may use</th>
              {(set || remove) && <th>Change on this host</th>}
            </tr>
          </thead>
          <tbody>
            {listed.map((queue) => (
              <QueueRow
                key={`${queue}-${byQueue.get(queue)?.updated_at ?? ""}`}
                hostname={hostname}
                queue={queue}
                override={byQueue.get(queue)}
                threads={threads}
                set={set}
                remove={remove}
              />
            ))}
          </tbody>
        </table>
      )}
      {set && <AddQueue hostname={hostname} set={set} />}
    </div>
  );
}
