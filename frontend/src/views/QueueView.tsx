/**
 * A queue's page as its route (pages/QueuePage.tsx) loaded it: its jobs by status (each a link
 * to the filtered list), pause and resume, its concurrency limit (editable with
 * change_queuesetting), throughput (the route's panel) and its workers (cards on a phone).
 */
import { type ReactNode, useState } from "react";
import { Link } from "react-router";
import { isApiError } from "../api/client";
import type { QueueDetail } from "../api/types";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { STATUSES } from "../lib/statuses";
import { formatRelative, useNow } from "../lib/time";
import type { Loaded } from "./types";

/** Where a queue's page is: `/queues/<name>`. */
export const queuePath = (name: string) => `/queues/${encodeURIComponent(name)}`;

/** "2" -> 2, "" -> null (no limit), anything else -> undefined (not a limit). */
export function parseLimit(text: string): number | null | undefined {
  const value = text.trim();
  if (!value) return null;
  if (!/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n >= 1 ? n : undefined;
}

/** What the user may do here: pause and resume (change_job), change the limit (change_queuesetting). */
export type QueueCan = { pause: boolean; changeLimit: boolean };
/** Pause or resume, as the route's mutation runs it. */
export type QueueToggle = {
  mutate: (action: "pause" | "resume") => void;
  isPending: boolean;
  error: Error | null;
  /** What the failed attempt tried. */
  action: string | undefined;
};
/** Save a limit (null: none); `done` once saved. */
export type LimitSave = {
  mutate: (limit: number | null, done: () => void) => void;
  isPending: boolean;
  error: Error | null;
};

export function QueueView({
  name,
  detail,
  can,
  toggle,
  limit,
  throughput,
}: {
  name: string;
  detail: Loaded<QueueDetail>;
  can: QueueCan;
  toggle: QueueToggle;
  limit: LimitSave;
  /** The queue's throughput chart. */
  throughput: ReactNode;
}) {
  return (
    <>
      <div className="page-head">
        <div>
          <h1>
            Queue <span className="mono">{name}</span>
          </h1>
          <p>Its jobs by status, throughput and the workers that claim from it.</p>
        </div>
        <LiveIndicator isError={detail.isError} error={detail.error} isFetching={detail.isFetching} />
      </div>
      {detail.isPending ? (
        <div className="panel">
          <Loading rows={5} />
        </div>
      ) : detail.isError && !detail.data ? (
        isApiError(detail.error, 404) ? (
          <section className="panel">
            <Empty title={`No queue named ${name}`}>
              <p>
                A queue exists once it holds a job, a handler or schedule names it, or it has a setting.{" "}
                <Link to="/">Back to the overview</Link>
              </p>
            </Empty>
          </section>
        ) : (
          <ErrorState error={detail.error} onRetry={() => void detail.refetch()} />
        )
      ) : (
        <QueueBody q={detail.data!} can={can} toggle={toggle} limit={limit} throughput={throughput} />
      )}
    </>
  );
}

function QueueBody({
  q,
  can,
  toggle,
  limit,
  throughput,
}: {
  q: QueueDetail;
  can: QueueCan;
  toggle: QueueToggle;
  limit: LimitSave;
  throughput: ReactNode;
}) {
  return (
    <>
      <section className="stats" aria-label="The queue's jobs by status">
        {STATUSES.map((s) => (
          <Link
            key={s}
            className={`stat tone-${s}`}
            to={`/jobs?queue=${encodeURIComponent(q.name)}&status=${s}`}
            data-testid={`queue-count-${s}`}
          >
            <div className="label">{s[0].toUpperCase() + s.slice(1)}</div>
            <div className="value">
              {(q.counts_by_status[s as keyof typeof q.counts_by_status] ?? 0).toLocaleString()}
            </div>
            {s === "queued" && (
              <div className="sub" data-testid="queue-runnable">
                {q.paused ? "paused: none claimed" : `${q.runnable.toLocaleString()} runnable`}
              </div>
            )}
          </Link>
        ))}
      </section>

      <div className="grid grid-2" style={{ marginBottom: 14 }}>
        <section className="panel" aria-labelledby="queue-settings-title">
          <header>
            <h2 id="queue-settings-title">Flow control</h2>
          </header>
          {toggle.error && (
            <div className="notice error" role="alert">
              Could not {toggle.action}: {toggle.error.message}
            </div>
          )}
          <dl className="kv">
            <dt>State</dt>
            <dd>
              <span className="actions" style={{ flexWrap: "nowrap" }}>
                {q.paused ? (
                  <span className="badge badge-retrying" data-testid="queue-state">
                    paused
                  </span>
                ) : (
                  <span className="muted" data-testid="queue-state">
                    active
                  </span>
                )}
                {can.pause && (
                  <button
                    type="button"
                    className="small"
                    disabled={toggle.isPending}
                    aria-label={`${q.paused ? "Resume" : "Pause"} queue ${q.name}`}
                    onClick={() => toggle.mutate(q.paused ? "resume" : "pause")}
                  >
                    {toggle.isPending ? "…" : q.paused ? "Resume" : "Pause"}
                  </button>
                )}
              </span>
            </dd>
            <dt>Concurrency limit</dt>
            <dd>
              <LimitEditor q={q} canChange={can.changeLimit} save={limit} />
            </dd>
            <dt>Claim order</dt>
            <dd data-testid="queue-claim-order">{claimOrder(q)}</dd>
          </dl>
        </section>
        {throughput}
      </div>

      <section className="panel" aria-labelledby="queue-workers-title">
        <header>
          <h2 id="queue-workers-title">Workers</h2>
          <span className="faint">{q.workers.length} claiming from this queue</span>
        </header>
        <QueueWorkers q={q} />
      </section>
    </>
  );
}

/** How the claim orders the queue's jobs: fair shares and priority aging, if set. */
export function claimOrder(q: QueueDetail): string {
  const parts = [q.fair ? "turns by fairness key" : "priority, then oldest first"];
  const weights = Object.entries(q.fairness_weights ?? {});
  if (q.fair && weights.length > 0) {
    parts.push(`weights ${weights.map(([key, turns]) => `${key}=${turns}`).join(", ")}`);
  }
  if (q.aging_seconds !== null) {
    parts.push(`aging +1 priority per ${q.aging_seconds} s waited, up to ${q.aging_max_priority ?? 100}`);
  }
  return parts.join("; ");
}

function LimitEditor({ q, canChange, save }: { q: QueueDetail; canChange: boolean; save: LimitSave }) {
  const shown = q.concurrency_limit === null ? "" : String(q.concurrency_limit);
  const [text, setText] = useState(shown);
  const [editing, setEditing] = useState(false);
  // While not editing, the box follows the limit as the poll reads it.
  if (!editing && text !== shown) setText(shown);
  const current = q.concurrency_limit === null ? "none" : `${q.concurrency_limit} at once`;
  if (!canChange) {
    return (
      <span data-testid="queue-limit" title="Changing it needs the change_queuesetting permission">
        {current}
      </span>
    );
  }
  const parsed = parseLimit(text);
  const error = save.error ? save.error.message : parsed === undefined ? "a whole number, 1 or more" : null;
  return (
    <form
      className="actions"
      style={{ flexWrap: "nowrap" }}
      onSubmit={(e) => {
        e.preventDefault();
        if (parsed !== undefined) save.mutate(parsed, () => setEditing(false));
      }}
    >
      <input
        aria-label="Concurrency limit"
        inputMode="numeric"
        placeholder="none"
        value={text}
        style={{ width: 80 }}
        aria-invalid={parsed === undefined || undefined}
        onChange={(e) => {
          setEditing(true);
          setText(e.target.value);
        }}
      />
      <button type="submit" className="small" disabled={parsed === undefined || save.isPending || text === shown}>
        {save.isPending ? "…" : "Save"}
      </button>
      <span className="faint" data-testid="queue-limit">
        now: {current}
      </span>
      {error && (editing || save.error) && (
        <span className="field-error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}

function QueueWorkers({ q }: { q: QueueDetail }) {
  const now = useNow(1000);
  if (q.workers.length === 0) {
    return (
      <Empty title="No worker claims from this queue">
        <p>
          Start one with <code>python manage.py run_job_workers --queues {q.name}</code> (or without{" "}
          <code>--queues</code> for every queue).
        </p>
      </Empty>
    );
  }
  return (
    <div className="table-wrap">
      <table data-testid="queue-workers" className="cards">
        <thead>
          <tr>
            <th>Process</th>
            <th>Queues</th>
            <th className="num">Running here</th>
            <th className="num">Threads</th>
            <th>Heartbeat</th>
          </tr>
        </thead>
        <tbody>
          {q.workers.map((w) => (
            <tr key={w.id}>
              <td className="mono card-title">
                {w.hostname}:{w.pid}
              </td>
              <td data-label="Queues">{w.all_queues ? <span className="muted">all</span> : w.queues.join(", ")}</td>
              <td className="num" data-label="Running here">
                {w.running_here}
              </td>
              <td className="num" data-label="Threads">
                {w.threads}
              </td>
              <td className="muted card-time" data-label="Heartbeat">
                {formatRelative(w.heartbeat_at, now)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
