/**
 * The audit log as its route (pages/AuditLogPage.tsx) loaded it: who did what to which job,
 * queue or schedule, when, and what changed, newest first; filters by who, what and on what;
 * cards on a phone (styles.css, `table.cards`).
 */
import { type FormEvent, useState } from "react";
import { Link } from "react-router";
import type { AuditAction, AuditLogEntry, AuditLogPage } from "../api/types";
import { FilterSelect } from "../components/JobFilters";
import { Pager } from "../components/Pager";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { formatRelative, formatTimestamp, useNow } from "../lib/time";
import type { Loaded } from "./types";

export const AUDIT_FILTERS = ["actor", "action", "target_kind", "target"] as const;
export type AuditFilters = Partial<Record<(typeof AUDIT_FILTERS)[number], string>>;

/** Each action as a sentence's verb, in the order the filter offers them. */
export const ACTION_LABELS: Record<AuditAction, string> = {
  cancel: "Cancelled job",
  retry: "Retried job",
  rerun: "Re-ran job",
  run_now: "Ran job now",
  edit: "Edited job",
  delete: "Deleted job",
  pause_queue: "Paused queue",
  resume_queue: "Resumed queue",
  set_queue_limit: "Set queue limit",
  set_queue_fairness: "Set queue fairness",
  set_queue_aging: "Set queue aging",
  set_fairness_weights: "Set fairness weights",
  run_schedule: "Ran schedule now",
  pause_schedule: "Paused schedule",
  resume_schedule: "Resumed schedule",
  set_rate_limit: "Set rate limit",
  remove_rate_limit: "Removed rate limit",
  cancel_batch: "Cancelled batch",
  set_worker_override: "Set queue on one host",
  remove_worker_override: "Cleared queue on one host",
};

const TARGET_KINDS: [string, string][] = [
  ["job", "Jobs"],
  ["queue", "Queues"],
  ["schedule", "Periodic schedules"],
  ["rate_limit", "Rate limits"],
  ["batch", "Batches"],
];

const FIELD_LABELS: Record<string, string> = {
  paused: "paused",
  concurrency_limit: "limit",
  max_starts: "starts",
  period_seconds: "per (s)",
  fair: "fair",
  aging_seconds: "aging every (s)",
  aging_max_priority: "aging cap",
  priority: "priority",
  available_at: "run at",
};

function shown(field: string, value: unknown): string {
  if (value === null || value === undefined)
    return field === "concurrency_limit" ||
      field === "max_starts" ||
      field === "period_seconds" ||
      field === "aging_seconds"
      ? "none"
      : "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (field === "available_at" && typeof value === "string") return formatTimestamp(value);
  return String(value);
}

/** What changed, in words: "limit: none → 3", "was queued", "copy #12", "bulk, type noop". */
export function describeChange(entry: AuditLogEntry): React.ReactNode[] {
  const parts: React.ReactNode[] = [];
  for (const [field, value] of Object.entries(entry.data ?? {})) {
    if (Array.isArray(value) && value.length === 2) {
      parts.push(`${FIELD_LABELS[field] ?? field}: ${shown(field, value[0])} → ${shown(field, value[1])}`);
    } else if (field === "status") {
      parts.push(`was ${String(value)}`);
    } else if (field === "copy" || field === "job") {
      parts.push(
        <Link key={field} to={`/jobs/${String(value)}`}>
          {field === "copy" ? "copy" : "job"} #{String(value)}
        </Link>,
      );
    } else if (field === "events") {
      parts.push(`with its ${String(value)} event${value === 1 ? "" : "s"}`);
    } else if (field === "bulk") {
      parts.push("in bulk");
    } else if (field === "filter" && value && typeof value === "object") {
      const given = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${k} ${String(v)}`);
      if (given.length) parts.push(`matching ${given.join(", ")}`);
    } else {
      parts.push(`${field}: ${JSON.stringify(value)}`);
    }
  }
  return parts;
}

function Target({ entry }: { entry: AuditLogEntry }) {
  const { target, target_kind: kind } = entry;
  if (kind === "job") {
    // A deleted job has no page any more.
    return entry.action === "delete" ? <span>job #{target}</span> : <Link to={`/jobs/${target}`}>job #{target}</Link>;
  }
  if (kind === "queue") return <Link to={`/queues/${encodeURIComponent(target)}`}>queue {target}</Link>;
  if (kind === "batch") return <Link to={`/batches/${target}`}>batch #{target}</Link>;
  if (kind === "rate_limit") return <span>rate limit {target}</span>;
  return <Link to="/schedules">schedule {target}</Link>;
}

function AuditFilterForm({ filters, onChange }: { filters: AuditFilters; onChange: (f: AuditFilters) => void }) {
  const applied = { actor: filters.actor ?? "", target: filters.target ?? "" };
  const [text, setText] = useState(applied);
  const [appliedKey, setAppliedKey] = useState(JSON.stringify(applied));
  if (appliedKey !== JSON.stringify(applied)) {
    // A new address (Back, a link) resets what was typed.
    setAppliedKey(JSON.stringify(applied));
    setText(applied);
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onChange({ ...filters, ...text });
  };
  const active = AUDIT_FILTERS.some((k) => filters[k]);
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label="Filter the audit log">
      <div className="field">
        <label htmlFor="a-actor">Who</label>
        <input
          id="a-actor"
          value={text.actor}
          placeholder="any user"
          onChange={(e) => setText({ ...text, actor: e.target.value })}
        />
      </div>
      <FilterSelect
        id="a-action"
        label="Action"
        value={filters.action ?? ""}
        choices={Object.entries(ACTION_LABELS)}
        onChange={(action) => onChange({ ...filters, ...text, action })}
      />
      <FilterSelect
        id="a-target-kind"
        label="On"
        value={filters.target_kind ?? ""}
        choices={TARGET_KINDS}
        any="Anything"
        onChange={(target_kind) => onChange({ ...filters, ...text, target_kind })}
      />
      <div className="field">
        <label htmlFor="a-target">Job id or name</label>
        <input
          id="a-target"
          value={text.target}
          placeholder="any"
          onChange={(e) => setText({ ...text, target: e.target.value })}
        />
      </div>
      <div className="actions">
        <button type="submit">Apply</button>
        {active && (
          <button type="button" className="link" onClick={() => onChange({})}>
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}

export function AuditTable({ rows }: { rows: AuditLogEntry[] }) {
  const now = useNow(10_000);
  return (
    <div className="table-wrap">
      <table data-testid="audit-table" className="cards">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">On</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((entry) => (
            <tr key={entry.id} data-entry={entry.id}>
              <td className="nowrap card-time" data-label="When" title={formatTimestamp(entry.at)}>
                {formatRelative(entry.at, now)}
              </td>
              <td data-label="Who">{entry.actor || <span className="muted">(code)</span>}</td>
              <td data-label="What">{ACTION_LABELS[entry.action] ?? entry.action}</td>
              <td data-label="On">
                <Target entry={entry} />
              </td>
              <td className="card-wide" data-label="Change">
                {describeChange(entry).map((part, i) => (
                  <span key={i}>
                    {i > 0 && " · "}
                    {part}
                  </span>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function AuditLogView({
  entries,
  filters,
  page,
  pageSize,
  onFilters,
  onPage,
  onPageSize,
}: {
  entries: Loaded<AuditLogPage>;
  filters: AuditFilters;
  page: number;
  pageSize: number;
  onFilters: (filters: AuditFilters) => void;
  onPage: (n: number) => void;
  onPageSize: (n: number) => void;
}) {
  const rows = entries.data?.results ?? [];
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Audit log</h1>
          <p>Who cancelled, retried, edited, deleted or paused what, and when: every operator action, newest first.</p>
        </div>
        <LiveIndicator isError={entries.isError} error={entries.error} isFetching={entries.isFetching} />
      </div>
      <section className="panel">
        <AuditFilterForm filters={filters} onChange={onFilters} />
        {entries.isPending ? (
          <Loading label="Loading the audit log…" />
        ) : entries.isError && !entries.data ? (
          <ErrorState error={entries.error} title="The audit log did not load" onRetry={() => void entries.refetch()} />
        ) : rows.length === 0 ? (
          <Empty title="No actions recorded">
            {AUDIT_FILTERS.some((k) => filters[k])
              ? "None matches these filters."
              : "Operator actions (cancel, retry, pause, …) appear here as they happen."}
          </Empty>
        ) : (
          <>
            <AuditTable rows={rows} />
            <Pager
              page={page}
              count={entries.data?.count ?? 0}
              pageSize={pageSize}
              onPage={onPage}
              onPageSize={onPageSize}
            />
          </>
        )}
      </section>
    </>
  );
}
