import { useRef, useState } from "react";
import type { UseMutationResult } from "@tanstack/react-query";
import type { BulkAction, Job, JobActionFilter, JobActionResult, JobActions } from "../api/types";
import { InlineConfirm } from "./Confirm";
import type { FilterValues } from "./JobFilters";
import type { Selection } from "../lib/useSelection";
import { FILTER_KEYS } from "../lib/useFilterParams";
import { Notice } from "./Notice";
import type { Notice as NoticeText } from "../lib/jobView";

const VERBS: Record<BulkAction, { label: string; done: string; tone: "primary" | "danger"; note: string }> = {
  cancel: {
    label: "Cancel",
    done: "Cancelled (or asked to stop)",
    tone: "danger",
    note: "Only queued and running jobs are cancelled.",
  },
  retry: { label: "Retry", done: "Retried", tone: "primary", note: "Only failed and cancelled jobs are retried." },
  rerun: {
    label: "Re-run",
    done: "Re-ran (as new copies)",
    tone: "primary",
    note: "Only succeeded jobs are re-run, each as a new job.",
  },
  run_now: {
    label: "Run now",
    done: "Made runnable now",
    tone: "primary",
    note: "Only queued and waiting jobs are changed; a delayed one runs at once, a due one is left as it is.",
  },
  delete: {
    label: "Delete",
    done: "Deleted",
    tone: "danger",
    note: "Only finished jobs are deleted, with their events; this cannot be undone.",
  },
};

const plural = (n: number) => `${n.toLocaleString()} job${n === 1 ? "" : "s"}`;

/** The list's filters the actions endpoint takes: all but the order, and the concurrency key
 * (a list filtered by it offers no action, see refusedWith); `shard`: one shard's list
 * (`?shard=`) acts on that database's jobs alone. */
const ACTION_FILTERS = FILTER_KEYS.filter((key) => key !== "ordering" && key !== "concurrency_key");

/** The list's filter form as the actions endpoint's `filter` object (blank ones left out). */
export function toActionFilter(values: FilterValues): JobActionFilter {
  const out: Record<string, string | number> = {};
  for (const key of ACTION_FILTERS) {
    const value = values[key]?.toString().trim();
    if (!value) continue;
    out[key] = key === "priority" && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return out as JobActionFilter;
}

/**
 * The body for "every job matching the filter": the filter, or `all: true` when the list is
 * unfiltered (the API refuses an empty filter, so that no request means every job by accident).
 */
export function matchingBody(action: BulkAction, filter: JobActionFilter) {
  return Object.keys(filter).length === 0 ? { action, all: true } : { action, filter };
}

/** "Deleted 3 jobs." / "Deleted 2 jobs; 1 refused: #12 (running)."; with a shard that did not
 * answer, " Shard shard_c did not answer: its jobs were left as they were." after it. */
export function summarizeAction(
  action: BulkAction,
  result: JobActionResult,
): { tone: "success" | "warn" | "error"; text: string } {
  const outcome = summarizeDone(action, result);
  const down = (result.shards ?? []).filter((s) => !s.up).map((s) => s.alias);
  if (down.length === 0) return outcome;
  const which = down.length === 1 ? `Shard ${down[0]} did not` : `Shards ${down.join(", ")} did not`;
  return {
    tone: outcome.tone === "success" ? "warn" : outcome.tone,
    text: `${outcome.text} ${which} answer: ${down.length === 1 ? "its" : "their"} jobs were left as they were; try again once it is back.`,
  };
}

function summarizeDone(
  action: BulkAction,
  result: JobActionResult,
): { tone: "success" | "warn" | "error"; text: string } {
  const done = `${VERBS[action].done} ${plural(result.done)}`;
  if (result.refused_count === 0) {
    return result.done === 0
      ? { tone: "warn", text: "No job matched: nothing was done." }
      : { tone: "success", text: `${done}.` };
  }
  const shown = result.refused
    .slice(0, 5)
    .map((r) => `#${r.id} (${r.reason === "not_found" ? "gone" : r.status})`)
    .join(", ");
  const more = result.refused_count - Math.min(5, result.refused.length);
  return {
    tone: result.done === 0 ? "error" : "warn",
    text: `${done}; ${result.refused_count.toLocaleString()} refused: ${shown}${more > 0 ? ` and ${more.toLocaleString()} more` : ""}.`,
  };
}

/**
 * The action bar over a job table: the selection (rows picked on this page, or every job
 * matching the filter), cancel / retry / delete each after a confirmation naming the count,
 * and the outcome (done, refused and why): shown here, or handed to `onOutcome` when the page
 * shows its own actions' outcomes in one place. The route runs the actions (`run`).
 */
export type BulkRun = UseMutationResult<JobActionResult, Error, JobActions>;

export function BulkActions({
  run,
  rows,
  selection,
  matching,
  values,
  can,
  onOutcome,
}: {
  run: BulkRun;
  rows: Job[];
  selection: Pick<Selection, "selected" | "setSelected" | "allMatching" | "setAllMatching">;
  matching: number;
  /** The list's filters as sent: "every job matching" sends them to the actions endpoint. */
  values: FilterValues;
  can: { cancel: boolean; retry: boolean; delete: boolean };
  onOutcome?: (notice: NoticeText) => void;
}) {
  const { selected, setSelected: onSelect, allMatching, setAllMatching: onAllMatching } = selection;
  const filter = toActionFilter(values);
  // A concurrency key is a filter the actions endpoint cannot say: "every job matching" would
  // reach jobs the list does not show, so only picked rows are offered. (One shard's list
  // says its `shard` in the filter, and the merged list's filter reaches every shard.)
  const refusedWith = values.concurrency_key ? "a concurrency key filter" : null;
  const matchingAllowed = refusedWith === null;
  const [asking, setAsking] = useState<BulkAction | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const count = allMatching ? matching : selected.size;
  const pageSelected = rows.length > 0 && rows.every((j) => selected.has(j.id));
  const actions = (["cancel", "retry", "delete"] as const).filter((a) => can[a]);
  if (actions.length === 0) return null;
  const outcome = onOutcome
    ? null
    : run.isSuccess
      ? summarizeAction(run.variables.action, run.data)
      : run.isError
        ? { tone: "error" as const, text: `Could not ${run.variables?.action}: ${run.error.message}` }
        : null;
  const confirm = (action: BulkAction) => {
    const body = allMatching ? matchingBody(action, filter) : { action, ids: [...selected] };
    run.mutate(body, {
      onSuccess: (result) => {
        onSelect(new Set());
        onAllMatching(false);
        onOutcome?.(summarizeAction(action, result));
      },
      onError: (error) => onOutcome?.({ tone: "error", text: `Could not ${action}: ${error.message}` }),
      onSettled: () => setAsking(null),
    });
  };
  // The outcome outlives the rows it acted on: after "delete all" the list is empty, and the
  // bar goes, but what was done (and refused) stays said.
  if (rows.length === 0 && !allMatching) {
    return <Notice notice={outcome} testId="bulk-outcome" />;
  }
  return (
    <>
      <Notice notice={outcome} testId="bulk-outcome" />
      <div className="selection-bar" data-testid="bulk-actions">
        <span>
          {allMatching
            ? `All ${plural(matching)} matching the filter are selected.`
            : selected.size
              ? `${selected.size.toLocaleString()} selected.`
              : "Select jobs to act on them together."}
        </span>
        {!allMatching && pageSelected && matching > rows.length && !matchingAllowed && (
          <span className="muted" data-testid="no-select-all">
            Acting on every matching job is not offered with {refusedWith}: pick rows.
          </span>
        )}
        {!allMatching && pageSelected && matching > rows.length && matchingAllowed && (
          <button type="button" className="small" onClick={() => onAllMatching(true)}>
            Select all {matching.toLocaleString()} matching the filter
          </button>
        )}
        {(allMatching || selected.size > 0) && (
          <button
            type="button"
            className="small"
            onClick={() => {
              onAllMatching(false);
              onSelect(new Set());
            }}
          >
            Clear selection
          </button>
        )}
        <span style={{ marginLeft: "auto" }} className="actions">
          {asking ? (
            <InlineConfirm
              testId="confirm-bulk"
              tone={VERBS[asking].tone}
              question={`${VERBS[asking].label} ${plural(count)}? ${VERBS[asking].note}`}
              confirmLabel={`Yes, ${VERBS[asking].label.toLowerCase()} ${plural(count)}`}
              keepLabel="Keep them"
              busy={run.isPending}
              onConfirm={() => confirm(asking)}
              onKeep={() => setAsking(null)}
              returnFocus={opener}
            />
          ) : (
            actions.map((action) => (
              <button
                key={action}
                type="button"
                className={`small ${action === "retry" ? "primary" : "danger"}`}
                disabled={count === 0 || run.isPending}
                onClick={(e) => {
                  opener.current = e.currentTarget;
                  setAsking(action);
                }}
              >
                {VERBS[action].label}
                {count ? ` ${count.toLocaleString()}` : ""}…
              </button>
            ))
          )}
        </span>
      </div>
    </>
  );
}
