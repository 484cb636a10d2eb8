/**
 * The overview as its route (pages/OverviewPage.tsx) loaded it: the counts, throughput (the
 * route's panel, with its own filters), the finished jobs and run times, the queued by priority,
 * the queues, the workers and the recent activity (tables are cards on a phone).
 */
import type { ReactNode } from "react";
import { Link } from "react-router";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { ActivityFeed } from "../api/events";
import type { QueueAction } from "../api/queues";
import type { Metrics, Queue } from "../api/types";
import { kindLabel } from "../components/EventsTimeline";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { QueuesPanel } from "../components/QueuesPanel";
import { ShardsDownNotice } from "../components/Shards";
import { MiniProgress } from "../components/Progress";
import { StatusPill } from "../components/StatusBadge";
import { placeJobs } from "../lib/workers";
import { feedEventKey } from "../lib/events";
import { formatClock, formatDuration, formatRelative, formatSeconds, useNow } from "../lib/time";
import type { Loaded, Mutation } from "./types";

// The stylesheet's tokens, so the charts follow the light or dark theme.
const COLORS = { failed: "var(--failed)", queued: "var(--queued)" };
const GRID = "var(--chart-grid)";
const TICK = { fill: "var(--muted)" };
const TOOLTIP = {
  contentStyle: { background: "var(--panel)", border: "1px solid var(--border)", color: "var(--text)" },
  cursor: { fill: "var(--accent-soft)" },
};

export function OverviewView({
  metrics,
  activity,
  queues,
  throughput,
  latency,
}: {
  metrics: Loaded<Metrics>;
  activity: Loaded<ActivityFeed>;
  queues: OverviewQueues;
  /** The throughput chart. */
  throughput: ReactNode;
  /** The wait and run time percentiles, beside it. */
  latency?: ReactNode;
}) {
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Overview</h1>
          <p>Queue pressure, throughput and workers, refreshed every 2 s.</p>
        </div>
        <LiveIndicator isError={metrics.isError} error={metrics.error} isFetching={metrics.isFetching} />
      </div>
      <ShardsDownNotice shards={metrics.data?.shards} />
      {metrics.isError && metrics.data && (
        <ErrorState error={metrics.error} title="Showing the last figures; the latest poll failed" />
      )}
      {metrics.isPending ? (
        <div className="panel">
          <Loading rows={6} />
        </div>
      ) : metrics.isError && !metrics.data ? (
        <ErrorState error={metrics.error} onRetry={() => void metrics.refetch()} />
      ) : (
        <MetricsView m={metrics.data!} queues={queues} throughput={throughput} latency={latency} activity={activity} />
      )}
    </>
  );
}

/** The queues panel's list, and its pause and resume (null: the user may not). */
export type OverviewQueues = { list: Loaded<Queue[]>; toggle: Mutation<QueueAction> | null };

function MetricsView({
  m,
  queues,
  throughput,
  latency,
  activity,
}: {
  m: Metrics;
  queues: OverviewQueues;
  throughput: ReactNode;
  latency?: ReactNode;
  activity: Loaded<ActivityFeed>;
}) {
  const c = m.counts_by_status;
  const oldest = m.oldest_runnable_age_seconds;
  const retryRate = m.retry_rate === null ? "—" : `${(m.retry_rate * 100).toFixed(1)}%`;
  return (
    <>
      <section className="stats" aria-label="Jobs by status">
        <Stat
          to="/jobs?status=queued"
          tone="queued"
          label="Queued"
          value={c.queued}
          sub={`${m.queued.runnable} runnable · ${m.queued.scheduled} scheduled`}
        />
        <Stat
          to="/jobs?status=running"
          tone="running"
          label="Running"
          value={c.running}
          sub={`${m.workers.busy_threads}/${m.workers.threads} worker threads busy`}
        />
        <Stat
          to="/jobs?status=succeeded"
          tone="succeeded"
          label="Succeeded"
          value={c.succeeded}
          sub={`${m.finished.last_5m.succeeded} in the last 5 min`}
        />
        <Stat
          to="/failed"
          tone="failed"
          label="Failed"
          value={c.failed}
          alert={c.failed > 0}
          sub={`${m.finished.last_5m.failed} in the last 5 min`}
        />
        <Stat to="/jobs?status=cancelled" tone="cancelled" label="Cancelled" value={c.cancelled} />
        <Stat
          tone={oldest !== null && oldest > 60 ? "warn" : "queued"}
          label="Oldest runnable job"
          value={oldest === null ? "—" : formatSeconds(oldest)}
          sub={oldest === null ? "nothing waiting" : "waiting to be claimed"}
        />
        <Stat
          tone={m.retry_rate !== null && m.retry_rate > 0.2 ? "warn" : "queued"}
          label="Retry rate (15 min)"
          value={retryRate}
          sub="finished jobs that needed retries"
        />
        <Stat
          to="/workers"
          tone={m.workers.active === 0 || m.workers.lost > 0 ? "warn" : "running"}
          label="Active workers"
          value={m.workers.active}
          sub={[
            m.workers.active === 0 ? "no worker is polling" : `${m.workers.threads} threads`,
            ...(m.workers.lost > 0 ? [`${m.workers.lost} lost`] : []),
          ].join(" · ")}
          alert={m.workers.active === 0 || m.workers.lost > 0}
        />
      </section>

      <div className="grid grid-2" style={{ marginBottom: 14 }}>
        {throughput}
        {latency}
      </div>

      <div className="grid grid-2" style={{ marginBottom: 14 }}>
        <section className="panel" aria-labelledby="finished-title">
          <header>
            <h2 id="finished-title">Finished and run time</h2>
          </header>
          <div className="table-wrap">
            <table data-testid="overview-finished">
              <thead>
                <tr>
                  <th>Window</th>
                  <th className="num">Succeeded</th>
                  <th className="num">Failed</th>
                  <th className="num">Failure share</th>
                </tr>
              </thead>
              <tbody>
                {(
                  [
                    ["1 min", m.finished.last_1m],
                    ["5 min", m.finished.last_5m],
                    ["15 min", m.finished.last_15m],
                  ] as const
                ).map(([label, w]) => (
                  <tr key={label}>
                    <td>Last {label}</td>
                    <td className="num">{w.succeeded}</td>
                    <td className="num" style={w.failed ? { color: COLORS.failed, fontWeight: 600 } : undefined}>
                      {w.failed}
                    </td>
                    <td className="num">
                      {w.succeeded + w.failed ? `${((w.failed / (w.succeeded + w.failed)) * 100).toFixed(0)}%` : "—"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <dl className="kv" style={{ marginTop: 14 }}>
            <dt>Mean run time</dt>
            <dd>{formatSeconds(m.run_time_seconds.mean)}</dd>
            <dt>p95 run time</dt>
            <dd>{formatSeconds(m.run_time_seconds.p95)}</dd>
            <dt>Sample</dt>
            <dd>{m.run_time_seconds.sample_size} jobs finished in 15 min</dd>
          </dl>
        </section>
        <section className="panel" aria-labelledby="priority-title">
          <header>
            <h2 id="priority-title">Queued by priority</h2>
            <span className="faint">{m.queued.total} queued</span>
          </header>
          {m.queued.by_priority.length === 0 ? (
            <Empty title="Nothing queued">Every job has been claimed.</Empty>
          ) : (
            <div
              className="chart"
              role="img"
              aria-label={m.queued.by_priority.map((p) => `priority ${p.priority}: ${p.count}`).join(", ")}
            >
              <ResponsiveContainer width="100%" height="100%">
                <BarChart
                  data={[...m.queued.by_priority].sort((a, b) => b.priority - a.priority)}
                  margin={{ top: 8, right: 8, bottom: 0, left: -12 }}
                >
                  <CartesianGrid strokeDasharray="3 3" vertical={false} stroke={GRID} />
                  <XAxis dataKey="priority" tick={{ ...TICK, fontSize: 12 }} />
                  <YAxis allowDecimals={false} tick={{ ...TICK, fontSize: 12 }} />
                  <Tooltip {...TOOLTIP} formatter={(v) => [v, "queued"]} labelFormatter={(p) => `priority ${p}`} />
                  <Bar dataKey="count" fill={COLORS.queued} radius={[3, 3, 0, 0]} isAnimationActive={false} />
                </BarChart>
              </ResponsiveContainer>
            </div>
          )}
        </section>
      </div>

      <div style={{ marginBottom: 14 }}>
        <QueuesPanel queues={queues.list} toggle={queues.toggle} maxDepth={m.queued.max_depth} />
      </div>

      <section className="panel" aria-labelledby="workers-title" style={{ marginBottom: 14 }}>
        <header>
          <h2 id="workers-title">Workers</h2>
          <span className="faint">
            {m.workers.busy_threads} of {m.workers.threads} threads busy
            {m.workers.lost > 0 && ` · ${m.workers.lost} lost`}
          </span>
        </header>
        <WorkersTable m={m} />
      </section>

      <ActivityPanel feed={activity} />
    </>
  );
}

function Stat({
  label,
  value,
  sub,
  tone,
  to,
  alert,
}: {
  label: string;
  value: number | string;
  sub?: string;
  tone: string;
  to?: string;
  alert?: boolean;
}) {
  const body = (
    <>
      <div className="label">{label}</div>
      <div className="value" data-testid={`stat-${label.toLowerCase().replace(/\W+/g, "-")}`}>
        {typeof value === "number" ? value.toLocaleString() : value}
      </div>
      {sub && <div className="sub">{sub}</div>}
    </>
  );
  const cls = `stat tone-${tone}${alert ? " alert" : ""}`;
  return to ? (
    <Link className={cls} to={to}>
      {body}
    </Link>
  ) : (
    <div className={cls}>{body}</div>
  );
}

function WorkersTable({ m }: { m: Metrics }) {
  const now = useNow(1000);
  if (m.workers.processes.length === 0) {
    return (
      <Empty title="No active workers">
        <p>
          Start one with <code>python manage.py run_job_workers</code>; queued jobs wait until then.
        </p>
      </Empty>
    );
  }
  return (
    <div className="table-wrap">
      <table className="cards" data-testid="overview-workers">
        <thead>
          <tr>
            <th>Process</th>
            <th>Queues</th>
            <th className="num">Busy</th>
            <th>Heartbeat</th>
            <th>Running</th>
          </tr>
        </thead>
        <tbody>
          {m.workers.processes.map((w) => {
            const beat = now - Date.parse(w.heartbeat_at);
            const lost = w.state === "lost";
            const place = placeJobs(w.running_jobs, w.threads);
            return (
              <tr key={w.id} data-worker={w.id} data-state={w.state}>
                <td className="card-title">
                  <div className="mono">{w.id}</div>
                  <div className="sub">
                    {lost ? (
                      <span className="badge badge-failed" data-testid="overview-worker-lost">
                        lost
                      </span>
                    ) : (
                      `up ${formatDuration(now - Date.parse(w.started_at))}`
                    )}
                  </div>
                </td>
                <td data-label="Queues">
                  {w.queues.length && !w.queues.includes("*") ? (
                    w.queues.join(", ")
                  ) : (
                    <span className="muted">all</span>
                  )}
                </td>
                <td className="num" data-label="Busy" data-testid="overview-worker-busy">
                  {lost ? (
                    <span className="muted">—</span>
                  ) : (
                    <>
                      {place.busy}/{w.threads}
                      {place.waiting > 0 && <div className="sub">+{place.waiting} waiting for a thread</div>}
                    </>
                  )}
                </td>
                <td className={`card-time ${lost || beat > 10_000 ? "lease-warn" : "muted"}`} data-label="Heartbeat">
                  {lost ? "last seen " : ""}
                  {formatRelative(w.heartbeat_at, now)}
                </td>
                <td className="card-wide" data-label="Running" data-testid="overview-worker-jobs">
                  {w.running_jobs.length === 0 ? (
                    <span className="muted">idle</span>
                  ) : (
                    w.running_jobs.map((j) => (
                      <div key={j.id} className="nowrap">
                        <Link to={`/jobs/${j.id}`}>#{j.id}</Link> {j.type}
                        <span className="faint" title={j.worker_id}>
                          {" "}
                          · {lost ? "held" : place.labels.get(j.id)}
                          {!lost && <> · {j.started_at ? formatDuration(now - Date.parse(j.started_at)) : "—"}</>}
                        </span>
                        {!lost && j.progress_percent !== null && (
                          <MiniProgress id={j.id} percent={j.progress_percent} />
                        )}
                      </div>
                    ))
                  )}
                  {lost && w.running_jobs.length > 0 && (
                    <div className="sub">held when it was lost: requeued when their leases expire</div>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function ActivityPanel({ feed }: { feed: Loaded<ActivityFeed> }) {
  // Transitions and outcomes only (api/events.ts): progress stays in each job's timeline.
  const events = [...(feed.data?.events ?? [])].reverse().slice(0, 15);
  return (
    <section className="panel" aria-labelledby="activity-title">
      <header>
        <h2 id="activity-title">Recent activity</h2>
        <LiveIndicator isError={feed.isError} error={feed.error} />
      </header>
      {feed.isPending ? (
        <Loading />
      ) : feed.isError && !feed.data ? (
        <ErrorState error={feed.error} />
      ) : events.length === 0 ? (
        <Empty title="No events yet">Create a job to see it move through the queue.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="cards" data-testid="activity-table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Job</th>
                <th>Event</th>
                <th>Job now</th>
                <th>Detail</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={feedEventKey(e)}>
                  <td className="mono nowrap card-time card-plain">{formatClock(e.created_at)}</td>
                  <td className="nowrap card-title">
                    <Link to={`/jobs/${e.job_id}`}>#{e.job_id}</Link> <span className="muted">{e.job_type}</span>
                  </td>
                  <td className="nowrap" data-label="Event">
                    {kindLabel(e.kind)}
                    {e.attempt ? <span className="faint"> · attempt {e.attempt}</span> : null}
                  </td>
                  <td className="card-status">
                    <StatusPill status={e.job_status} />
                  </td>
                  <td
                    className={`truncate muted card-wide${e.message ? "" : " card-empty"}`}
                    data-label="Detail"
                    title={e.message}
                  >
                    {e.message}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
