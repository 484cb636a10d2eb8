import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { job, user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { FailedJobsPage } from "./FailedJobsPage";

const failed = (id: number) =>
  job(id, {
    type: "fail",
    status: "failed",
    attempts: 3,
    last_error: `boom ${id}`,
    finished_at: "2026-12-01T10:00:00Z",
    created_at: "2026-12-01T09:00:00Z",
    available_at: "2026-12-01T09:00:00Z",
  });

/** Three failed jobs on the page, sixty matching; retries and bulk actions answer as the API does. */
function fakeApi(posted: { path: string; body: unknown }[]) {
  return vi.fn(async (input: string, init?: RequestInit) => {
    const url = new URL(input, "http://test");
    if (init?.method === "POST") {
      const body = init.body ? JSON.parse(String(init.body)) : null;
      posted.push({ path: url.pathname, body });
      if (url.pathname.endsWith("/retry/")) {
        const id = Number(url.pathname.split("/").at(-3));
        return new Response(JSON.stringify({ ...failed(id), status: "queued" }), { status: 200 });
      }
      const done = body.ids ? body.ids.length : 60;
      return new Response(JSON.stringify({ done, refused_count: 0, refused: [], after: null, remaining: 0 }), {
        status: 200,
      });
    }
    if (url.pathname.endsWith("/job-types/")) return new Response("[]", { status: 200 });
    const results = [failed(1), failed(2), failed(3)];
    return new Response(JSON.stringify({ count: 60, next: null, previous: null, results }), { status: 200 });
  });
}

function renderFailed(path = "/failed") {
  const posted: { path: string; body: unknown }[] = [];
  vi.stubGlobal("fetch", fakeApi(posted));
  renderWithClient(<FailedJobsPage />, { user: user(), at: path, path: "/failed" });
  return posted;
}

const checkbox = (id: number) => screen.getByRole("checkbox", { name: `Select job ${id}` });

afterEach(() => vi.unstubAllGlobals());

describe("the failed-jobs page's selection", { timeout: 20_000 }, () => {
  it("has one selection bar, and a new filter starts a new selection", async () => {
    renderFailed();
    await userEvent.click(await screen.findByRole("checkbox", { name: "Select job 1" }));
    expect(document.querySelectorAll(".selection-bar")).toHaveLength(1);
    expect(screen.getByTestId("bulk-actions")).toHaveTextContent("1 selected.");
    await userEvent.type(screen.getByLabelText("Queue"), "emails{Enter}");
    await waitFor(() => expect(screen.getByTestId("bulk-actions")).toHaveTextContent("Select jobs to act on them"));
    expect(checkbox(1)).not.toBeChecked();
  });

  it("unticking one row of 'all matching' keeps the rest of the page picked", async () => {
    renderFailed();
    await userEvent.click(await screen.findByRole("checkbox", { name: "Select every job on this page" }));
    await userEvent.click(screen.getByRole("button", { name: "Select all 60 matching the filter" }));
    expect(screen.getByTestId("bulk-actions")).toHaveTextContent("All 60 jobs matching the filter are selected.");
    await userEvent.click(checkbox(2));
    expect(screen.getByTestId("bulk-actions")).toHaveTextContent("2 selected.");
    expect(checkbox(1)).toBeChecked();
    expect(checkbox(2)).not.toBeChecked();
  });

  it("retries every job matching any filter, not only by type", async () => {
    const posted = renderFailed("/failed?queue=emails&search=card");
    await userEvent.click(await screen.findByRole("checkbox", { name: "Select every job on this page" }));
    await userEvent.click(screen.getByRole("button", { name: "Select all 60 matching the filter" }));
    await userEvent.click(screen.getByRole("button", { name: "Retry 60…" }));
    await userEvent.click(within(screen.getByTestId("confirm-bulk")).getByRole("button", { name: /^Yes, retry/ }));
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0].body).toEqual({
      action: "retry",
      filter: { status: "failed", queue: "emails", search: "card" },
    });
  });

  it("shows one notice: the latest action's outcome replaces the earlier one", async () => {
    renderFailed();
    const row = (await screen.findAllByRole("button", { name: "Retry job 1" }))[0];
    await userEvent.click(row);
    expect(await screen.findByTestId("action-outcome")).toHaveTextContent("Retried job #1: queued again.");
    await userEvent.click(checkbox(2));
    await userEvent.click(checkbox(3));
    await userEvent.click(screen.getByRole("button", { name: "Delete 2…" }));
    await userEvent.click(within(screen.getByTestId("confirm-bulk")).getByRole("button", { name: /^Yes, delete/ }));
    await waitFor(() => expect(screen.getByTestId("action-outcome")).toHaveTextContent("Deleted 2 jobs."));
    expect(screen.getAllByRole("status").filter((n) => n.classList.contains("notice"))).toHaveLength(1);
    expect(screen.queryByTestId("bulk-outcome")).toBeNull();
  });
});
