import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { schedulesOptions } from "../api/schedules";
import type { Schedule } from "../api/types";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { StatusPill } from "../components/StatusBadge";
import { formatRelative, formatTimestamp, useNow } from "../lib/time";

/**
 * Where a schedule's recent jobs are listed: the jobs list filtered by `schedule` (the jobs
 * whose idempotency key the schedule's ticks gave them), newest first, with the entry's type
 * and queue when it names them (they narrow nothing away, and an index serves the type).
 */
export function scheduleJobsLink(schedule: Pick<Schedule, "name" | "type" | "queue">): string {
  const params = new URLSearchParams();
  if (schedule.type) params.set("type", schedule.type);
  if (schedule.queue) params.set("queue", schedule.queue);
  params.set("schedule", schedule.name);
  return `/jobs?${params}`;
}

/** What one tick enqueues, in a line: `report_generate {"pages":20}` or `myapp.tasks.cleanup(days=7)`. */
export function scheduleTarget(schedule: Schedule): string {
  if (schedule.type) {
    const payload = JSON.stringify(schedule.payload ?? {});
    return payload === "{}" ? schedule.type : `${schedule.type} ${payload}`;
  }
  const args = [
    ...(schedule.args ?? []).map((a) => JSON.stringify(a)),
    ...Object.entries(schedule.kwargs ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`),
  ];
  return `${schedule.task ?? "?"}(${args.join(", ")})`;
}

export function SchedulesPage() {
  const schedules = useQuery(schedulesOptions());
  const rows = schedules.data ?? [];
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Periodic jobs</h1>
          <p>
            Every schedule in JOB_PERIODIC and every @periodic handler or task: when it runs, and what its last tick
            did.
          </p>
        </div>
        <LiveIndicator isError={schedules.isError} error={schedules.error} isFetching={schedules.isFetching} />
      </div>
      <section className="panel">
        {schedules.isPending ? (
          <Loading rows={4} />
        ) : schedules.isError && !schedules.data ? (
          <ErrorState error={schedules.error} onRetry={() => void schedules.refetch()} />
        ) : rows.length === 0 ? (
          <Empty title="No periodic jobs">
            <p>
              Declare them in the <code>JOB_PERIODIC</code> setting or with the <code>@periodic</code> decorator; the
              workers enqueue each tick once.
            </p>
          </Empty>
        ) : (
          <SchedulesTable rows={rows} />
        )}
      </section>
    </>
  );
}

function SchedulesTable({ rows }: { rows: Schedule[] }) {
  const now = useNow(1000);
  return (
    <div className="table-wrap">
      <table data-testid="schedules-table">
        <thead>
          <tr>
            <th>Schedule</th>
            <th>Enqueues</th>
            <th>Cron</th>
            <th>Last run</th>
            <th>Next run</th>
            <th>
              <span className="sr-only">Jobs</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => {
            const jobs = scheduleJobsLink(s);
            return (
              <tr key={s.name} data-schedule={s.name}>
                <td>
                  <div className="schedule-name">
                    <strong>{s.name}</strong>
                    {!s.valid && (
                      <span className="badge badge-failed" style={{ marginLeft: 6 }}>
                        invalid
                      </span>
                    )}
                  </div>
                  <div className="sub">{s.source === "decorator" ? "@periodic" : "JOB_PERIODIC"}</div>
                  {s.problems.length > 0 && (
                    <ul className="problems field-error" data-testid="schedule-problems">
                      {s.problems.map((p) => (
                        <li key={p}>{p}</li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>
                  <div className="mono truncate" title={scheduleTarget(s)}>
                    {scheduleTarget(s)}
                  </div>
                  <div className="sub">
                    queue {s.queue ?? "default"}
                    {s.priority !== null && ` · priority ${s.priority}`}
                    {s.max_attempts !== null && ` · ${s.max_attempts} attempts`}
                  </div>
                </td>
                <td>
                  <code data-testid="schedule-cron">{s.cron}</code>
                  <div className="sub">{s.timezone}</div>
                </td>
                <td className="nowrap" data-testid="schedule-last">
                  {s.last_tick_at ? (
                    <>
                      <span title={formatTimestamp(s.last_tick_at)}>{formatRelative(s.last_tick_at, now)}</span>
                      <div className="sub">
                        {s.last_job ? (
                          <>
                            <Link to={`/jobs/${s.last_job.id}`}>#{s.last_job.id}</Link>{" "}
                            <StatusPill status={s.last_job.status} />
                          </>
                        ) : (
                          "not enqueued (no worker ran then, or pruned)"
                        )}
                      </div>
                    </>
                  ) : (
                    <span className="faint">never</span>
                  )}
                </td>
                <td className="nowrap" data-testid="schedule-next">
                  {s.next_run_at ? (
                    <>
                      {formatRelative(s.next_run_at, now)}
                      <div className="sub">{formatTimestamp(s.next_run_at)}</div>
                    </>
                  ) : (
                    <span className="faint">{s.valid ? "—" : "skipped while invalid"}</span>
                  )}
                </td>
                <td className="nowrap">
                  <Link to={jobs} title={`The jobs ${s.name} enqueued, newest first`}>
                    {s.type ? `Recent ${s.type} jobs` : "Recent jobs"}
                  </Link>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
