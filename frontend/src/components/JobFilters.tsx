import { type FormEvent, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { isApiError } from "../api/client";
import { jobTypesOptions } from "../api/jobTypes";
import { queuesOptions } from "../api/queues";
import { JOB_STATES, STATUSES, isStatus } from "../lib/statuses";

export type FilterValues = {
  status?: string;
  /** Comma-separated states (any of them): `available,retryable`. */
  state?: string;
  type?: string;
  queue?: string;
  priority?: string;
  search?: string;
  ordering?: string;
  /** Exact concurrency key: the jobs that share it (`customer:42`). */
  concurrency_key?: string;
  /** The periodic schedule that enqueued the jobs (from the periodic jobs page; no field). */
  schedule?: string;
};

export const ORDERINGS: [string, string][] = [
  ["-id", "Newest first"],
  ["id", "Oldest first"],
  ["-priority", "Highest priority"],
  ["-attempts", "Most attempts"],
  ["-updated_at", "Recently updated"],
  ["-finished_at", "Recently finished"],
];

/**
 * Filters that apply on change (selects) or on submit (text fields), so typing does not send a
 * request per keystroke. `fixed` hides filters the page pins (the failed-jobs page's status).
 */
export function JobFilters({
  values,
  onChange,
  fixed = [],
  invalid = [],
}: {
  values: FilterValues;
  onChange: (v: FilterValues) => void;
  fixed?: (keyof FilterValues)[];
  /** Filters the API refused (FilterProblem says why): marked invalid. */
  invalid?: string[];
}) {
  const bad = (k: keyof FilterValues) => (invalid.includes(k) ? { "aria-invalid": true as const } : {});
  const types = useQuery(jobTypesOptions());
  // The queue field offers every queue (the navigation's list: same query, same key).
  const queues = useQuery({ ...queuesOptions(15_000), retry: false });
  // The text boxes hold what is typed until submitted; a new address (Back, a link) resets them.
  const applied = {
    queue: values.queue ?? "",
    priority: values.priority ?? "",
    search: values.search ?? "",
    concurrency_key: values.concurrency_key ?? "",
  };
  const [text, setText] = useState(applied);
  const [appliedKey, setAppliedKey] = useState(JSON.stringify(applied));
  if (appliedKey !== JSON.stringify(applied)) {
    setAppliedKey(JSON.stringify(applied));
    setText(applied);
  }
  const show = (k: keyof FilterValues) => !fixed.includes(k);
  const chosenStates = values.state ? values.state.split(",") : [];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onChange({ ...values, ...text });
  };
  const active = Object.entries(values).some(
    ([k, v]) => v && k !== "ordering" && !fixed.includes(k as keyof FilterValues),
  );
  // On a phone the form folds behind a button (CSS shows it there only); open while a filter
  // is applied, so what narrows the list shows.
  const [open, setOpen] = useState(active);
  return (
    <>
      <button
        type="button"
        className="small filters-toggle"
        aria-expanded={open}
        aria-controls="job-filters"
        onClick={() => setOpen(!open)}
      >
        Filters{active ? " (applied)" : ""}
      </button>
      <form
        className={`filters${open ? "" : " folded"}`}
        id="job-filters"
        onSubmit={submit}
        role="search"
        aria-label="Filter jobs"
      >
        {show("status") && (
          <div className="field">
            <label htmlFor="f-status">Status</label>
            <select
              id="f-status"
              value={values.status ?? ""}
              {...bad("status")}
              onChange={(e) => onChange({ ...values, ...text, status: e.target.value })}
            >
              <option value="">Any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
              {/* What the address asks for, even when it is several statuses or not one at all. */}
              {values.status && !isStatus(values.status) && (
                <option value={values.status}>{values.status.split(",").join(", ")}</option>
              )}
            </select>
          </div>
        )}
        {show("state") && (
          <fieldset className="field states" {...bad("state")}>
            <legend>State</legend>
            {JOB_STATES.map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={chosenStates.includes(s)}
                  onChange={(e) =>
                    onChange({ ...values, ...text, state: toggleState(chosenStates, s, e.target.checked) })
                  }
                />{" "}
                {s}
              </label>
            ))}
          </fieldset>
        )}
        {show("type") && (
          <div className="field">
            <label htmlFor="f-type">Type</label>
            <select
              id="f-type"
              value={values.type ?? ""}
              {...bad("type")}
              onChange={(e) => onChange({ ...values, ...text, type: e.target.value })}
            >
              <option value="">Any</option>
              {(types.data ?? []).map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
              {values.type && !types.data?.some((t) => t.name === values.type) && (
                <option value={values.type}>{values.type}</option>
              )}
            </select>
          </div>
        )}
        {show("queue") && (
          <div className="field">
            <label htmlFor="f-queue">Queue</label>
            <input
              id="f-queue"
              value={text.queue}
              {...bad("queue")}
              placeholder="any"
              list="f-queue-list"
              onChange={(e) => setText({ ...text, queue: e.target.value })}
            />
            <datalist id="f-queue-list">
              {(Array.isArray(queues.data) ? queues.data : []).map((q) => (
                <option key={q.name} value={q.name} />
              ))}
            </datalist>
          </div>
        )}
        {show("priority") && (
          <div className="field">
            <label htmlFor="f-priority">Priority</label>
            <input
              id="f-priority"
              inputMode="numeric"
              value={text.priority}
              {...bad("priority")}
              placeholder="any"
              onChange={(e) => setText({ ...text, priority: e.target.value })}
            />
          </div>
        )}
        {show("search") && (
          <div className="field wide">
            <label htmlFor="f-search">Search</label>
            <input
              id="f-search"
              type="search"
              value={text.search}
              {...bad("search")}
              placeholder="id, key, or text in payload or error"
              onChange={(e) => setText({ ...text, search: e.target.value })}
              aria-describedby={shortSearch(values.search) ? "search-too-short" : undefined}
            />
            {shortSearch(values.search) && (
              <div className="hint" id="search-too-short" data-testid="search-too-short">
                Text is searched from 3 characters: “{values.search?.trim()}” matched only as a job id or an exact
                idempotency key.
              </div>
            )}
          </div>
        )}
        {show("concurrency_key") && (
          <div className="field">
            <label htmlFor="f-concurrency-key">Concurrency key</label>
            <input
              id="f-concurrency-key"
              value={text.concurrency_key}
              {...bad("concurrency_key")}
              placeholder="any"
              onChange={(e) => setText({ ...text, concurrency_key: e.target.value })}
            />
          </div>
        )}
        {show("ordering") && (
          <div className="field">
            <label htmlFor="f-ordering">Order</label>
            <select
              id="f-ordering"
              value={values.ordering ?? "-id"}
              {...bad("ordering")}
              onChange={(e) => onChange({ ...values, ...text, ordering: e.target.value })}
            >
              {values.ordering && !ORDERINGS.some(([v]) => v === values.ordering) && (
                <option value={values.ordering}>{values.ordering}</option>
              )}
              {ORDERINGS.map(([v, label]) => (
                <option key={v} value={v}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="actions">
          <button type="submit">Apply</button>
          {active && (
            <button
              type="button"
              className="link"
              onClick={() => onChange(Object.fromEntries(fixed.map((k) => [k, values[k]])))}
            >
              Clear
            </button>
          )}
        </div>
      </form>
    </>
  );
}

export const FILTER_LABELS: Record<keyof FilterValues, string> = {
  status: "Status",
  state: "State",
  type: "Type",
  queue: "Queue",
  priority: "Priority",
  search: "Search",
  concurrency_key: "Concurrency key",
  ordering: "Order",
  schedule: "Schedule",
};

export type FilterProblemItem = { field: keyof FilterValues; label: string; value: string; messages: string[] };

/**
 * The filters a 400 answer names (`errors: {status: ["Select a valid choice..."]}`), each with
 * the value the address gave it. Null when the error is not about the filters.
 */
export function filterProblems(error: unknown, values: FilterValues): FilterProblemItem[] | null {
  if (!isApiError(error, 400)) return null;
  const out: FilterProblemItem[] = [];
  for (const [path, messages] of Object.entries(error.fieldErrors)) {
    const field = path.split(".")[0] as keyof FilterValues;
    if (!(field in FILTER_LABELS) || out.some((p) => p.field === field)) continue;
    out.push({ field, label: FILTER_LABELS[field], value: values[field] ?? "", messages });
  }
  return out;
}

/** A list the API refused to filter: what is wrong with which filter, and a way out. */
export function FilterProblem({
  error,
  values,
  onChange,
  fixed = [],
}: {
  error: unknown;
  values: FilterValues;
  onChange: (v: FilterValues) => void;
  fixed?: (keyof FilterValues)[];
}) {
  const problems = filterProblems(error, values) ?? [];
  const without = (fields: (keyof FilterValues)[]) =>
    Object.fromEntries(Object.entries(values).filter(([k]) => !fields.includes(k as keyof FilterValues)));
  const keepFixed = Object.fromEntries(fixed.map((k) => [k, values[k]]));
  return (
    <div className="notice error" role="alert" data-testid="filter-problem">
      <strong>{problems.length === 1 ? "This filter is not valid" : "These filters are not valid"}.</strong>
      {problems.length === 0 ? (
        <> {error instanceof Error ? error.message : String(error)}</>
      ) : (
        <ul className="problems">
          {problems.map((p) => (
            <li key={p.field}>
              {p.label} “{p.value}”: {p.messages.join(" ")}
            </li>
          ))}
        </ul>
      )}
      <div className="actions" style={{ marginTop: 8 }}>
        {problems.length > 0 && (
          <button type="button" className="small" onClick={() => onChange(without(problems.map((p) => p.field)))}>
            {problems.length === 1 ? `Clear ${problems[0].label.toLowerCase()}` : "Clear these filters"}
          </button>
        )}
        <button type="button" className="small" onClick={() => onChange(keepFixed)}>
          Clear all filters
        </button>
      </div>
    </div>
  );
}

/**
 * The `state` filter with one state checked or unchecked, in the order of a job's life (so one
 * choice makes one address); states the address gave that are not known are kept for the API
 * to refuse by name.
 */
export function toggleState(chosen: string[], state: string, on: boolean): string {
  const next = new Set(chosen);
  if (on) next.add(state);
  else next.delete(state);
  const known = JOB_STATES.filter((s) => next.has(s));
  const unknown = [...next].filter((s) => !(JOB_STATES as readonly string[]).includes(s));
  return [...known, ...unknown].join(",");
}

/** A search the API cannot look for as text (under 3 characters, not an id): say so. */
export function shortSearch(search: string | undefined): boolean {
  const s = search?.trim() ?? "";
  return s.length > 0 && s.length < 3 && !/^\d+$/.test(s);
}
