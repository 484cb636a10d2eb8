import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Batch, User } from "../api/types";
import { batchPercent } from "../views/BatchView";
import { BatchPage } from "./BatchPage";
import { fakeApi, reply } from "../test/fakeApi";
import { user } from "../test/factories";
import { renderWithClient } from "../test/render";

const batch = (extra: Partial<Batch> = {}): Batch => ({
  id: 7,
  total: 10,
  succeeded: 5,
  failed: 1,
  cancelled: 0,
  done: 6,
  running: 2,
  pending: 2,
  finished: false,
  created_at: "2026-12-05T03:00:00Z",
  finished_at: null,
  cancelled_at: null,
  callbacks: ["on_complete", "on_failure"],
  callback_jobs: {},
  pass_results: false,
  ...extra,
});

function renderBatch(who: User, state: { batch: Batch | null }) {
  const posts: string[] = [];
  fakeApi(({ path, method }) => {
    if (path.endsWith("/cancel/") && method === "POST") {
      posts.push(path);
      state.batch = { ...state.batch!, pending: 0, cancelled: 2, done: 8, cancelled_at: "2026-12-05T03:01:00Z" };
    }
    return state.batch ?? reply(404, { code: "batch_not_found", detail: "no batch 7" });
  });
  renderWithClient(<BatchPage />, { user: who, at: "/batches/7", path: "/batches/:id" });
  return posts;
}

afterEach(() => vi.unstubAllGlobals());

describe("the batch page", { timeout: 15_000 }, () => {
  it("shows the members by outcome, the finished share and the callbacks still to come", async () => {
    renderBatch(user(), { batch: batch() });
    expect(await screen.findByTestId("batch-summary")).toHaveTextContent("6 of 10 finished");
    expect(screen.getByTestId("batch-failed")).toHaveTextContent("1");
    expect(screen.getByTestId("batch-pending")).toHaveTextContent("2");
    expect(screen.getByRole("progressbar", { name: "Members finished" })).toHaveAttribute("aria-valuenow", "60");
    expect(screen.getByText(/on_failure/)).toHaveTextContent("when the batch finishes");
  });

  it("links each callback to its job once the batch finished", async () => {
    const done = batch({ finished: true, done: 10, succeeded: 9, running: 0, pending: 0 });
    renderBatch(user(), { batch: { ...done, callback_jobs: { on_complete: 41, on_failure: 42 } } });
    expect(await screen.findByRole("link", { name: "job #42" })).toHaveAttribute("href", "/jobs/42");
    expect(screen.queryByRole("button", { name: /Cancel/ })).not.toBeInTheDocument();
  });

  it("cancels the pending members with the cancel permission", async () => {
    const state = { batch: batch() };
    const posts = renderBatch(user(), state);
    await userEvent.click(await screen.findByRole("button", { name: "Cancel the pending members" }));
    expect(await screen.findByTestId("batch-summary")).toHaveTextContent("(cancelled)");
    expect(posts).toEqual(["/api/v1/batches/7/cancel/"]);
  });

  it("hides the cancel from a user who may not cancel", async () => {
    renderBatch(user({ can: { cancel: false } }), { batch: batch() });
    await screen.findByTestId("batch-summary");
    expect(screen.queryByRole("button", { name: /Cancel/ })).not.toBeInTheDocument();
  });

  it("says so for a batch that does not exist", async () => {
    renderBatch(user(), { batch: null });
    expect(await screen.findByText("No batch #7")).toBeInTheDocument();
  });
});

describe("batchPercent", () => {
  it("is the finished share, rounded down, and 100 for an empty batch", () => {
    expect(batchPercent({ done: 2, total: 3 })).toBe(66);
    expect(batchPercent({ done: 0, total: 0 })).toBe(100);
  });
});
