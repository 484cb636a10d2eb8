import { type FormEvent, useEffect, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { jobTypesOptions } from "../api/jobTypes";
import { STATUSES } from "./StatusBadge";

export type FilterValues = {
  status?: string;
  type?: string;
  queue?: string;
  priority?: string;
  search?: string;
  ordering?: string;
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
}: {
  values: FilterValues;
  onChange: (v: FilterValues) => void;
  fixed?: (keyof FilterValues)[];
}) {
  const types = useQuery(jobTypesOptions());
  const [text, setText] = useState({
    queue: values.queue ?? "",
    priority: values.priority ?? "",
    search: values.search ?? "",
  });
  useEffect(
    () => setText({ queue: values.queue ?? "", priority: values.priority ?? "", search: values.search ?? "" }),
    [values.queue, values.priority, values.search],
  );
  const show = (k: keyof FilterValues) => !fixed.includes(k);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onChange({ ...values, ...text });
  };
  const active = Object.entries(values).some(
    ([k, v]) => v && k !== "ordering" && !fixed.includes(k as keyof FilterValues),
  );
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label="Filter jobs">
      {show("status") && (
        <div className="field">
          <label htmlFor="f-status">Status</label>
          <select
            id="f-status"
            value={values.status ?? ""}
            onChange={(e) => onChange({ ...values, ...text, status: e.target.value })}
          >
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      )}
      {show("type") && (
        <div className="field">
          <label htmlFor="f-type">Type</label>
          <select
            id="f-type"
            value={values.type ?? ""}
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
            placeholder="any"
            onChange={(e) => setText({ ...text, queue: e.target.value })}
          />
        </div>
      )}
      {show("priority") && (
        <div className="field">
          <label htmlFor="f-priority">Priority</label>
          <input
            id="f-priority"
            type="number"
            min={-100}
            max={100}
            value={text.priority}
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
            placeholder="job id or idempotency key"
            onChange={(e) => setText({ ...text, search: e.target.value })}
          />
        </div>
      )}
      {show("ordering") && (
        <div className="field">
          <label htmlFor="f-ordering">Order</label>
          <select
            id="f-ordering"
            value={values.ordering ?? "-id"}
            onChange={(e) => onChange({ ...values, ...text, ordering: e.target.value })}
          >
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
  );
}
