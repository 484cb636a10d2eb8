/**
 * The workers page as its route (pages/WorkersPage.tsx) loaded it: the processes grouped by
 * host and supervisor, one table a group (cards on a phone), then those lost in the last day.
 */
import { Link } from "react-router";
import type { LostWorker, Worker, WorkerOverride } from "../api/types";
import type { HostQueue, OverrideInput } from "../api/workers";
import { HostOverrides } from "../components/HostOverrides";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { formatRelative, formatTimestamp, useNow } from "../lib/time";
import { placeJobs } from "../lib/workers";
import type { Loaded, Mutation } from "./types";

/** "73 MiB", or "—" when the process did not report it. */
export function formatMemory(bytes: number | null): string {
  if (bytes === null) return "—";
  const mib = bytes / 2 ** 20;
  return mib >= 1024 ? `${(mib / 1024).toFixed(1)} GiB` : `${Math.round(mib)} MiB`;
}

/** The processes grouped by host, then by supervisor (null: unsupervised), in a stable order. */
export function groupWorkers(rows: Worker[]): [string, Worker[]][] {
  const groups = new Map<string, Worker[]>();
  for (const w of rows) {
    const key = w.supervisor_pid === null ? w.hostname : `${w.hostname} · supervisor ${w.supervisor_pid}`;
    groups.set(key, [...(groups.get(key) ?? []), w]);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/**
 * Each host with a live process or an override: the queues its processes name, their threads,
 * its overrides; in host order.
 */
export function hostsOf(
  rows: Worker[],
  overrides: WorkerOverride[],
): { hostname: string; queues: string[]; threads: number[]; overrides: WorkerOverride[] }[] {
  const names = new Set([
    ...rows.filter((w) => w.state === "alive").map((w) => w.hostname),
    ...overrides.map((o) => o.hostname),
  ]);
  return [...names]
    .sort((a, b) => a.localeCompare(b))
    .map((hostname) => {
      const alive = rows.filter((w) => w.hostname === hostname && w.state === "alive");
      return {
        hostname,
        queues: [...new Set(alive.flatMap((w) => w.queues.filter((q) => q !== "*")))],
        threads: alive.map((w) => w.threads),
        overrides: overrides.filter((o) => o.hostname === hostname),
      };
    });
}

/** Every worker process: its threads and queues, what it runs, memory, jobs done, started, last beat. */
export function WorkersView({
  workers,
  lost,
  overrides,
  setOverride,
  removeOverride,
}: {
  workers: Loaded<Worker[]>;
  lost: Loaded<LostWorker[]>;
  /** Every host's overrides of its queues. */
  overrides: Loaded<WorkerOverride[]>;
  /** Set or remove one (null: the user may not: change_queuesetting). */
  setOverride: Mutation<OverrideInput> | null;
  removeOverride: Mutation<HostQueue> | null;
}) {
  const rows = workers.data ?? [];
  const hosts = workers.data ? hostsOf(rows, overrides.data ?? []) : [];
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Workers</h1>
          <p>
            Every <code>run_job_workers</code> process. One that stops beating for two heartbeat intervals is shown as{" "}
            <strong>lost</strong>, with what it held, until the reaper has requeued its jobs.
          </p>
        </div>
        <LiveIndicator isError={workers.isError} error={workers.error} isFetching={workers.isFetching} />
      </div>
      <section className="panel">
        {workers.isPending ? (
          <Loading rows={3} />
        ) : workers.isError && !workers.data ? (
          <ErrorState error={workers.error} onRetry={() => void workers.refetch()} />
        ) : rows.length === 0 ? (
          <Empty title="No worker is running">
            <p>
              Start one with <code>manage.py run_job_workers</code> (<code>--processes N</code> for a supervised host).
            </p>
          </Empty>
        ) : (
          groupWorkers(rows).map(([group, members]) => <WorkersTable key={group} title={group} rows={members} />)
        )}
      </section>
      {hosts.length > 0 && (
        <section className="panel" aria-labelledby="host-overrides-title" style={{ marginTop: 14 }}>
          <header>
            <h2 id="host-overrides-title">Queues per host</h2>
            <span className="faint">Workers follow within one lease renewal (2 s by default); running jobs finish</span>
          </header>
          {hosts.map((h) => (
            <HostOverrides key={h.hostname} {...h} set={setOverride} remove={removeOverride} />
          ))}
        </section>
      )}
      {(lost.data ?? []).length > 0 && <LostWorkersTable rows={lost.data!} />}
    </>
  );
}

/** Processes forgotten once the reaper took their jobs back: the last day's, newest first. */
function LostWorkersTable({ rows }: { rows: LostWorker[] }) {
  const now = useNow(10_000);
  return (
    <section className="panel" aria-labelledby="lost-workers-title" style={{ marginTop: 14 }}>
      <header>
        <h2 id="lost-workers-title">Recently lost</h2>
        <span className="faint">In the last day, once the reaper took their jobs back</span>
      </header>
      <div className="table-wrap">
        <table data-testid="lost-workers-table" className="cards">
          <thead>
            <tr>
              <th>Process</th>
              <th>Last seen</th>
              <th>Gone from the list</th>
              <th>Its jobs</th>
              <th>Jobs done</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((w) => (
              <tr key={`${w.worker_id}-${w.forgotten_at}`} data-lost-worker={w.worker_id}>
                <td className="mono card-title">
                  {w.worker_id}
                  <div className="sub">
                    pid {w.pid}, {w.threads} thread{w.threads === 1 ? "" : "s"}
                    {w.supervisor_pid !== null && `, supervisor ${w.supervisor_pid}`}
                  </div>
                </td>
                <td className="nowrap card-time" data-label="Last seen" title={formatTimestamp(w.last_heartbeat_at)}>
                  {formatRelative(w.last_heartbeat_at, now)}
                </td>
                <td className="nowrap" data-label="Gone from the list" title={formatTimestamp(w.forgotten_at)}>
                  {formatRelative(w.forgotten_at, now)}
                </td>
                <td data-label="Its jobs" data-testid="lost-worker-jobs">
                  {w.jobs_requeued === 0 && w.jobs_failed === 0 ? (
                    <span className="faint">held none</span>
                  ) : (
                    <>
                      {w.jobs_requeued} requeued
                      {w.jobs_failed > 0 && <>, {w.jobs_failed} failed (no attempt left)</>}
                    </>
                  )}
                </td>
                <td data-label="Jobs done">{w.jobs_done}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function WorkersTable({ title, rows }: { title: string; rows: Worker[] }) {
  const now = useNow(1000);
  return (
    <div className="table-wrap">
      <h2 className="sub">{title}</h2>
      <table data-testid="workers-table" className="cards">
        <thead>
          <tr>
            <th>Process</th>
            <th>State</th>
            <th>Threads</th>
            <th>Queues</th>
            <th>Running</th>
            <th>Memory</th>
            <th>Jobs done</th>
            <th>Started</th>
            <th>Last beat</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((w) => {
            const place = placeJobs(w.running_jobs, w.threads);
            return (
              <tr key={w.id} data-worker={w.id} data-state={w.state}>
                <td className="mono card-title">
                  {w.id}
                  <div className="sub">pid {w.pid}</div>
                </td>
                <td className="card-status" data-testid="worker-state">
                  <span className={`badge ${w.state === "lost" ? "badge-failed" : "badge-running"}`}>{w.state}</span>
                  {w.stuck_handlers > 0 && (
                    <div className="sub field-error" data-testid="worker-stuck">
                      {w.stuck_handlers} stuck handler{w.stuck_handlers === 1 ? "" : "s"}
                    </div>
                  )}
                </td>
                <td data-label="Threads">
                  {w.state === "lost" ? w.threads : `${place.busy}/${w.threads} busy`}
                  {w.state === "alive" && place.waiting > 0 && (
                    <div className="sub">+{place.waiting} waiting for a thread</div>
                  )}
                </td>
                <td data-label="Queues">
                  {w.queues.length === 0 || w.queues.includes("*") ? "all" : w.queues.join(", ")}
                </td>
                <td className="card-wide" data-label="Running" data-testid="worker-jobs">
                  {w.running_jobs.length === 0 ? (
                    <span className="faint">idle</span>
                  ) : (
                    <ul className="plain">
                      {w.running_jobs.map((j) => (
                        <li key={j.id}>
                          <Link to={`/jobs/${j.id}`}>#{j.id}</Link> {j.type}{" "}
                          <span className="sub" title={j.worker_id}>
                            {w.state === "lost" ? "" : place.labels.get(j.id)}
                          </span>
                        </li>
                      ))}
                    </ul>
                  )}
                  {w.state === "lost" && w.running_jobs.length > 0 && (
                    <div className="sub">held when it was lost: requeued when their leases expire</div>
                  )}
                </td>
                <td data-label="Memory">{formatMemory(w.rss_bytes)}</td>
                <td data-label="Jobs done">{w.jobs_done}</td>
                <td className="nowrap" data-label="Started" title={formatTimestamp(w.started_at)}>
                  {formatRelative(w.started_at, now)}
                </td>
                <td
                  className="nowrap card-time"
                  data-label="Last beat"
                  data-testid="worker-last-beat"
                  title={formatTimestamp(w.heartbeat_at)}
                >
                  {formatRelative(w.heartbeat_at, now)}
                  <div className="sub">every {w.heartbeat_interval_seconds.toFixed(1)} s</div>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
