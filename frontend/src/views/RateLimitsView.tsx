/**
 * The rate limits page as its route (pages/RateLimitsPage.tsx) loaded it: every limit in force
 * (a queue's, a job type's, a concurrency key's or key prefix's), how much of its sliding window
 * is used now (a key limit: its busiest keys), where it comes from (set at run time, or
 * declared in JOB_RATE_LIMITS), and, for users with change_queuesetting, a form that sets one
 * and a button that removes one set at run time.
 */
import { type FormEvent, useState } from "react";
import { Link } from "react-router";
import { ApiError } from "../api/client";
import type { RateScope } from "../api/rateLimits";
import type { RateLimit } from "../api/types";
import { InputField, NumberField } from "../components/InputField";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import type { Loaded, Mutation } from "./types";

export type RateLimitInput = RateScope & { max_starts: number; period_seconds: number };

const KIND_LABELS: Record<RateLimit["kind"], string> = { queue: "Queue", type: "Job type", key: "Key" };

/** "1 s", "90 s", "5 min", "1 h": a period as an operator reads it. */
export function formatPeriod(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

function Scope({ limit }: { limit: RateLimit }) {
  const name =
    limit.kind === "queue" ? (
      <Link to={`/queues/${encodeURIComponent(limit.name)}`}>{limit.name}</Link>
    ) : (
      <code>{limit.name}</code>
    );
  // With shards, each database's limit is a row of its own: it counts its own window.
  return (
    <>
      <span className="faint">{KIND_LABELS[limit.kind]}</span> {name}
      {limit.shard && <span className="faint"> in {limit.shard}</span>}
    </>
  );
}

/** The window's use: a bar and "12 of 20"; a key limit adds its busiest keys. */
function Use({ limit }: { limit: RateLimit }) {
  const used = limit.used ?? 0;
  const percent = Math.min(100, Math.round((used / Math.max(1, limit.max_starts)) * 100));
  const full = used >= limit.max_starts;
  const label = `${used} of ${limit.max_starts} used in the last ${formatPeriod(limit.period_seconds)}`;
  return (
    <div>
      <div className="progress-row">
        <span
          className={full ? "progress mini-progress failed" : "progress mini-progress"}
          role="progressbar"
          aria-valuemin={0}
          aria-valuemax={limit.max_starts}
          aria-valuenow={used}
          aria-label={`${limit.kind} ${limit.name}: ${label}`}
        >
          <span style={{ width: `${percent}%` }} />
        </span>
        <span className="progress-label" data-testid="rate-used" title={label}>
          {used} of {limit.max_starts}
          {full && <span className="sub"> full</span>}
        </span>
      </div>
      {limit.kind === "key" && (limit.keys ?? []).length > 0 && (
        <div className="sub" data-testid="rate-keys">
          {limit.name.endsWith("*") ? "busiest: " : ""}
          {(limit.keys ?? []).map((k, i) => (
            <span key={k.key}>
              {i > 0 && ", "}
              <code>{k.key}</code> {k.used}
            </span>
          ))}
          {(limit.keys_in_window ?? 0) > (limit.keys ?? []).length &&
            ` (${limit.keys_in_window} keys in their windows)`}
        </div>
      )}
    </div>
  );
}

function SetLimitForm({ set }: { set: Mutation<RateLimitInput> }) {
  const [kind, setKind] = useState<RateLimit["kind"]>("type");
  const [name, setName] = useState("");
  const [maxStarts, setMaxStarts] = useState("");
  const [period, setPeriod] = useState("1");
  const errors = set.error instanceof ApiError ? set.error.fieldErrors : {};
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set.mutate({ kind, name: name.trim(), max_starts: Number(maxStarts), period_seconds: Number(period) });
  };
  const other = set.error && !(set.error instanceof ApiError && Object.keys(errors).length > 0);
  return (
    <section className="panel" aria-labelledby="set-rate-title">
      <header>
        <h2 id="set-rate-title">Set a limit</h2>
        <span className="faint">replaces the scope's limit; workers see it within a second</span>
      </header>
      <form className="filters" onSubmit={submit} aria-label="Set a rate limit">
        <div className="field">
          <label htmlFor="rate-kind">Limits</label>
          <select id="rate-kind" value={kind} onChange={(e) => setKind(e.target.value as RateLimit["kind"])}>
            <option value="type">a job type</option>
            <option value="queue">a queue</option>
            <option value="key">a concurrency key</option>
          </select>
        </div>
        <InputField
          name="rate-name"
          label={kind === "key" ? "Key (or prefix ending in *)" : kind === "queue" ? "Queue" : "Job type"}
          value={name}
          onChange={setName}
          required
          errors={errors[kind]}
        />
        <NumberField
          name="rate-max"
          label="Most starts"
          value={maxStarts}
          onChange={setMaxStarts}
          min={1}
          errors={errors.max_starts}
        />
        <NumberField
          name="rate-period"
          label="Per seconds"
          value={period}
          onChange={setPeriod}
          min={0}
          step="any"
          errors={errors.period_seconds}
        />
        <div className="field">
          <button type="submit" className="primary" disabled={set.isPending}>
            {set.isPending ? "Setting…" : "Set limit"}
          </button>
        </div>
      </form>
      {other && (
        <div className="notice error" role="alert">
          Could not set the limit: {set.error!.message}
        </div>
      )}
    </section>
  );
}

export function RateLimitsView({
  limits,
  set,
  remove,
}: {
  limits: Loaded<RateLimit[]>;
  /** Set one (null: the user may not: change_queuesetting). */
  set: Mutation<RateLimitInput> | null;
  /** Remove one set at run time (null: the user may not). */
  remove: Mutation<RateScope> | null;
}) {
  const all = limits.data ?? [];
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Rate limits</h1>
          <p>
            At most so many job starts in any sliding period, for a queue, a job type or the jobs of a concurrency key,
            across every worker. A job over its limit waits, queued, without an attempt charged.
          </p>
        </div>
        <LiveIndicator isError={limits.isError} error={limits.error} isFetching={limits.isFetching} />
      </div>
      <section className="panel" aria-labelledby="rate-limits-title" style={{ marginBottom: 14 }}>
        <header>
          <h2 id="rate-limits-title">
            {limits.data ? `${all.length} limit${all.length === 1 ? "" : "s"} in force` : "Limits in force"}
          </h2>
        </header>
        {remove?.error && (
          <div className="notice error" role="alert">
            Could not remove the limit of {remove.variables?.kind} {remove.variables?.name}: {remove.error.message}
          </div>
        )}
        {limits.isPending ? (
          <Loading />
        ) : limits.isError && !limits.data ? (
          <ErrorState error={limits.error} onRetry={() => void limits.refetch()} />
        ) : all.length === 0 ? (
          <Empty title="No rate limits">
            Set one below, or declare them in JOB_RATE_LIMITS; see the rate limits guide in the docs.
          </Empty>
        ) : (
          <div className="table-wrap">
            <table data-testid="rate-limits-table" className="cards">
              <thead>
                <tr>
                  <th>Scope</th>
                  <th>Limit</th>
                  <th>Used now</th>
                  <th>Source</th>
                  {remove && (
                    <th>
                      <span className="sr-only">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {all.map((limit) => {
                  const busy =
                    remove?.isPending && remove.variables?.kind === limit.kind && remove.variables?.name === limit.name;
                  return (
                    <tr
                      key={`${limit.shard ?? ""}:${limit.kind}:${limit.name}`}
                      data-rate-limit={`${limit.kind}:${limit.name}`}
                    >
                      <td className="card-title">
                        <Scope limit={limit} />
                      </td>
                      <td className="nowrap" data-label="Limit">
                        {limit.max_starts} per {formatPeriod(limit.period_seconds)}
                      </td>
                      <td data-label="Used now">
                        <Use limit={limit} />
                      </td>
                      <td data-label="Source">
                        {limit.source === "set" ? "set at run time" : <span className="muted">JOB_RATE_LIMITS</span>}
                      </td>
                      {remove && (
                        <td className="nowrap card-status">
                          {limit.source === "set" && (
                            <button
                              type="button"
                              className="small"
                              disabled={busy}
                              aria-label={`Remove the rate limit of ${limit.kind} ${limit.name}`}
                              onClick={() => remove.mutate({ kind: limit.kind, name: limit.name })}
                            >
                              {busy ? "…" : "Remove"}
                            </button>
                          )}
                        </td>
                      )}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {set && <SetLimitForm set={set} />}
    </>
  );
}
