/**
 * The periodic jobs page as its route (pages/SchedulesPage.tsx) loaded it: one row a schedule
 * (cards on a phone) with its run-now, pause and resume, and under it, when unfolded, its tick
 * history: each tick (or run-now), its job, how it went and when it ran.
 */
import { Fragment, type ReactNode } from "react";
import { Link } from "react-router";
import type { Schedule, ScheduleTick } from "../api/types";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { StatusPill } from "../components/StatusBadge";
import { formatRelative, formatTimestamp, useNow } from "../lib/time";
import type { Loaded } from "./types";

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

/**
 * When a schedule's last job ran, from the job's own times (not the tick's): finished, running
 * since, or not run yet. Null when there is no job to speak of.
 */
export function lastRun(
  job: { started_at: string | null; finished_at: string | null } | null | undefined,
  now: number,
): { text: string; at: string | null } | null {
  if (!job) return null;
  if (job.finished_at) return { text: `ran ${formatRelative(job.finished_at, now)}`, at: job.finished_at };
  if (job.started_at) return { text: `running since ${formatRelative(job.started_at, now)}`, at: job.started_at };
  return { text: "not run yet", at: null };
}

export function SchedulesView({
  schedules,
  row,
}: {
  schedules: Loaded<Schedule[]>;
  /** One schedule's row, as the route wires its actions and its tick history. */
  row: (schedule: Schedule, now: number) => ReactNode;
}) {
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
          <SchedulesTable rows={rows} row={row} />
        )}
      </section>
    </>
  );
}

function SchedulesTable({ rows, row }: { rows: Schedule[]; row: (schedule: Schedule, now: number) => ReactNode }) {
  const now = useNow(1000);
  return (
    <div className="table-wrap">
      <table data-testid="schedules-table" className="cards">
        <thead>
          <tr>
            <th>Schedule</th>
            <th>Enqueues</th>
            <th>Cron</th>
            <th>Last run</th>
            <th>Next run</th>
            <th>
              <span className="sr-only">Jobs and actions</span>
            </th>
          </tr>
        </thead>
        <tbody>{rows.map((s) => row(s, now))}</tbody>
      </table>
    </div>
  );
}

/** A mutation as a row needs it: start it, and how the last one went. */
export type RowAction<T> = {
  mutate: () => void;
  isPending: boolean;
  error: Error | null;
  data: T | undefined;
  isSuccess: boolean;
};

export function ScheduleRowView({
  schedule: s,
  now,
  canChange,
  open,
  onToggleOpen,
  run,
  toggle,
  ticks,
}: {
  schedule: Schedule;
  now: number;
  /** Run now, pause and resume need change_job, which the user's can.cancel reflects. */
  canChange: boolean;
  /** Its tick history is unfolded. */
  open: boolean;
  onToggleOpen: () => void;
  run: RowAction<{ id: number }>;
  /** Pause when it runs, resume when paused. */
  toggle: RowAction<unknown>;
  /** The tick history, when unfolded. */
  ticks: Loaded<ScheduleTick[]> | null;
}) {
  const jobs = scheduleJobsLink(s);
  const ran = lastRun(s.last_job, now);
  const error = run.error ?? toggle.error;
  const historyId = `ticks-${s.name}`;
  return (
    <Fragment>
      <tr data-schedule={s.name} className={open ? "unfolded" : undefined}>
        <td className="card-title">
          <div className="schedule-name">
            <strong>{s.name}</strong>
            {!s.valid && (
              <span className="badge badge-failed" style={{ marginLeft: 6 }}>
                invalid
              </span>
            )}
            {s.paused && (
              <span className="badge badge-cancelled" style={{ marginLeft: 6 }} data-testid="schedule-paused">
                paused
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
        <td className="card-wide" data-label="Enqueues">
          <div className="mono truncate" title={scheduleTarget(s)}>
            {scheduleTarget(s)}
          </div>
          <div className="sub">
            queue {s.queue ?? "default"}
            {s.priority !== null && ` · priority ${s.priority}`}
            {s.max_attempts !== null && ` · ${s.max_attempts} attempts`}
          </div>
        </td>
        <td data-label="Cron">
          <code data-testid="schedule-cron">{s.cron}</code>
          <div className="sub">{s.timezone}</div>
        </td>
        <td className="schedule-last" data-label="Last run" data-testid="schedule-last">
          {s.last_job && ran ? (
            <>
              <span title={ran.at ? formatTimestamp(ran.at) : undefined}>{ran.text}</span>
              <div className="sub">
                <Link to={`/jobs/${s.last_job.id}`}>#{s.last_job.id}</Link> <StatusPill status={s.last_job.status} />
                {s.last_tick_at && (
                  <span title={formatTimestamp(s.last_tick_at)}> · tick {formatRelative(s.last_tick_at, now)}</span>
                )}
              </div>
            </>
          ) : s.last_tick_at ? (
            <>
              <span className="faint">not enqueued</span>
              <div className="sub" title={formatTimestamp(s.last_tick_at)}>
                tick {formatRelative(s.last_tick_at, now)}: no worker ran then, or its job was pruned
              </div>
            </>
          ) : (
            <span className="faint">never</span>
          )}
        </td>
        <td className="nowrap" data-label="Next run" data-testid="schedule-next">
          {s.paused ? (
            <span className="faint">paused</span>
          ) : s.next_run_at ? (
            <>
              {formatRelative(s.next_run_at, now)}
              {/* In the schedule's own time zone, as its cron reads; the browser's on hover. */}
              <div className="sub" title={formatTimestamp(s.next_run_at)} data-testid="schedule-next-at">
                {formatTimestamp(s.next_run_at, s.timezone)}
              </div>
            </>
          ) : (
            <span className="faint">{s.valid ? "—" : "skipped while invalid"}</span>
          )}
        </td>
        <td className="card-wide card-action schedule-actions">
          <Link to={jobs} title={`The jobs ${s.name} enqueued, newest first`}>
            {s.type ? `Recent ${s.type} jobs` : "Recent jobs"}
          </Link>
          <div className="actions" style={{ marginTop: 6 }}>
            <button
              type="button"
              className="small"
              aria-expanded={open}
              aria-controls={historyId}
              onClick={onToggleOpen}
            >
              {open ? "Hide tick history" : "Tick history"}
            </button>
            {canChange && (
              <>
                <button
                  type="button"
                  className="small"
                  disabled={!s.valid || run.isPending}
                  title={s.valid ? "Enqueue its job now, whatever the cron" : "An invalid entry cannot run"}
                  onClick={run.mutate}
                >
                  {run.isPending ? "Running…" : "Run now"}
                </button>
                <button
                  type="button"
                  className="small"
                  disabled={toggle.isPending}
                  title={s.paused ? "Enqueue its ticks again" : "Enqueue none of its ticks until resumed"}
                  onClick={toggle.mutate}
                >
                  {s.paused ? "Resume" : "Pause"}
                </button>
              </>
            )}
          </div>
          {run.isSuccess && run.data && (
            <div className="sub" role="status" data-testid="schedule-run-outcome">
              Enqueued <Link to={`/jobs/${run.data.id}`}>#{run.data.id}</Link>
            </div>
          )}
          {error && (
            <div className="field-error" role="alert" data-testid="schedule-action-error">
              {error.message}
            </div>
          )}
        </td>
      </tr>
      {open && (
        <tr className="schedule-ticks" id={historyId}>
          <td colSpan={6} className="ticks-cell">
            {ticks && <TickHistory name={s.name} ticks={ticks} now={now} />}
          </td>
        </tr>
      )}
    </Fragment>
  );
}

/** A schedule's last 50 jobs: each tick (or run-now), its job and how it went. */
function TickHistory({ name, ticks, now }: { name: string; ticks: Loaded<ScheduleTick[]>; now: number }) {
  const heading = (
    <h3 className="ticks-title">
      Tick history of {name}
      {ticks.data && ticks.data.length > 0 && (
        <span className="faint">
          {" "}
          · the last {ticks.data.length === 1 ? "job" : `${ticks.data.length} jobs`}, newest first
        </span>
      )}
    </h3>
  );
  if (ticks.isPending)
    return (
      <>
        {heading}
        <Loading rows={2} />
      </>
    );
  if (ticks.isError && !ticks.data)
    return (
      <>
        {heading}
        <ErrorState error={ticks.error} onRetry={() => void ticks.refetch()} />
      </>
    );
  if (!ticks.data || ticks.data.length === 0)
    return (
      <>
        {heading}
        <p className="faint">No ticks yet (or their jobs were pruned): its jobs will be listed here.</p>
      </>
    );
  return (
    <>
      {heading}
      <table data-testid={`ticks-${name}`} aria-label={`Ticks of ${name}`} className="ticks cards">
        <thead>
          <tr>
            <th>Tick</th>
            <th>Job</th>
            <th>Outcome</th>
            <th>Ran</th>
          </tr>
        </thead>
        <tbody>
          {ticks.data.map((t) => (
            <TickRow key={t.job.id} tick={t} now={now} />
          ))}
        </tbody>
      </table>
    </>
  );
}

function TickRow({ tick: t, now }: { tick: ScheduleTick; now: number }) {
  const ran = lastRun(t.job, now);
  return (
    <tr data-job={t.job.id}>
      <td className="nowrap card-time card-plain">
        {t.manual || !t.tick_at ? (
          <span title={formatTimestamp(t.job.created_at)}>run now, {formatRelative(t.job.created_at, now)}</span>
        ) : (
          <span title={formatTimestamp(t.tick_at)}>{formatRelative(t.tick_at, now)}</span>
        )}
      </td>
      <td className="card-title">
        <Link to={`/jobs/${t.job.id}`}>#{t.job.id}</Link>
      </td>
      <td className="tick-outcome card-wide card-plain">
        <StatusPill status={t.job.status} />{" "}
        <span className="sub">
          attempt {t.job.attempts}/{t.job.max_attempts}
        </span>
        {t.job.last_error &&
          (t.job.status === "succeeded" ? (
            // Left by an earlier attempt of a job that then succeeded: not this tick's outcome.
            <div className="sub truncate" title={t.job.last_error} data-testid="tick-earlier-error">
              earlier attempt: {t.job.last_error}
            </div>
          ) : (
            <div className="tick-error" title={t.job.last_error}>
              {t.job.last_error}
            </div>
          ))}
      </td>
      <td className="nowrap card-plain">
        <span title={ran?.at ? formatTimestamp(ran.at) : undefined}>{ran?.text ?? "not run yet"}</span>
      </td>
    </tr>
  );
}
