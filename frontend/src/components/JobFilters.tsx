import { type FormEvent, type ReactNode, useState } from "react";
import { isApiError } from "../api/client";
import { JOB_STATES, STATUSES } from "../lib/statuses";
import { ToggleButton } from "./ToggleButton";

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
  /** What the payload contains: `path:value` (`customer_id:42`, `customer.city:Lyon`). */
  payload?: string;
  /** The periodic schedule that enqueued the jobs (from the periodic jobs page; no field). */
  schedule?: string;
  /** With shards (JOB_SHARDS): one database's jobs; unset, every database's, merged. */
  shard?: string;
};

/**
 * What the filters offer to choose from, as the route loaded it: job types and queues, and the
 * concurrency keys starting with what the key field holds (`suggestKeys` is told what is typed).
 */
export type FilterChoices = {
  types: string[];
  queues: string[];
  concurrencyKeys?: string[];
  suggestKeys?: (typed: string) => void;
};

export const ORDERINGS: [string, string][] = [
  ["-id", "Newest first"],
  ["id", "Oldest first"],
  ["-priority", "Highest priority"],
  ["-attempts", "Most attempts"],
  ["-updated_at", "Recently updated"],
  ["-finished_at", "Recently finished"],
];

/** What a queued job waits for, finer than its status: the list's `state` filter. */
const QUEUED_STATES: Record<(typeof JOB_STATES)[number] & ("available" | "scheduled" | "retryable"), string> = {
  available: "queued · ready now",
  scheduled: "queued · scheduled for later",
  retryable: "queued · retrying after a back-off",
};

/**
 * The one status filter's choices: each status in the order of a job's life and, under queued,
 * what a queued job waits for (the API's `state`). A choice's value names its parameter
 * (`status:failed`, `state:retryable`), so one select sets one of the two and clears the other.
 */
export const STATUS_CHOICES: [string, string][] = STATUSES.flatMap((s): [string, string][] => [
  [`status:${s}`, s === "waiting" ? "waiting (on dependencies)" : s],
  ...(s === "queued"
    ? Object.entries(QUEUED_STATES).map(([state, label]): [string, string] => [`state:${state}`, label])
    : []),
]);

/** The status select's value for the address's status and state. */
export function statusChoice(values: Pick<FilterValues, "status" | "state">): string {
  if (values.status && values.state) return `status:${values.status}&state:${values.state}`;
  if (values.state) return `state:${values.state}`;
  return values.status ? `status:${values.status}` : "";
}

/** The address's status and state for a choice of the status select (blank: neither). */
export function fromStatusChoice(choice: string): Pick<FilterValues, "status" | "state"> {
  const [param, value] = choice.split(":", 2);
  if (param === "state") return { status: undefined, state: value };
  if (param === "status") return { status: value, state: undefined };
  return { status: undefined, state: undefined };
}

/** What an address's value the select does not list says (`available, retryable`). */
const asked = (choice: string) =>
  choice
    .split("&")
    .map((part) => part.split(":").slice(1).join(":").split(",").join(", "))
    .join(" · ");

/**
 * A labelled select of the filter bar: "Any" (unless `any` is null) and the choices; a value
 * the address gave that is not among them (several statuses, a type no longer registered) is
 * shown as it was asked for, so the select never claims a filter other than the one applied.
 */
export function FilterSelect({
  id,
  label,
  value,
  choices,
  onChange,
  invalid = false,
  any = "Any",
  describe = (v) => v,
}: {
  id: string;
  label: string;
  value: string;
  /** `[value, label]` pairs, or values that are their own labels. */
  choices: readonly (string | readonly [string, string])[];
  onChange: (value: string) => void;
  invalid?: boolean;
  /** The blank choice's label; null: none (the select always holds a value). */
  any?: string | null;
  /** How a value not among the choices is shown. */
  describe?: (value: string) => string;
}) {
  const pairs = choices.map((c) => (typeof c === "string" ? ([c, c] as const) : c));
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} aria-invalid={invalid || undefined} onChange={(e) => onChange(e.target.value)}>
        {any !== null && <option value="">{any}</option>}
        {value && !pairs.some(([v]) => v === value) && <option value={value}>{describe(value)}</option>}
        {pairs.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A labelled text box of the filter bar ("any" when blank), applied with the form. */
function TextField({
  id,
  label,
  value,
  onChange,
  invalid,
  list,
  inputMode,
  placeholder = "any",
  wide = false,
  children,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  invalid: boolean;
  list?: string;
  inputMode?: "numeric";
  placeholder?: string;
  /** As wide as its hint (the search box's width), rather than a short field's. */
  wide?: boolean;
  /** What goes with the box (its list of choices). */
  children?: ReactNode;
}) {
  return (
    <div className={wide ? "field wide" : "field"}>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        value={value}
        aria-invalid={invalid || undefined}
        placeholder={placeholder}
        list={list}
        inputMode={inputMode}
        onChange={(e) => onChange(e.target.value)}
      />
      {children}
    </div>
  );
}

/**
 * Filters that apply on change (selects) or on submit (text fields), so typing does not send a
 * request per keystroke. `fixed` hides filters the page pins (the failed-jobs page's status).
 * The route loads what the selects and the queue's list offer (`choices`).
 */
export function JobFilters({
  values,
  onChange,
  choices,
  fixed = [],
  invalid = [],
}: {
  values: FilterValues;
  onChange: (v: FilterValues) => void;
  choices: FilterChoices;
  fixed?: (keyof FilterValues)[];
  /** Filters the API refused (FilterProblem says why): marked invalid. */
  invalid?: string[];
}) {
  const bad = (k: keyof FilterValues) => (invalid.includes(k) ? { "aria-invalid": true as const } : {});
  // The text boxes hold what is typed until submitted; a new address (Back, a link) resets them.
  const applied = {
    queue: values.queue ?? "",
    priority: values.priority ?? "",
    search: values.search ?? "",
    concurrency_key: values.concurrency_key ?? "",
    payload: values.payload ?? "",
  };
  const [text, setText] = useState(applied);
  const [appliedKey, setAppliedKey] = useState(JSON.stringify(applied));
  if (appliedKey !== JSON.stringify(applied)) {
    setAppliedKey(JSON.stringify(applied));
    setText(applied);
  }
  const show = (k: keyof FilterValues) => !fixed.includes(k);
  // A text field's value as typed, marked invalid when the API refused it.
  const field = (k: keyof typeof text) => ({
    value: text[k],
    invalid: invalid.includes(k),
    onChange: (value: string) => setText({ ...text, [k]: value }),
  });
  const change = (patch: FilterValues) => onChange({ ...values, ...text, ...patch });
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
      <ToggleButton open={open} onToggle={setOpen} controls="job-filters" className="small filters-toggle">
        Filters{active ? " (applied)" : ""}
      </ToggleButton>
      <form
        className={`filters${open ? "" : " folded"}`}
        id="job-filters"
        onSubmit={submit}
        role="search"
        aria-label="Filter jobs"
      >
        {show("status") && show("state") && (
          <FilterSelect
            id="f-status"
            label="Status"
            value={statusChoice(values)}
            choices={STATUS_CHOICES}
            invalid={invalid.includes("status") || invalid.includes("state")}
            describe={asked}
            onChange={(choice) => change(fromStatusChoice(choice))}
          />
        )}
        {show("type") && (
          <FilterSelect
            id="f-type"
            label="Type"
            value={values.type ?? ""}
            choices={choices.types}
            invalid={invalid.includes("type")}
            onChange={(type) => change({ type })}
          />
        )}
        {show("queue") && (
          <TextField {...field("queue")} id="f-queue" label="Queue" list="f-queue-list">
            <datalist id="f-queue-list" data-testid="queue-choices">
              {choices.queues.map((q) => (
                <option key={q} value={q} />
              ))}
            </datalist>
          </TextField>
        )}
        {show("priority") && <TextField {...field("priority")} id="f-priority" label="Priority" inputMode="numeric" />}
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
        {show("payload") && (
          <TextField
            {...field("payload")}
            id="f-payload"
            label="Payload"
            placeholder="path:value, e.g. customer_id:42"
            wide
          />
        )}
        {show("concurrency_key") && (
          <TextField
            {...field("concurrency_key")}
            onChange={(value) => {
              setText({ ...text, concurrency_key: value });
              choices.suggestKeys?.(value);
            }}
            id="f-concurrency-key"
            label="Concurrency key"
            list="f-concurrency-key-list"
          >
            <datalist id="f-concurrency-key-list" data-testid="concurrency-key-choices">
              {(choices.concurrencyKeys ?? []).map((k) => (
                <option key={k} value={k} />
              ))}
            </datalist>
          </TextField>
        )}
        {show("ordering") && (
          <FilterSelect
            id="f-ordering"
            label="Order"
            value={values.ordering ?? "-id"}
            choices={ORDERINGS}
            any={null}
            invalid={invalid.includes("ordering")}
            onChange={(ordering) => change({ ordering })}
          />
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
  payload: "Payload",
  ordering: "Order",
  schedule: "Schedule",
  shard: "Shard",
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

/** A search the API cannot look for as text (under 3 characters, not an id): say so. */
export function shortSearch(search: string | undefined): boolean {
  const s = search?.trim() ?? "";
  return s.length > 0 && s.length < 3 && !/^\d+$/.test(s);
}
