import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { JobsPage } from "../pages/JobsPage";
import { job, user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { summarizeAction, toActionFilter } from "./BulkActions";

/** The list (two jobs on the page, 1,234 matching) and the actions endpoint, recording bodies. */
const SHARDS = [
  { alias: "default", number: 0, up: true, error: null },
  { alias: "shard_b", number: 1, up: true, error: null },
  { alias: "shard_c", number: 2, up: false, error: "connection refused" },
];

/** With `sharded`: the merged list's `shards` (shard_c down), and the action's. */
function fakeApi(posted: unknown[], { emptyAfterAction = false, sharded = false } = {}) {
  return vi.fn(async (input: string, init?: RequestInit) => {
    const url = new URL(input, "http://test");
    if (url.pathname.endsWith("/auth/csrf/")) return new Response('{"csrf_token":"t"}', { status: 200 });
    if (url.pathname.endsWith("/jobs/actions/")) {
      posted.push(JSON.parse(String(init?.body)));
      return new Response(
        JSON.stringify({
          done: 1233,
          refused_count: 1,
          refused: [{ id: 2, reason: "invalid_transition", status: "running", detail: "cannot delete job 2" }],
          after: null,
          remaining: 0,
          ...(sharded ? { shards: SHARDS } : {}),
        }),
        { status: 200 },
      );
    }
    if (url.pathname.endsWith("/jobs/")) {
      if (emptyAfterAction && posted.length > 0) {
        return new Response(JSON.stringify({ count: 0, next: null, previous: null, results: [] }), { status: 200 });
      }
      return new Response(
        JSON.stringify({
          count: 1234,
          next: null,
          previous: null,
          results: [job(1, { status: "failed", attempts: 1 }), job(2, { status: "running", attempts: 1 })],
          ...(sharded ? { shards: SHARDS.map((s) => ({ ...s, count: s.up ? 617 : null })) } : {}),
        }),
        { status: 200 },
      );
    }
    return new Response("[]", { status: 200 });
  });
}

function renderJobs(
  path = "/jobs?status=failed,running&type=noop",
  options: { emptyAfterAction?: boolean; sharded?: boolean } = {},
) {
  const posted: unknown[] = [];
  vi.stubGlobal("fetch", fakeApi(posted, options));
  renderWithClient(<JobsPage />, { user: user(), at: path, path: "/jobs" });
  return posted;
}

afterEach(() => vi.unstubAllGlobals());

describe("bulk actions in the jobs list", () => {
  it("acts on the rows picked, after a confirmation naming the count", async () => {
    const posted = renderJobs();
    await userEvent.click(await screen.findByLabelText("Select job 1"));
    const bar = screen.getByTestId("bulk-actions");
    expect(bar).toHaveTextContent("1 selected.");
    await userEvent.click(within(bar).getByRole("button", { name: "Retry 1…" }));
    const confirm = screen.getByTestId("confirm-bulk");
    expect(confirm).toHaveTextContent("Retry 1 job? Only failed and cancelled jobs are retried.");
    expect(posted).toEqual([]); // nothing before the answer
    await userEvent.click(within(confirm).getByRole("button", { name: "Yes, retry 1 job" }));
    await waitFor(() => expect(posted).toEqual([{ action: "retry", ids: [1] }]));
  });

  it("selects every job matching the filter, sends the filter, and shows done and refused", async () => {
    const posted = renderJobs();
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    await userEvent.click(screen.getByRole("button", { name: "Select all 1,234 matching the filter" }));
    expect(screen.getByTestId("bulk-actions")).toHaveTextContent("All 1,234 jobs matching the filter are selected.");
    await userEvent.click(screen.getByRole("button", { name: "Delete 1,234…" }));
    expect(screen.getByTestId("confirm-bulk")).toHaveTextContent("Delete 1,234 jobs?");
    await userEvent.click(screen.getByRole("button", { name: "Yes, delete 1,234 jobs" }));
    await waitFor(() =>
      expect(posted).toEqual([{ action: "delete", filter: { status: "failed,running", type: "noop" } }]),
    );
    expect(await screen.findByTestId("bulk-outcome")).toHaveTextContent("Deleted 1,233 jobs; 1 refused: #2 (running).");
    expect(screen.getByTestId("bulk-actions")).toHaveTextContent("Select jobs to act on them together.");
  });

  it("keeps saying what was done once the list it emptied has refetched", async () => {
    const posted = renderJobs("/jobs?status=failed,running&type=noop", { emptyAfterAction: true });
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    await userEvent.click(screen.getByRole("button", { name: "Delete 2…" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, delete 2 jobs" }));
    await waitFor(() => expect(posted).toHaveLength(1));
    // The refetched list is empty: the bar goes, the outcome stays.
    await waitFor(() => expect(screen.queryByTestId("bulk-actions")).toBeNull());
    expect(screen.getByTestId("bulk-outcome")).toHaveTextContent("Deleted 1,233 jobs; 1 refused: #2 (running).");
  });

  it("sends all: true, not an empty filter, when the list is unfiltered", async () => {
    const posted = renderJobs("/jobs");
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    await userEvent.click(screen.getByRole("button", { name: "Select all 1,234 matching the filter" }));
    await userEvent.click(screen.getByRole("button", { name: "Cancel 1,234…" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, cancel 1,234 jobs" }));
    await waitFor(() => expect(posted).toEqual([{ action: "cancel", all: true }]));
  });

  it("offers only picked rows, not every matching job, when the list is filtered by concurrency key", async () => {
    const posted = renderJobs("/jobs?concurrency_key=customer:42");
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    const bar = screen.getByTestId("bulk-actions");
    expect(within(bar).queryByRole("button", { name: /^Select all/ })).toBeNull();
    expect(within(bar).getByTestId("no-select-all")).toHaveTextContent("not offered with a concurrency key filter");
    await userEvent.click(within(bar).getByRole("button", { name: "Cancel 2…" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, cancel 2 jobs" }));
    await waitFor(() => expect(posted).toEqual([{ action: "cancel", ids: [1, 2] }]));
  });

  it("acts on every matching job of one shard's list, its filter naming the shard", async () => {
    const posted = renderJobs("/jobs?shard=shard_b&status=failed", { sharded: true });
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    await userEvent.click(screen.getByRole("button", { name: "Select all 1,234 matching the filter" }));
    await userEvent.click(screen.getByRole("button", { name: "Cancel 1,234…" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, cancel 1,234 jobs" }));
    await waitFor(() => expect(posted).toEqual([{ action: "cancel", filter: { status: "failed", shard: "shard_b" } }]));
  });

  it("acts on every matching job of every shard merged, and names a shard that did not answer", async () => {
    const posted = renderJobs("/jobs?status=failed", { sharded: true });
    await userEvent.click(await screen.findByLabelText("Select every job on this page"));
    await userEvent.click(screen.getByRole("button", { name: "Select all 1,234 matching the filter" }));
    await userEvent.click(screen.getByRole("button", { name: "Retry 1,234…" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, retry 1,234 jobs" }));
    await waitFor(() => expect(posted).toEqual([{ action: "retry", filter: { status: "failed" } }]));
    expect(await screen.findByTestId("bulk-outcome")).toHaveTextContent(
      "Retried 1,233 jobs; 1 refused: #2 (running). Shard shard_c did not answer: its jobs were left as they were; try again once it is back.",
    );
  });

  it("Escape keeps the jobs", async () => {
    const posted = renderJobs();
    await userEvent.click(await screen.findByLabelText("Select job 2"));
    await userEvent.click(screen.getByRole("button", { name: "Cancel 1…" }));
    await userEvent.keyboard("{Escape}");
    expect(screen.queryByTestId("confirm-bulk")).toBeNull();
    expect(posted).toEqual([]);
  });
});

describe("summarizeAction and toActionFilter", () => {
  it("says nothing matched, all done, or lists the first refusals and counts the rest", () => {
    expect(summarizeAction("cancel", { done: 0, refused: [], refused_count: 0, after: null, remaining: 0 }).text).toBe(
      "No job matched: nothing was done.",
    );
    const refused = Array.from({ length: 7 }, (_, i) => ({
      id: i + 1,
      reason: i === 0 ? ("not_found" as const) : ("invalid_transition" as const),
      status: i === 0 ? null : "queued",
      detail: "",
    }));
    const summary = summarizeAction("retry", { done: 0, refused, refused_count: 250, after: null, remaining: 0 });
    expect(summary.tone).toBe("error");
    expect(summary.text).toBe(
      "Retried 0 jobs; 250 refused: #1 (gone), #2 (queued), #3 (queued), #4 (queued), #5 (queued) and 245 more.",
    );
  });

  it("drops blank filters and sends a whole-number priority as a number", () => {
    expect(toActionFilter({ status: "failed", type: "", priority: "5", search: "  " })).toEqual({
      status: "failed",
      priority: 5,
    });
    expect(toActionFilter({ priority: "abc" })).toEqual({ priority: "abc" });
  });

  it("passes the list's states on as the actions endpoint takes them, comma-separated", () => {
    expect(toActionFilter({ state: "available,retryable", queue: "emails" })).toEqual({
      state: "available,retryable",
      queue: "emails",
    });
  });
});
